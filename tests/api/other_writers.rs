//! Another process writing the same database file: an import running beside the
//! server never makes a search or an API write fail, a budget write never waits
//! for a page write (the counters have a file and a lock of their own), and an API
//! write that finds the page write lock held for longer than the busy timeout is a
//! 503 to retry, never a 500.

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
        // The publish budget (another file) was spent; the page write met the lock.
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

/// Waits until the publish budget of `client` has counted `n` writes (the budget
/// database as another process would read it); panics after 30 s.
async fn publish_counted(app: &TestApp, client: &str, n: i64) {
    let key = app
        .state
        .budgets
        .publish
        .keys(&agent_pages::client_ip::ClientIp::from_addr(
            client.parse().unwrap(),
        ))
        .0
        .remove(0);
    let conn = app.budget_conn();
    for _ in 0..3000 {
        let count: Option<i64> = rusqlite::OptionalExtension::optional(conn.query_row(
            "SELECT count FROM rate_limit_counters WHERE bucket = ?1",
            [&key],
            |r| r.get(0),
        ))
        .unwrap();
        if count == Some(n) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the publish budget of {client} never counted {n}");
}

#[actix_web::test]
async fn budget_writes_never_wait_for_a_page_write_held_by_another_connection() {
    let app = spawn_app().await;
    // Cached first: this test is about locks, not scorer slots.
    for q in ["kubernetes", "database"] {
        assert_eq!(app.search(q, "198.51.100.99").await.status(), 200);
    }
    // A page write of another process, as large as it likes: its transaction holds
    // the page database's write lock until it commits.
    let holder = app.conn();
    holder
        .execute_batch(
            "BEGIN IMMEDIATE;
             INSERT INTO pages (slug, title, created_at, updated_at)
             VALUES ('held', 'Written while the searches ran', 0, 0);",
        )
        .unwrap();

    // Every search is admitted and counted at once (before, each waited out the
    // budget's 1 s busy timeout on this lock and answered 503 budget-unavailable).
    let app = &app;
    let searches = futures_util::future::join_all((0..8).map(|i| async move {
        let client = format!("198.51.100.{}", 100 + i);
        let q = ["kubernetes", "database"][i % 2];
        (app.search(q, &client).await.status().as_u16(), client)
    }))
    .await;
    for (status, client) in &searches {
        assert_eq!(*status, 200, "{searches:?}");
        assert_eq!(app.counters(client), (1, 1), "{client}");
    }
    // A publish spends its budget while the lock is held, then waits for the lock
    // for its page write (and only for that).
    let publish = {
        let request = app
            .client
            .post(app.url("/api/pages"))
            .header("X-Forwarded-For", AGENT)
            .json(&json!({"title": "Published while the lock was held"}));
        actix_web::rt::spawn(async move { request.send().await.unwrap().status().as_u16() })
    };
    publish_counted(&app, AGENT, 1).await;
    holder.execute_batch("COMMIT").unwrap();
    assert_eq!(publish.await.unwrap(), 201);

    // The answer is that of a fresh fetch: the other connection's page is found.
    let (status, _, body) = app
        .search_json("written while the searches", "198.51.100.98")
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][0]["slug"], "held", "{body}");
}
