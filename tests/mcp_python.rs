//! `/mcp` and `agent-pages mcp --url` driven by the official Python MCP SDK client
//! (PyPI `mcp`, pinned in `.ci/run`, which installs it in a venv under
//! `~/.cache/agent-pages-ci/mcp`): `tests/mcp_client.py` connects over Streamable
//! HTTP (the SDK's default negotiation, which offers the 2026-07-28 revision first,
//! then the `initialize` handshake) and through the stdio bridge (the SDK launches
//! the real binary), lists the tools, publishes with a PIN, finds the page with
//! `search_pages`, updates, reads (whole and in parts), archives it, every result
//! checked by the SDK against its tool's `outputSchema`; then (both transports) it
//! lists, reads and restores versions, rotates the PIN and reads a claimed page's
//! history with and without it; over HTTP it also uses the read-only face
//! `/mcp/readonly`. This test checks what it printed and what the server stored.
//!
//! Without the venv (a developer machine that never ran `.ci/run`) the test says so
//! and passes; under CI (`CI` set) a missing venv fails it.

#[path = "common/mod.rs"]
mod helpers;

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

use helpers::spawn_app;

/// The venv's Python with `mcp` installed: `AGENT_PAGES_MCP_PYTHON`, else
/// `~/.cache/agent-pages-ci/mcp/bin/python`.
fn python() -> Option<PathBuf> {
    std::env::var_os("AGENT_PAGES_MCP_PYTHON")
        .map(PathBuf::from)
        .or_else(|| {
            let home = PathBuf::from(std::env::var_os("HOME")?);
            Some(home.join(".cache/agent-pages-ci/mcp/bin/python"))
        })
        .filter(|p| p.is_file())
}

