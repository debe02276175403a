//! The OpenAPI document describes the server: Schemathesis (PyPI `schemathesis`,
//! pinned in `.ci/run`) runs every check (`--checks all`: no server error, statuses,
//! content types, headers and bodies as documented, schema-valid requests accepted,
//! schema-invalid ones refused, missing required headers refused, undocumented
//! methods refused, …) in every phase, the stateful one included, against a real
//! server on a loopback port 0 over 2,000 pages. Any finding fails the test.
//!
//! The stateful phase follows the document's links from `POST /api/pages` to update,
//! archive and claim with the PIN the page was published with, so those routes are
//! reached past their PIN check (the test checks that pages were archived and
//! claimed). The publish budget and the wrong-PIN budget are raised for this server:
//! generated requests are many, and most PINs they send are wrong.
//!
//! The run is bounded (`--max-examples`, one worker) and seeded (`SCHEMATHESIS_SEED`
//! overrides the seed, `SCHEMATHESIS_MAX_EXAMPLES` the bound), so CI repeats it.

#[path = "common/mod.rs"]
mod helpers;

use std::path::PathBuf;
use std::process::Command;

use agent_pages::budget::Budget;
use helpers::{spawn_app_with, T0};

/// Where Schemathesis is: `SCHEMATHESIS`, then `schemathesis` on `PATH`, then the
/// venv `.ci/run` installs it in.
fn schemathesis() -> PathBuf {
    std::env::var_os("SCHEMATHESIS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|dir| dir.join("schemathesis"))
                .find(|p| p.is_file())
        })
        .or_else(|| {
            let home = PathBuf::from(std::env::var_os("HOME")?);
            Some(home.join(".cache/agent-pages-ci/schemathesis/bin/schemathesis"))
                .filter(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "schemathesis is not installed: Debian has no package for it; install it \
                 from PyPI (`pip install schemathesis==4.32.5`; .ci/run does this in a venv \
                 under ~/.cache/agent-pages-ci) or point SCHEMATHESIS at the program"
            )
        })
}

/// The PIN of one imported page in 50.
const IMPORTED_PIN: &str = "imported-pin";
/// The PIN Schemathesis draws for half the pages it publishes and half the PINs it
/// sends, beside the ones it makes up.
const KNOWN_PIN: &str = "schemathesis-pin";

/// Schemathesis' configuration: nine `pin` fields in ten it sends and half the
/// `X-Page-Pin` headers come from the known PINs, so the stateful phase, which
/// follows the links from a published page to update, archive and claim with the
/// PIN it was published with (and from the list to pages imported with a PIN), gets
/// past the PIN check; the rest are made up, so the wrong-PIN paths run too. (At
/// one in two, a stateful publish with a made-up PIN errored once at the default
/// seed, the error unreported, and nothing was claimed.)
/// Nine `If-Match` headers in ten are `*` (write whatever the version), so stateful
/// archives and claims get past the precondition; the rest are made up.
/// A schema-valid request may also be 412: any `If-Match` but the page's current tag
/// is a stale precondition (issue 32 §2), which no schema can tell; a schema-invalid
/// one may also be 413, the body cap's refusal (`POST /api/pages` lists it). A
/// schema-valid publish may also be 422: Schemathesis sends the same
/// `Idempotency-Key` (its short draws repeat) with other bodies, which is
/// `/problems/idempotency-key-reused` (issue 32 §3), and no route but that one
/// answers 422.
fn config() -> String {
    format!(
        "[dictionaries.pins]\nvalues = [\"{KNOWN_PIN}\", \"{IMPORTED_PIN}\"]\n\n\
         [dictionaries.any_version]\nvalues = [\"*\"]\n\n\
         [parameters]\n\
         \"header.If-Match\" = {{ dictionary = \"any_version\", probability = 0.9 }}\n\
         \"body.pin\" = {{ dictionary = \"pins\", probability = 0.9 }}\n\
         \"header.X-Page-Pin\" = {{ dictionary = \"pins\", probability = 0.5 }}\n\n\
         [checks.positive_data_acceptance]\n\
         expected-statuses = [\"2xx\", \"3xx\", \"401\", \"403\", \"404\", \"409\", \"412\", \"422\", \"429\", \"5xx\"]\n\n\
         [checks.negative_data_rejection]\n\
         expected-statuses = [\"400\", \"401\", \"403\", \"404\", \"405\", \"406\", \"409\", \"413\", \"415\", \"422\", \"428\", \"429\", \"5xx\"]\n"
    )
}

