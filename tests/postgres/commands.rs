//! The command line with PostgreSQL (the built binary): a URL that is not one stops
//! with exit 2 naming the variable and never the password; `migrate` applies each
//! migration once, however many run at once; `import` writes in one transaction, so
//! an import killed mid-write changes nothing; `copy` moves a SQLite database over
//! with every id, slug, version, time, state and PIN hash; TLS is verified.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::{
    import_into_postgres, pg_settings, spawn_app_configured, spawn_app_in, Pages, Store, PAGES,
};
use crate::helpers::{pg_server, AGENT, PIN, T0};

const BIN: &str = env!("CARGO_BIN_EXE_agent-pages");

/// `agent-pages ARGS` with `env` (and nothing else of ours), run to its end.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .args(args)
        .output()
        .expect("running agent-pages")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_url_that_is_not_one_stops_with_exit_2_naming_the_variable_never_the_password() {
    for url in [
        "mysql://app:s3cret-pw@db/pages",
        "postgres://app:s3cret-pw@db:notaport/pages",
        "postgres://app:s3cret-pw@db/pages?sslmode=sometimes",
        "postgres://app:s3cret-pw@db",
    ] {
        for command in [&["migrate"][..], &["import", "-"], &["copy"], &["serve"]] {
            let out = run(command, &[("AGENT_PAGES_DATABASE_URL", url)]);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command:?} {url}: {stderr}");
            assert!(
                stderr.contains("AGENT_PAGES_DATABASE_URL"),
                "{command:?}: {stderr}"
            );
            assert!(!stderr.contains("s3cret-pw"), "{command:?}: {stderr}");
            assert!(out.stdout.is_empty());
        }
    }
    let out = run(&["copy"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("AGENT_PAGES_DATABASE_URL"));
}