/// Runs the client script with `args`; its JSON lines, by label.
fn run_client(python: &PathBuf, args: &[&str]) -> Vec<Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_client.py");
    let out = Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .expect("running the Python MCP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the Python MCP client failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What every session must have seen.
fn check_session(app: &helpers::TestApp, session: &Value, version: &str) {
    let label = &session["label"];
    assert_eq!(session["protocol_version"], version, "{label}");
    assert_eq!(session["server"], "agent-pages", "{label}");
    assert_eq!(session["tools"].as_array().unwrap().len(), 11, "{label}");
    assert_eq!(
        session["publish_pin_pattern"],
        Value::String(agent_pages::operations::types::PATTERNS.pin.clone()),
        "{label}"
    );
    let slug = session["slug"].as_str().unwrap();
    assert!(
        session["found"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == slug),
        "{label}: search_pages found it"
    );
    assert_eq!(session["updated_version"], 2, "{label}");
    assert_eq!(session["read_body"], "Second words.", "{label}");
    assert_eq!(
        session["parts"],
        serde_json::json!(["Secon", "d wor", "ds."]),
        "{label}: read_page in parts"
    );
    assert_eq!(
        session["output_schemas"], session["tools"],
        "{label}: every tool has an outputSchema"
    );
    assert_eq!(
        session["wrong_pin"]["type"], "/problems/wrong-pin",
        "{label}"
    );
    assert_eq!(session["wrong_pin"]["status"], 403, "{label}");
    // A stale expected_version changes nothing (issue 32 §2): the body stayed.
    assert_eq!(
        session["stale"]["type"], "/problems/version-mismatch",
        "{label}"
    );
    assert_eq!(session["stale"]["current_version"], 2, "{label}");
    assert_eq!(session["archived"]["lifecycle"], "archived", "{label}");
    assert_eq!(session["archived"]["version"], 3, "{label}");
    assert_eq!(session["gone"]["type"], "/problems/not-found", "{label}");
    assert!(
        !session["listed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == slug),
        "{label}: an archived page leaves the list"
    );
    let (version, lifecycle): (i64, String) = app
        .conn()
        .query_row(
            "SELECT current_version, lifecycle FROM pages WHERE slug = ?1",
            [slug],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((version, lifecycle.as_str()), (3, "archived"), "{label}");
}

/// What every history session must have seen (issue 32 §1, §5).
fn check_history(app: &helpers::TestApp, session: &Value) {
    let label = &session["label"];
    let hints = |tool: &str| {
        let h = &session["hints"][tool];
        [
            h["readOnlyHint"].clone(),
            h["destructiveHint"].clone(),
            h["idempotentHint"].clone(),
            h["openWorldHint"].clone(),
        ]
    };
    let (t, f, none) = (json!(true), json!(false), Value::Null);
    for read in ["list_versions", "read_version"] {
        assert_eq!(
            hints(read),
            [t.clone(), f.clone(), none.clone(), t.clone()],
            "{label}: {read}"
        );
    }
    for write in ["update_page", "restore_page"] {
        assert_eq!(
            hints(write),
            [f.clone(), f.clone(), f.clone(), f.clone()],
            "{label}: {write}"
        );
    }
    assert_eq!(
        hints("rotate_pin"),
        [f.clone(), t.clone(), f.clone(), f.clone()],
        "{label}"
    );
    assert_eq!(
        session["listed"],
        json!([[2, "update"], [1, "publish"]]),
        "{label}"
    );
    assert_eq!(
        (&session["first"][1], &session["first"][2]),
        (&json!("First words."), &json!("publish")),
        "{label}"
    );
    let slug = session["slug"].as_str().unwrap();
    assert_eq!(
        session["restored"],
        json!({"slug": slug, "version": 3}),
        "{label}"
    );
    assert_eq!(session["page"], json!(["First words.", 3]), "{label}");
    assert_eq!(
        session["rotated"],
        json!({"slug": slug, "version": 3}),
        "{label}"
    );
    assert_eq!(session["old_pin"]["type"], "/problems/wrong-pin", "{label}");
    assert_eq!(session["new_pin_version"], 4, "{label}");
    assert_eq!(session["hidden"]["type"], "/problems/not-found", "{label}");
    assert_eq!(
        session["shown"],
        json!([[5, "claim"], [4, "update"]]),
        "{label}"
    );
    assert_eq!(session["shown_next_page"], 2, "{label}");
    let (version, body): (i64, String) = app
        .conn()
        .query_row(
            "SELECT current_version, body FROM pages WHERE slug = ?1",
            [slug],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((version, body.as_str()), (5, "New PIN."), "{label}");
}

#[actix_web::test]
async fn the_official_python_client_uses_every_tool_over_http_and_stdio() {
    let Some(python) = python() else {
        helpers::support::skipped(
            "the_official_python_client_uses_every_tool_over_http_and_stdio",
            "the Python MCP SDK is not installed (python3 -m venv \
             ~/.cache/agent-pages-ci/mcp && ~/.cache/agent-pages-ci/mcp/bin/pip install \
             mcp==2.3.0, or run .ci/run)",
        );
        return;
    };
    let app = spawn_app().await;
    let url = format!("{}/mcp", app.address);
    // The client blocks; the server runs on this thread's runtime meanwhile.
    let http = {
        let (python, url) = (python.clone(), url.clone());
        actix_web::rt::task::spawn_blocking(move || run_client(&python, &["--http", &url]))
            .await
            .unwrap()
    };
    assert_eq!(http.len(), 4, "{http:?}");
    check_session(&app, &http[0], "2026-07-28");
    check_session(&app, &http[1], "2025-11-25");
    check_history(&app, &http[2]);
    let read_only = &http[3];
    assert_eq!(
        read_only["tools"],
        serde_json::json!(["list_pages", "read_page", "search_pages"]),
        "{read_only}"
    );
    let refused = read_only["publish"].as_str().unwrap();
    assert!(
        refused.contains("no tool is named `publish_page`"),
        "{refused}"
    );
    assert!(
        !read_only["listed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "visitor-notes"),
        "{read_only}"
    );

    let binary = env!("CARGO_BIN_EXE_agent-pages");
    let stdio = actix_web::rt::task::spawn_blocking(move || {
        run_client(&python, &["--stdio", binary, &url])
    })
    .await
    .unwrap();
    assert_eq!(stdio.len(), 2, "{stdio:?}");
    check_session(&app, &stdio[0], "2026-07-28");
    check_history(&app, &stdio[1]);
    // Every write of the five sessions came from this machine and spent the
    // publish budget of 127.0.0.1 (no proxy header).
    let spent = app
        .state
        .budgets
        .publish
        .keys(&agent_pages::client_ip::ClientIp::from_addr(
            "127.0.0.1".parse().unwrap(),
        ));
    let count: i64 = app
        .budget_conn()
        .query_row(
            "SELECT count FROM rate_limit_counters WHERE bucket = ?1",
            [&spent.0[1]],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        count,
        3 * 5 + 2 * 7,
        "publish, update, stale update, wrong archive, archive: 5 a session (the publish \
         sent again with its idempotency_key spends nothing); publish, \
         update, restore, rotate, update with the old PIN, update, claim: 7 a history session"
    );
}
