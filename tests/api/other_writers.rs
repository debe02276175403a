//! Another process writing the same database file: an import running beside the
//! server never makes a search or an API write fail, and an API write that finds
//! the write lock held for longer than the busy timeout is a 503 to retry, never a
//! 500.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::json;

use crate::helpers::{spawn_app, Reply, TestApp, AGENT};
use crate::helpers::{spawn_app_on, Store};

const BIN: &str = env!("CARGO_BIN_EXE_agent-pages");

/// A search from its own client (so no budget runs out) and a publish with a PIN,
/// `n` of each at once; returns their statuses.
async fn searches_and_writes(app: &TestApp, n: usize) -> (Vec<u16>, Vec<u16>) {
    let searches = (0..n).map(|i| {
        let client = format!("198.51.100.{}", 100 + i);
        let q = ["kubernetes", "database", "compiler", "editor"][i % 4];
        async move { app.search(q, &client).await.status().as_u16() }
    });
    let writes = (0..n).map(|i| async move {
        app.create(json!({"title": format!("Written beside an import {i}"), "pin": "123456"}))
            .await
            .status
    });
    futures_util::future::join(
        futures_util::future::join_all(searches),
        futures_util::future::join_all(writes),
    )
    .await
}

#[actix_web::test]
async fn an_import_in_another_process_never_makes_searches_or_writes_fail() {
    let app = spawn_app().await;
    let mut import = Command::new(BIN)
        .args(["import", "-"])
        .env("AGENT_PAGES_DATABASE", &app.db_path)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = import.stdin.take().unwrap();
    let stderr = import.stderr.take().unwrap();
    // A bad first line: its report proves the import is reading its input (on the
    // old code, inside its write transaction).
    stdin.write_all(b"not json\n").unwrap();
    stdin.flush().unwrap();
    let mut stderr = BufReader::new(stderr);
    let reported = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        (line, stderr)
    })
    .await
    .unwrap();
    assert!(reported.0.starts_with("line 1: skipped"), "{}", reported.0);
    // A page with a PIN, and stdin left open.
    stdin
        .write_all(b"{\"slug\":\"imported\",\"title\":\"Imported beside the server\",\"pin\":\"654321\"}\n")
        .unwrap();
    stdin.flush().unwrap();

    // The searches are cached first: this test is about the write lock, not about
    // scorer slots (four cold queries at once on two slots would get 503 busy).
    for q in ["kubernetes", "database", "compiler", "editor"] {
        assert_eq!(app.search(q, "198.51.100.99").await.status(), 200);
    }
    // The import holds no lock while it reads its input: every write succeeds.
    let (searches, writes) = searches_and_writes(&app, 8).await;
    assert!(searches.iter().all(|&s| s == 200), "{searches:?}");
    assert!(writes.iter().all(|&s| s == 201), "{writes:?}");

    drop(stdin);
    let out = tokio::task::spawn_blocking(move || import.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("1 new") && stdout.contains("1 skipped"),
        "{stdout}"
    );
    assert_eq!(app.stored("imported").1, "Imported beside the server");
}

#[actix_web::test]
async fn a_write_that_finds_the_lock_held_too_long_is_503_database_busy_with_retry_after() {
    // The budgets in a real redis-server, so the publish budget and the PIN count
    // are answered while another connection holds the file's write lock, and both
    // writes reach the page write itself.
    let app = spawn_app_on(Store::Redis, |_| {}).await;
    app.publish("held", "Held page").await;
    let holder = app.conn();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    // Each waits out the busy timeout (5 s), at the same time.
    let create = app.create(json!({"title": "Waits for the lock"}));
    let update = app.put_page(
        "held",
        Some(crate::helpers::PIN),
        AGENT,
        json!({"body": "new"}),
    );
    let (create, update): (Reply, Reply) = futures_util::future::join(create, update).await;
    for r in [create, update] {
        r.problem(503, "database-busy");
        assert_eq!(r.header("retry-after"), Some("1"));
    }
    holder.execute_batch("ROLLBACK").unwrap();
    let r = app.create(json!({"title": "After the lock"})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        app.stored("held"),
        (1, "Held page".into(), "text".into()),
        "the refused update wrote nothing"
    );
}
