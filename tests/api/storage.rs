//! A write acknowledged 201/200 is never lost (SPEC §9): when the database file at
//! the configured path is gone or replaced, writes answer 503 + Retry-After and
//! `/readyz` says so, while `/healthz` (liveness) stays 200.

use serde_json::json;

use crate::helpers::{spawn_app, AGENT, PIN};

#[actix_web::test]
async fn writes_are_refused_and_readiness_fails_once_the_data_folder_is_deleted() {
    let app = spawn_app().await;
    app.publish("before", "Written before").await;
    let ready = app.fetch("/readyz").await;
    assert_eq!(ready.status, 200, "{}", ready.text);
    assert_eq!(ready.json()["ready"], true);

    let folder = app.db_path.parent().unwrap().to_owned();
    std::fs::remove_dir_all(&folder).unwrap();

    let r = app.create(json!({"title": "Into the void"})).await;
    r.problem(503, "storage-unavailable");
    assert_eq!(r.header("retry-after"), Some("5"));
    app.put_page("before", Some(PIN), AGENT, json!({"body": "lost?"}))
        .await
        .problem(503, "storage-unavailable");
    app.act("before", "archive", Some(PIN), AGENT)
        .await
        .problem(503, "storage-unavailable");

    assert_eq!(app.fetch("/healthz").await.status, 200);
    let ready = app.fetch("/readyz").await;
    assert_eq!(ready.status, 503, "{}", ready.text);
    let body = ready.json();
    assert_eq!(body["ready"], false);
    assert_eq!(body["database"], "the database file is gone", "{body}");
    assert_eq!(body["snapshot"], "ok", "{body}");

    // Another database created at the same path is not the one the server has
    // open: still no write is acknowledged.
    let mut conn = agent_pages::db::open(&app.db_path).unwrap();
    agent_pages::db::migrations::run(&mut conn).unwrap();
    app.create(json!({"title": "Into the wrong file"}))
        .await
        .problem(503, "storage-unavailable");
    let body = app.fetch("/readyz").await.json();
    assert_eq!(body["database"], "the database file is replaced", "{body}");
    let pages: i64 = conn
        .query_row("SELECT COUNT(*) FROM pages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(pages, 0);
}