#[test]
fn migrations_run_once_however_many_processes_apply_them_at_once() {
    let server = pg_server::shared();
    let db = server.create_database();
    let url = server.url(&db);
    let runs: Vec<_> = (0..4)
        .map(|_| {
            Command::new(BIN)
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("AGENT_PAGES_DATABASE_URL", &url)
                .arg("migrate")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in runs {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(stdout.contains(&format!("/{db}")), "{stdout}");
        assert!(
            !stdout.contains("postgres@"),
            "no credentials shown: {stdout}"
        );
    }
    let versions = server.text_rows(&db, "SELECT version FROM schema_migrations ORDER BY 1");
    assert_eq!(
        versions,
        [
            [Some("1".to_owned())],
            [Some("2".to_owned())],
            [Some("3".to_owned())],
            [Some("4".to_owned())],
            [Some("5".to_owned())]
        ]
    );
    assert!(run(&["migrate"], &[("AGENT_PAGES_DATABASE_URL", &url)])
        .status
        .success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_killed_mid_write_changes_nothing_and_a_whole_one_lands() {
    let server = pg_server::shared();
    let db = server.create_database();
    import_into_postgres(&pg_settings(server, &db), PAGES, T0).await;
    let url = server.url(&db);
    let count = |q: &str| -> i64 {
        server.text_rows(&db, q)[0][0]
            .as_deref()
            .unwrap()
            .parse()
            .unwrap()
    };
    let before = count("SELECT count(*) FROM pages");
    let generation = count("SELECT generation FROM corpus_generation");

    // 2,500 new pages, then a change to `golang`, which another session holds
    // locked: the import writes its first batches, then waits on that row.
    let mut lines: String = (0..2500)
        .map(|i| format!("{{\"slug\":\"bulk-{i}\",\"title\":\"Bulk page {i}\"}}\n"))
        .collect();
    lines.push_str("{\"slug\":\"golang\",\"title\":\"Go, renamed by the import\"}\n");
    let input = std::env::temp_dir().join(format!("import-{db}.jsonl"));
    std::fs::write(&input, &lines).unwrap();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (locked, is_locked) = std::sync::mpsc::channel::<()>();
    let holder_url = url.clone();
    let holder = std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&holder_url, postgres::NoTls).unwrap();
        let mut tx = client.transaction().unwrap();
        tx.batch_execute("SELECT 1 FROM pages WHERE slug = 'golang' FOR UPDATE")
            .unwrap();
        locked.send(()).unwrap();
        let _ = released.recv();
        tx.rollback().unwrap();
    });
    is_locked.recv().unwrap();
    let mut import = Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AGENT_PAGES_DATABASE_URL", &url)
        .arg("import")
        .arg(&input)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Waiting on the row lock means the batches before it are written (not
    // committed).
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(&format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}'
         AND application_name = 'agent-pages' AND wait_event_type = 'Lock'"
    )) == 0
    {
        assert!(
            Instant::now() < deadline,
            "the import never reached the lock"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    import.kill().unwrap();
    import.wait().unwrap();
    release.send(()).unwrap();
    holder.join().unwrap();
    assert_eq!(
        count("SELECT count(*) FROM pages"),
        before,
        "nothing of it kept"
    );
    assert_eq!(
        count("SELECT count(*) FROM pages WHERE slug LIKE 'bulk-%'"),
        0
    );
    // Rolled back: the generation and its log are as they were.
    let until = Instant::now() + Duration::from_secs(30);
    while count("SELECT generation FROM corpus_generation") != generation {
        assert!(Instant::now() < until, "the generation moved");
        std::thread::sleep(Duration::from_millis(50));
    }

    let out = run(
        &["import", input.to_str().unwrap()],
        &[("AGENT_PAGES_DATABASE_URL", &url)],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("2500 new, 1 updated, 0 unchanged, 0 skipped"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(count("SELECT count(*) FROM pages"), before + 2500);
    assert_eq!(
        count("SELECT current_version FROM pages WHERE slug = 'golang'"),
        2
    );
    assert_eq!(
        count("SELECT generation FROM corpus_generation"),
        generation + 2501
    );
    std::fs::remove_file(&input).unwrap();
}

/// Every row of `pages`, each value as text, ordered by id.
const ALL_ROWS: &str = "SELECT id, slug, title, body, pin_hash, current_version, lifecycle,
                               claimed_at, created_at, updated_at
                        FROM pages ORDER BY id";

/// Every row of the page history, each value as text, in page and version order.
const HISTORY_ROWS: &str = "SELECT page_id, version, title, body, kind, created_at
                            FROM page_versions ORDER BY page_id, version";

#[actix_web::test]
async fn copy_moves_a_sqlite_database_keeping_every_page_and_pin() {
    // A SQLite service with pages in every state, PINs, versions and times.
    let source = spawn_app_in(Pages::Sqlite, Store::Sqlite, |_| {}).await;
    source.publish("kept", "A page with a PIN").await;
    source.publish("renamed", "Before the rename").await;
    let r = source
        .put_page(
            "renamed",
            Some(PIN),
            AGENT,
            json!({"title": "After the rename"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    source.publish("archived", "Archived later").await;
    source.act("archived", "archive", Some(PIN), AGENT).await;
    source.clock.advance(60);
    source.publish("claimed", "Claimed later").await;
    source.act("claimed", "claim", Some(PIN), AGENT).await;
    let highest = source.sql_i64("SELECT max(id) FROM pages");
    let rows = source.sql_rows(ALL_ROWS);
    let history = source.sql_rows(HISTORY_ROWS);
    assert!(
        history.len() > rows.len(),
        "updates, archives and claims kept versions"
    );

    let server = pg_server::shared();
    let db = server.create_database();
    let url = server.url(&db);
    let env = [
        ("AGENT_PAGES_DATABASE", source.db_path.to_str().unwrap()),
        ("AGENT_PAGES_DATABASE_URL", url.as_str()),
    ];
    let out = run(&["copy"], &env);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains(&format!("copied {} pages", rows.len())),
        "{stdout}"
    );
    for secret in ["$argon2", PIN, "postgres@"] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{secret}"
        );
    }
    // Every column of every row, PIN hashes as they were, and the history with them.
    assert_eq!(server.text_rows(&db, ALL_ROWS), rows);
    assert_eq!(server.text_rows(&db, HISTORY_ROWS), history);
    assert!(
        stdout.contains(&format!("{} versions of page history", history.len())),
        "{stdout}"
    );

    // Copying again into a database that has pages is refused and changes nothing.
    let again = run(&["copy"], &env);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("already has"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(server.text_rows(&db, ALL_ROWS), rows);

    // The service over the copy: the old PIN works, new ids come after the old.
    let moved = spawn_app_configured(pg_settings(server, &db), |_| {}).await;
    let r = moved
        .put_page(
            "kept",
            Some(PIN),
            AGENT,
            json!({"body": "changed after the move"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["version"], 2);
    let kept = moved.fetch("/api/pages/renamed/versions").await.json();
    assert_eq!(kept["total"], 2, "{kept}");
    let first = moved.fetch("/api/pages/renamed/versions/1").await.json();
    assert_eq!(first["title"], "Before the rename", "{first}");
    moved
        .publish("after-the-move", "Published after the move")
        .await;
    assert!(moved.sql_i64("SELECT id FROM pages WHERE slug = 'after-the-move'") > highest);
    let (status, _, body) = moved.search_json("after the rename", "192.0.2.90").await;
    assert_eq!(status, 200);
    assert_eq!(body["results"][0]["slug"], "renamed", "{body}");
    assert_eq!(moved.fetch("/p/archived").await.status, 404);
}

#[test]
fn tls_is_verified_against_ssl_cert_file_and_refused_without_it() {
    let server = pg_server::shared();
    let dir = tempfile::tempdir().unwrap();
    let files = crate::helpers::support::TlsFiles::make(dir.path());
    server.enable_tls(&files);
    let db = server.create_database();
    let url = format!("{}?sslmode=verify-full", server.url(&db));
    let ca = files.ca.to_str().unwrap();
    let out = run(
        &["migrate"],
        &[("AGENT_PAGES_DATABASE_URL", &url), ("SSL_CERT_FILE", ca)],
    );
    // verify-full connects over TLS or not at all.
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Without the test CA the server's certificate is not trusted: no connection.
    let untrusted = run(
        &["migrate"],
        &[
            ("AGENT_PAGES_DATABASE_URL", &url),
            ("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt"),
        ],
    );
    assert_eq!(
        untrusted.status.code(),
        Some(1),
        "{}",
        text(&untrusted.stderr)
    );
    assert!(
        text(&untrusted.stderr)
            .to_lowercase()
            .contains("certificate"),
        "{}",
        text(&untrusted.stderr)
    );
}
