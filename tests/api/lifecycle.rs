//! Archive and claim: the page leaves the ledger, search and its public views, and
//! a repeat changes nothing.

use serde_json::json;

use crate::helpers::{spawn_app, AGENT, PIN, T0};

#[actix_web::test]
async fn archiving_takes_the_page_off_the_ledger_and_bumps_its_version() {
    let app = spawn_app().await;
    app.publish("notes", "Notes").await;
    app.clock.advance(7);
    let r = app.act("notes", "archive", Some(PIN), AGENT).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json(),
        json!({"slug": "notes", "version": 2, "lifecycle": "archived", "claimed_at": null})
    );
    let updated_at = app.sql_i64("SELECT updated_at FROM pages WHERE slug = 'notes'");
    assert_eq!(updated_at, T0 + 7);
    assert!(!app.fetch("/").await.text.contains("/p/notes\""));
    assert_eq!(app.fetch("/p/notes").await.status, 404);
    app.fetch("/api/pages/notes")
        .await
        .problem(404, "not-found");
    let list = app.fetch("/api/pages").await.json();
    assert!(!list["pages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["slug"] == "notes"));

    // Again: nothing changes, still 200.
    let r = app.act("notes", "archive", Some(PIN), AGENT).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["version"], 2);
    // The PIN holder can still edit it; it stays archived.
    let r = app
        .put_page("notes", Some(PIN), AGENT, json!({"body": "kept"}))
        .await;
    assert_eq!(r.json()["version"], 3);
    assert_eq!(app.fetch("/p/notes").await.status, 404);
}

#[actix_web::test]
async fn a_claimed_page_is_gone_from_the_ledger_search_and_its_page() {
    let app = spawn_app().await;
    app.publish("quokka-facts", "Quokka facts").await;
    let (_, _, found) = app.search_json("quokka facts", "203.0.113.50").await;
    assert_eq!(found["results"][0]["slug"], "quokka-facts");

    app.clock.advance(3);
    let r = app.act("quokka-facts", "claim", Some(PIN), AGENT).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json(),
        json!({"slug": "quokka-facts", "version": 2, "lifecycle": "active", "claimed_at": T0 + 3})
    );

    let (_, headers, json) = app.search_json("quokka facts", "203.0.113.50").await;
    assert!(json["results"].as_array().unwrap().is_empty(), "{json}");
    // The cached answer was patched: the claimed page's row left it (docs/spec.md,
    // "Patch"), so it is a hit that no longer shows it.
    assert_eq!(headers["x-search-cache"], "hit");
    let html = app
        .search("quokka facts", "203.0.113.50")
        .await
        .text()
        .await
        .unwrap();
    assert!(!html.contains("/p/quokka-facts"), "{html}");
    assert!(!app.fetch("/").await.text.contains("quokka"));
    assert_eq!(app.fetch("/p/quokka-facts").await.status, 404);
    assert_eq!(app.fetch("/p/quokka-facts/raw").await.status, 404);
    app.fetch("/api/pages/quokka-facts")
        .await
        .problem(404, "not-found");

    // Claiming again keeps the first claim time and the version.
    app.clock.advance(100);
    let r = app.act("quokka-facts", "claim", Some(PIN), AGENT).await;
    assert_eq!(r.json()["claimed_at"], T0 + 3);
    assert_eq!(r.json()["version"], 2);
}

#[actix_web::test]
async fn a_gone_page_is_not_found_to_anyone_without_its_pin() {
    let app = spawn_app().await;
    app.publish("gone", "Gone page").await;
    app.publish("claimed", "Claimed page").await;
    assert_eq!(
        app.act("gone", "archive", Some(PIN), AGENT).await.status,
        200
    );
    assert_eq!(
        app.act("claimed", "claim", Some(PIN), AGENT).await.status,
        200
    );
    let never = app
        .act("never-was", "claim", Some("wrong pin!"), AGENT)
        .await
        .problem(404, "not-found");
    for slug in ["gone", "claimed"] {
        app.fetch(&format!("/api/pages/{slug}"))
            .await
            .problem(404, "not-found");
        for pin in [None, Some("wrong pin!")] {
            for action in ["claim", "archive"] {
                let p = app
                    .act(slug, action, pin, AGENT)
                    .await
                    .problem(404, "not-found");
                assert_eq!(
                    p["detail"],
                    never["detail"].as_str().unwrap().replace("never-was", slug)
                );
            }
            app.put_page(slug, pin, AGENT, json!({"body": "x"}))
                .await
                .problem(404, "not-found");
        }
        // Its PIN holder still reaches it.
        assert_eq!(app.act(slug, "claim", Some(PIN), AGENT).await.status, 200);
    }
}
