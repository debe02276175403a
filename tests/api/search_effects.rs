//! Writes through the API reach search at once: the corpus fingerprint moves with
//! every change, so the next identical search is a miss showing the current state.

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
async fn update_archive_and_claim_each_make_the_next_identical_search_a_miss() {
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
    assert_eq!(cache, "miss");
    assert!(
        rows.contains(&("zebra".into(), "Zebra migration handbook".into())),
        "{rows:?}"
    );
    assert_eq!(search(&app).await.0, "hit");

    // A body-only update moves the version, so the fingerprint too.
    app.put_page("zebra", Some(PIN), AGENT, json!({"body": "new body"}))
        .await;
    assert_eq!(search(&app).await.0, "miss");

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
    assert_eq!(cache, "miss");
    assert!(rows.is_empty(), "{rows:?}");

    // A new page shows up at once as well.
    app.publish("zebra-3", "Zebra migration again").await;
    let (cache, rows) = search(&app).await;
    assert_eq!((cache.as_str(), rows.len()), ("miss", 1));
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
