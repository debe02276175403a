//! Concurrent updates to one page: each gets its own version and none is lost.

use std::collections::BTreeMap;

use serde_json::json;

use crate::helpers::{spawn_app, PIN};

#[actix_web::test]
async fn concurrent_updates_each_get_a_distinct_version_and_none_is_lost() {
    const WRITERS: usize = 12;
    let app = spawn_app().await;
    app.publish("shared", "Shared").await;
    // One client per writer, so that the PIN checks run in parallel as well.
    let writers: Vec<_> = (0..WRITERS)
        .map(|i| {
            let request = app
                .client
                .put(app.url("/api/pages/shared"))
                .header("X-Forwarded-For", format!("192.0.2.{}", i + 10))
                .header("X-Page-Pin", PIN)
                .json(&json!({"body": format!("edit {i}")}));
            actix_web::rt::spawn(async move {
                let r = request.send().await.unwrap();
                assert_eq!(r.status(), 200);
                let body: serde_json::Value = r.json().await.unwrap();
                (body["version"].as_i64().unwrap(), i)
            })
        })
        .collect();
    let mut by_version = BTreeMap::new();
    for w in writers {
        let (version, i) = w.await.unwrap();
        assert!(
            by_version.insert(version, i).is_none(),
            "version {version} twice"
        );
    }
    let versions: Vec<i64> = by_version.keys().copied().collect();
    assert_eq!(versions, (2..=WRITERS as i64 + 1).collect::<Vec<_>>());
    // The stored page is the last writer's, at the last version.
    let (version, _, body) = app.stored("shared");
    assert_eq!(version, WRITERS as i64 + 1);
    assert_eq!(body, format!("edit {}", by_version[&version]));
}

#[actix_web::test]
async fn concurrent_creates_without_a_slug_each_get_their_own() {
    let app = spawn_app().await;
    let creators: Vec<_> = (0..8)
        .map(|_| {
            let request = app
                .client
                .post(app.url("/api/pages"))
                .json(&json!({"title": "Same title"}));
            actix_web::rt::spawn(async move {
                let r = request.send().await.unwrap();
                assert_eq!(r.status(), 201);
                let body: serde_json::Value = r.json().await.unwrap();
                body["slug"].as_str().unwrap().to_owned()
            })
        })
        .collect();
    let mut slugs = Vec::new();
    for c in creators {
        slugs.push(c.await.unwrap());
    }
    slugs.sort();
    let mut expected: Vec<String> = (2..=8).map(|n| format!("same-title-{n}")).collect();
    expected.push("same-title".into());
    expected.sort();
    assert_eq!(slugs, expected);
}