/// 2,000 pages of varied titles and bodies, some with a PIN.
fn corpus() -> String {
    let words = [
        "kubernetes",
        "client",
        "server",
        "proxy",
        "database",
        "compiler",
        "editor",
        "library",
        "tool",
        "daemon",
        "Straße",
        "café",
        "日本語",
        "données",
        "graph",
        "queue",
    ];
    let mut out = String::new();
    for i in 0..2000usize {
        let title = format!(
            "{} {} {} {i}",
            words[i % words.len()],
            words[(i * 7 + 3) % words.len()],
            words[(i * 13 + 5) % words.len()]
        );
        let mut page = serde_json::json!({"title": title, "body": "text ".repeat(i % 40)});
        if i % 50 == 0 {
            page["pin"] = IMPORTED_PIN.into();
        }
        out.push_str(&page.to_string());
        out.push('\n');
    }
    out
}

#[actix_web::test]
async fn schemathesis_finds_nothing_with_every_check_in_every_phase() {
    let program = schemathesis();
    let app = spawn_app_with(|s| {
        s.publish_budget = Budget::publish(1_000_000, 100_000_000);
        s.pin_failure_budget = Budget::pin_failures(1_000_000);
    })
    .await;
    {
        let mut conn = app.conn();
        let report =
            agent_pages::import::import(&mut conn, corpus().as_bytes(), None, T0 - 50).unwrap();
        let pages: i64 = conn
            .query_row("SELECT COUNT(*) FROM pages", [], |r| r.get(0))
            .unwrap();
        assert!(pages >= 2000, "{report:?}");
    }

    let seed = std::env::var("SCHEMATHESIS_SEED").unwrap_or_else(|_| "20261130".into());
    let max_examples = std::env::var("SCHEMATHESIS_MAX_EXAMPLES").unwrap_or_else(|_| "40".into());
    let work = tempfile::tempdir().unwrap();
    let config_file = work.path().join("schemathesis.toml");
    std::fs::write(&config_file, config()).unwrap();
    let mut command = Command::new(&program);
    command
        .current_dir(work.path())
        .env("NO_COLOR", "1")
        .arg("--config-file")
        .arg(&config_file)
        .args(["run", &format!("{}/api/openapi.json", app.address)])
        .args(["--checks", "all"])
        .args(["--phases", "examples,coverage,fuzzing,stateful"])
        .args(["--max-examples", &max_examples])
        .args(["--seed", &seed])
        .args(["--workers", "1"])
        .args(["--generation-database", "none"])
        .args(["--request-timeout", "20"])
        .args(["--report", "junit,har", "--report-dir"])
        .arg(work.path().join("report"))
        .arg("--no-color");
    let shown = format!("{command:?}");
    // Off the runtime, which also serves the app.
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("running {shown}: {e}"));
    let report = format!(
        "{shown}\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let reports: Vec<PathBuf> = std::fs::read_dir(work.path().join("report"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|f| f.path())
        .collect();
    let junit = reports
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect::<String>();
    // Every request and answer of the run, kept past the temporary directory: when a
    // phase or the stateful count below fails, diffing it against a run of the commit
    // before names the first answer that changed.
    let har = std::env::temp_dir().join("agent-pages-schemathesis.har.json");
    if let Some(found) = reports
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "json"))
    {
        std::fs::copy(found, &har).unwrap();
    }
    let report = format!(
        "{report}\nevery request and answer (HAR): {}",
        har.display()
    );
    eprintln!("{report}\n{junit}");
    assert!(
        output.status.success(),
        "schemathesis found problems:\n{report}"
    );
    // An errored case (a request Schemathesis could not even build or send) leaves
    // the exit status 0 and the summary's phase a ✅: only the phase line and the
    // count say so.
    assert!(
        !report.contains("🚫") && !report.contains(" errored"),
        "schemathesis errored:\n{report}"
    );
    for phase in ["Examples", "Coverage", "Fuzzing", "Stateful"] {
        assert!(
            report.contains(&format!("✅ {phase}")),
            "phase {phase} did not pass:\n{report}"
        );
    }

    // The stateful phase got past the PIN check: it archived or claimed pages with
    // the PIN a page was published with. Which of the two its few scenarios reach
    // depends on the seed (seed 20261130: 0 archived, 1 claimed; seed 7: 7 archived,
    // 0 claimed), so the counts are shown and their sum is required.
    let (archived, claimed): (i64, i64) = app
        .conn()
        .query_row(
            "SELECT COALESCE(SUM(lifecycle = 'archived'), 0), COALESCE(SUM(claimed_at IS NOT NULL), 0) FROM pages",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    eprintln!("schemathesis archived {archived} pages and claimed {claimed}");
    assert!(
        archived + claimed > 0,
        "archived {archived}, claimed {claimed}: the PIN routes were never passed\n{report}"
    );
}
