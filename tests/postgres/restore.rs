//! A logical restore into the running server (Issue 31 §1): two replicas follow one
//! database; it is dumped (`pg_dump -Fc`), written to again, then dropped
//! (`DROP DATABASE … WITH (FORCE)`), created again and restored from the dump
//! (`pg_restore`) while both keep running. The restored database's generations are
//! an older history's (lower, then equal again to ones already followed, with the
//! removed pages' ids given to new pages), so each replica must rebuild its
//! snapshot in full within one search: the removed pages are gone from its search,
//! the pages published after the restore are in it, and no answer cached before
//! the restore is served again.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::{json, Value};

use crate::helpers::{pg_server, spawn_app_with, spawn_replica, PagesDb, TestApp, AGENT, PIN};

fn roomy(s: &mut agent_pages::configuration::Settings) {
    for budget in [&mut s.search_budget, &mut s.publish_budget] {
        budget.set_limit("minute", 1_000_000);
        budget.set_limit("hour", 1_000_000);
    }
}

/// A client that keeps no connection between requests: the blocking `pg_*` runs
/// below outlast the app's keep-alive, and a request sent on a connection the app is
/// closing at that moment fails for the test's sake only.
fn fresh_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

/// The slugs `app`'s JSON search for `q` lists (asserting a 200).
async fn slugs(app: &TestApp, q: &str, client: &str) -> BTreeSet<String> {
    let r = fresh_client()
        .get(format!("{}/search", app.address))
        .query(&[("q", q)])
        .header("X-Forwarded-For", client)
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap();
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, 200, "search {q:?}: {body}");
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["slug"].as_str().unwrap().to_owned())
        .collect()
}

/// Publishes `slug` on `app` (asserting a 201).
async fn publish(app: &TestApp, slug: &str) {
    let r = fresh_client()
        .post(format!("{}/api/pages", app.address))
        .header("X-Forwarded-For", AGENT)
        .json(&json!({"slug": slug, "title": format!("Restore drill {slug}"), "pin": PIN}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
}

/// The status of `GET path` on `app`.
async fn status_of(app: &TestApp, path: &str) -> u16 {
    fresh_client()
        .get(format!("{}{path}", app.address))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

fn set(slugs: &[&str]) -> BTreeSet<String> {
    slugs.iter().map(|s| s.to_string()).collect()
}

/// Runs `program args…` from the server's `bin` folder (a client program: root may
/// run it); panics with its output unless it succeeds.
fn run(program: &str, args: &[&str]) {
    let bin = pg_server::require_postgres();
    let out = Command::new(bin.join(program))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Asserts the snapshot `app` holds now (not refreshed here) has exactly the
/// database's candidates, each as stored.
async fn assert_snapshot_is_the_database(app: &TestApp, name: &str) {
    let held = app.state.search.corpus.peek();
    let (generation, candidates) = app.state.pages.store.candidates().await.unwrap();
    assert_eq!(held.generation, generation, "{name}: generation");
    assert_eq!(held.len(), candidates.len(), "{name}: candidates");
    for c in &candidates {
        assert_eq!(held.page(c.id), Some(c.borrowed()), "{name}: page {}", c.id);
    }
}

#[actix_web::test]
async fn a_pg_restore_into_the_running_server_makes_every_replica_rebuild_within_one_search() {
    let a = spawn_app_with(roomy).await;
    let b = spawn_replica(&a, roomy).await;
    let PagesDb::Postgres { url, db } = a.pages_db.clone() else {
        unreachable!("spawn_app_with puts the pages in PostgreSQL here")
    };
    let server = pg_server::shared();

    for slug in ["kept-one", "kept-two"] {
        publish(&a, slug).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("pages.dump");
    let dump = dump.to_str().unwrap();
    run("pg_dump", &["-Fc", "-f", dump, "-d", &url]);

    let lost = ["lost-one", "lost-two", "lost-three"];
    for slug in lost {
        publish(&a, slug).await;
    }
    // Both replicas follow the five pages, and each caches this answer.
    let all = set(&["kept-one", "kept-two", "lost-one", "lost-two", "lost-three"]);
    for (app, client) in [(&a, "192.0.2.71"), (&b, "192.0.2.72")] {
        assert_eq!(slugs(app, "restore drill", client).await, all);
    }
    let ids_before: Vec<Vec<Option<String>>> = server.text_rows(
        &db,
        "SELECT id FROM pages WHERE slug LIKE 'lost-%' ORDER BY id",
    );

    server.sql("postgres", &format!("DROP DATABASE {db} WITH (FORCE)"));
    server.sql("postgres", &format!("CREATE DATABASE {db}"));
    run("pg_restore", &["--no-owner", "-d", &url, dump]);
    assert_eq!(
        server.text_rows(&db, "SELECT count(*) FROM pages WHERE slug LIKE 'lost-%'"),
        [[Some("0".to_owned())]],
        "the dump was taken before the lost pages"
    );

    // One search each: the removed pages are gone, the snapshot is the database's.
    let kept = set(&["kept-one", "kept-two"]);
    for (app, name, client) in [(&a, "a", "192.0.2.73"), (&b, "b", "192.0.2.74")] {
        assert_eq!(
            slugs(app, "restore drill", client).await,
            kept,
            "replica {name}"
        );
        assert_snapshot_is_the_database(app, name).await;
        assert_eq!(status_of(app, "/p/lost-one").await, 404);
    }

    // New pages take the removed pages' ids again (the restored identity), at
    // version 1 as they were: same ids and versions as the answer cached before.
    let fresh = ["fresh-one", "fresh-two", "fresh-three"];
    for slug in fresh {
        publish(&a, slug).await;
    }
    let ids_after: Vec<Vec<Option<String>>> = server.text_rows(
        &db,
        "SELECT id FROM pages WHERE slug LIKE 'fresh-%' ORDER BY id",
    );
    assert_eq!(
        ids_after, ids_before,
        "the new pages reuse the lost pages' ids"
    );
    let now = set(&[
        "kept-one",
        "kept-two",
        "fresh-one",
        "fresh-two",
        "fresh-three",
    ]);
    for (app, name, client) in [(&a, "a", "192.0.2.75"), (&b, "b", "192.0.2.76")] {
        assert_eq!(
            slugs(app, "restore drill", client).await,
            now,
            "replica {name}"
        );
        assert_snapshot_is_the_database(app, name).await;
    }
}
