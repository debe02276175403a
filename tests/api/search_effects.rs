//! Writes through the API reach search at once: the corpus fingerprint moves with
//! every change, so the next identical search shows the current state. A write
//! that leaves the query words' document frequencies as they were (a retitle that
//! keeps them, a body edit) has the cached answer patched from the changed title
//! (docs/spec.md, "Patch"): a hit that already shows the change. In this small
//! corpus every title counts for word rarity: the archive of one of two matches
//! moves the words' weights, so that entry is dropped and the next search is a
//! miss; from one match to none (a claim) or none to one (a create) weighs the
//! same, and those are patched again.

use serde_json::json;

use crate::helpers::{spawn_app, TestApp, AGENT, PIN};

const SEARCHER: &str = "203.0.113.60";

async fn search(app: &TestApp) -> (String, Vec<(String, String)>) {
    let (status, headers, body) = app.search_json("zebra migration", SEARCHER).await;
    assert_eq!(status, 200, "{body}");
    let rows = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["slug"].as_str().unwrap().to_owned(),
                r["title"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (headers["x-search-cache"].to_str().unwrap().to_owned(), rows)
}

#[actix_web::test]
async fn update_archive_and_claim_each_reach_the_next_identical_search() {
    let app = spawn_app().await;
    app.publish("zebra", "Zebra migration patterns").await;
    app.publish("zebra-2", "Zebra migration routes").await;
    let (cache, rows) = search(&app).await;
    assert_eq!(cache, "miss");
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(search(&app).await.0, "hit");

    let r = app
        .put_page(
            "zebra",
            Some(PIN),
            AGENT,
            json!({"title": "Zebra migration handbook"}),
        )
        .await;
    assert_eq!(r.status, 200);
    let (cache, rows) = search(&app).await;
    assert_eq!(cache, "hit", "patched");
    assert!(
        rows.contains(&("zebra".into(), "Zebra migration handbook".into())),
        "{rows:?}"
    );
    assert_eq!(search(&app).await.0, "hit");

    // A body-only update moves the version, so the fingerprint too: the entry
    // is patched (its row's page changed), not carried as it was.
    app.put_page("zebra", Some(PIN), AGENT, json!({"body": "new body"}))
        .await;
    assert_eq!(search(&app).await.0, "hit");

    assert_eq!(
        app.act("zebra", "archive", Some(PIN), AGENT).await.status,
        200
    );
    let (cache, rows) = search(&app).await;
    assert_eq!(cache, "miss");
    assert_eq!(
        rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["zebra-2"]
    );

    assert_eq!(
        app.act("zebra-2", "claim", Some(PIN), AGENT).await.status,
        200
    );
    let (cache, rows) = search(&app).await;
    assert_eq!(cache, "hit", "patched");
    assert!(rows.is_empty(), "{rows:?}");

    // A new page shows up at once as well.
    app.publish("zebra-3", "Zebra migration again").await;
    let (cache, rows) = search(&app).await;
    assert_eq!((cache.as_str(), rows.len()), ("hit", 1), "patched");
}

#[actix_web::test]
async fn refused_writes_leave_the_cache_warm() {
    let app = spawn_app().await;
    app.publish("zebra", "Zebra migration patterns").await;
    search(&app).await;
    app.put_page("zebra", Some("wrong pin!"), AGENT, json!({"title": "x"}))
        .await;
    app.act("zebra", "archive", None, AGENT).await;
    assert_eq!(search(&app).await.0, "hit");
}
