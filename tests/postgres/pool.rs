//! Two fault answers of Issue 31 §3. A request that finds no free pooled
//! connection (every one held) is `503 /problems/database-busy` with
//! `Retry-After: 1`, and `/readyz` stays ready: the database answers, this
//! process's own calls hold its pool. And `serve` against a PostgreSQL that has no
//! connection slot for it (SQLSTATE 53300) waits for one, as for a server that is
//! not up yet, instead of exiting.

use std::process::Command;
use std::time::Duration;

use agent_pages::page_store::postgres::PostgresPages;
use serde_json::{json, Value};

use super::replicas::{http, seeded};
use crate::helpers::support::ChildGuard;
use crate::helpers::{header, import_into_postgres, pg_server, pg_settings, spawn_app_configured};
use crate::helpers::{PAGES, PIN, T0};

const BIN: &str = env!("CARGO_BIN_EXE_agent-pages");

#[actix_web::test]
async fn a_full_pool_is_database_busy_retry_after_1_and_readiness_holds() {
    let server = pg_server::shared();
    let db = server.create_database();
    let mut pg = pg_settings(server, &db);
    import_into_postgres(&pg, PAGES, T0).await;
    pg.pool_size = 2;
    pg.statement_timeout = Duration::from_millis(500);
    let app = spawn_app_configured(pg, |_| {}).await;
    assert_eq!(app.fetch("/api/pages/kubernetes").await.status, 200);
    let before = app.stored("kubernetes");

    // Every page connection taken, as by two calls waiting on a lock.
    let pages = app
        .state
        .pages
        .store
        .backend::<PostgresPages>()
        .expect("pages in PostgreSQL");
    let held = [
        pages.pg().client().await.unwrap(),
        pages.pg().client().await.unwrap(),
    ];
    assert_eq!(pages.pg().status().available, 0, "the pool is full");

    let read = app.get("/api/pages/kubernetes").await;
    assert_eq!(read.status(), 503);
    assert_eq!(header(&read, "retry-after"), Some("1"));
    let problem: Value = read.json().await.unwrap();
    assert_eq!(problem["type"], "/problems/database-busy", "{problem}");

    let write = app
        .put_page(
            "kubernetes",
            Some(PIN),
            crate::helpers::AGENT,
            json!({"title": "Not kept"}),
        )
        .await;
    write.problem(503, "database-busy");
    assert_eq!(write.header("retry-after"), Some("1"));

    let ready = app.get("/readyz").await;
    assert_eq!(
        ready.status(),
        200,
        "a full pool is not a database that is down"
    );
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["database"], "ok", "{ready}");

    drop(held);
    assert_eq!(app.stored("kubernetes"), before, "nothing was written");
    assert_eq!(app.fetch("/api/pages/kubernetes").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_waits_for_a_free_connection_slot_as_for_a_server_not_up_yet() {
    let server = pg_server::shared();
    let url = seeded(server).await;
    let db = url.rsplit('/').next().unwrap().to_owned();
    // A role with no connection slot (53300 "too many connections for role"); a
    // superuser would be let in past the limit.
    let role = format!("slotless_{}", std::process::id());
    server.sql(
        "postgres",
        &format!("CREATE ROLE {role} LOGIN CONNECTION LIMIT 0"),
    );
    server.sql(
        &db,
        &format!(
            "GRANT ALL ON SCHEMA public TO {role};
             GRANT ALL ON ALL TABLES IN SCHEMA public TO {role};
             GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {role};"
        ),
    );
    let role_url = format!("postgres://{role}@127.0.0.1:{}/{db}", server.port());

    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(BIN);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AGENT_PAGES_BIND", "127.0.0.1:0")
        .env("AGENT_PAGES_DATABASE_URL", &role_url)
        .env("AGENT_PAGES_DATABASE", dir.path().join("unused.sqlite3"))
        .env("TRUSTED_PROXY_CIDRS", "127.0.0.1")
        .env("AGENT_PAGES_LOG_FORMAT", "json")
        .env("RUST_LOG", "info")
        .arg("serve");
    let mut serve = ChildGuard::spawn("slotless", command, dir.path());
    // The fault first: it was refused for want of a slot, and it waits.
    let line = serve.wait_for_line("does not answer yet");
    assert!(line.contains("53300"), "{line}");

    server.sql(
        "postgres",
        &format!("ALTER ROLE {role} CONNECTION LIMIT -1"),
    );
    let line = serve.wait_for_line("listening on http://");
    let rest = line.split("listening on ").nth(1).unwrap();
    let address: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '/' | '.'))
        .collect();
    let r = http()
        .get(format!("{address}/search"))
        .query(&[("q", "kubernetes")])
        .header("X-Forwarded-For", "192.0.2.80")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    drop(serve);
    server.sql(
        &db,
        &format!(
            "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role};
             REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {role};
             REVOKE ALL ON SCHEMA public FROM {role};"
        ),
    );
}
