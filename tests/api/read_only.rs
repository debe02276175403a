//! A pool left read-only by a passing fault recovers by itself.
//!
//! As a non-root user, `chmod 444` on the database file while the server opens new
//! pooled connections makes SQLite open them read-only, silently and for good; the
//! pool used to keep them, so most writes answered 500 until a restart. The tests
//! run as root, whom `chmod` does not stop, so this test puts the pool in exactly
//! the state such an episode leaves behind: every pooled connection opened with
//! `SQLITE_OPEN_READ_ONLY` on a file that is writable again.

use agent_pages::page_store::sqlite::SqlitePages;
use rusqlite::{Connection, OpenFlags};
use serde_json::json;

use crate::helpers::spawn_app_with;
use crate::helpers::{TestApp, AGENT, PIN};

async fn make_every_pooled_connection_read_only(app: &TestApp) {
    let pool = app
        .state
        .pages
        .store
        .backend::<SqlitePages>()
        .expect("the pages are in SQLite")
        .pool();
    let mut held = Vec::new();
    for _ in 0..pool.status().max_size {
        held.push(pool.get().await.unwrap());
    }
    for conn in &held {
        let path = app.db_path.clone();
        conn.interact(move |c| {
            *c = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        })
        .await
        .unwrap();
    }
}

#[actix_web::test]
async fn read_only_pooled_connections_are_dropped_and_writes_succeed_at_once() {
    // 42 writes from one client: more than the default publish budget allows.
    let app = spawn_app_with(|s| s.publish_budget.set_limit("minute", 1000)).await;
    app.publish("mine", "Mine").await;
    make_every_pooled_connection_read_only(&app).await;

    for i in 0..40 {
        let r = app
            .create(json!({"title": format!("After the fault {i}")}))
            .await;
        assert_eq!(r.status, 201, "write {i}: {}", r.text);
    }
    let r = app
        .put_page("mine", Some(PIN), AGENT, json!({"body": "changed"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // (Wrong PINs are counted by the budget store on its own connection, not
    // through this pool: a read-only pool cannot affect them.)
}
