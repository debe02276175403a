//! `PUT /api/pages/{slug}`: the right PIN changes the page and bumps its version;
//! anything else changes nothing.

use serde_json::json;

use crate::helpers::{spawn_app, AGENT, PIN, T0};

#[actix_web::test]
async fn the_right_pin_updates_title_and_body_and_bumps_version_and_time() {
    let app = spawn_app().await;
    app.publish("notes", "Notes").await;
    app.clock.advance(30);
    let r = app
        .put_page(
            "notes",
            Some(PIN),
            AGENT,
            json!({"title": " Better notes ", "body": "New body"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json(), json!({"slug": "notes", "version": 2}));
    let page = app.fetch("/api/pages/notes").await.json();
    assert_eq!(
        (page["title"].as_str(), page["body"].as_str()),
        (Some("Better notes"), Some("New body"))
    );
    assert_eq!(
        (page["version"].as_i64(), page["updated_at"].as_i64()),
        (Some(2), Some(T0 + 30))
    );
    assert_eq!(page["created_at"], T0);

    // One field alone keeps the other; the same text again is still a new version.
    let r = app
        .put_page("notes", Some(PIN), AGENT, json!({"body": "Only body"}))
        .await;
    assert_eq!(r.json()["version"], 3);
    let r = app
        .put_page("notes", Some(PIN), AGENT, json!({"body": "Only body"}))
        .await;
    assert_eq!(r.json()["version"], 4);
    assert_eq!(
        app.stored("notes"),
        (4, "Better notes".into(), "Only body".into())
    );
    assert!(app.fetch("/p/notes").await.text.contains("Only body"));
}

#[actix_web::test]
async fn a_missing_or_wrong_pin_is_403_and_changes_nothing() {
    let app = spawn_app().await;
    app.publish("notes", "Notes").await;
    let before = app.stored("notes");
    app.put_page("notes", None, AGENT, json!({"title": "Hijacked"}))
        .await
        .problem(403, "pin-required");
    for wrong in [
        "wrong pin!",
        "correct horse batter",
        "CORRECT HORSE BATTERY",
        "12",
    ] {
        app.put_page("notes", Some(wrong), AGENT, json!({"title": "Hijacked"}))
            .await
            .problem(403, "wrong-pin");
    }
    app.act("notes", "archive", Some("wrong pin!"), AGENT)
        .await
        .problem(403, "wrong-pin");
    app.act("notes", "claim", None, AGENT)
        .await
        .problem(403, "pin-required");
    assert_eq!(app.stored("notes"), before);
    assert!(app.fetch("/").await.text.contains("/p/notes\""));
}

#[actix_web::test]
async fn a_page_published_without_a_pin_cannot_be_changed() {
    let app = spawn_app().await;
    let r = app.create(json!({"slug": "open", "title": "Open"})).await;
    assert_eq!(r.status, 201);
    for pin in [None, Some(PIN)] {
        app.put_page("open", pin, AGENT, json!({"title": "Changed"}))
            .await
            .problem(403, "page-locked");
        app.act("open", "archive", pin, AGENT)
            .await
            .problem(403, "page-locked");
        app.act("open", "claim", pin, AGENT)
            .await
            .problem(403, "page-locked");
    }
    // Imported pages without a PIN are the same.
    app.put_page("vim", Some(PIN), AGENT, json!({"title": "x"}))
        .await
        .problem(403, "page-locked");
    assert_eq!(app.stored("open").0, 1);
}

#[actix_web::test]
async fn an_invalid_update_is_refused_before_the_pin_is_checked() {
    let app = spawn_app().await;
    app.publish("notes", "Notes").await;
    for (body, field) in [
        (json!({}), "title"),
        (json!({"title": ""}), "title"),
        (json!({"title": "t".repeat(201)}), "title"),
        (json!({"body": "x".repeat(256 * 1024 + 1)}), "body"),
        (json!({"title": "t", "slug": "other"}), "slug"),
        (json!({"title": 1}), "title"),
    ] {
        let p = app
            .put_page("notes", Some("wrong pin!"), AGENT, body.clone())
            .await
            .problem(400, "validation");
        assert_eq!(p["field"], field, "{body}");
    }
    assert_eq!(app.stored("notes").0, 1);
}

#[actix_web::test]
async fn an_unknown_slug_is_404_on_every_pin_route() {
    let app = spawn_app().await;
    app.put_page("nope", Some(PIN), AGENT, json!({"title": "t"}))
        .await
        .problem(404, "not-found");
    app.act("nope", "archive", Some(PIN), AGENT)
        .await
        .problem(404, "not-found");
    app.act("nope", "claim", Some(PIN), AGENT)
        .await
        .problem(404, "not-found");
    app.act("Bad_Slug", "claim", Some(PIN), AGENT)
        .await
        .problem(404, "not-found");
}

#[actix_web::test]
async fn a_pin_header_that_is_not_utf8_is_a_validation_problem_and_not_counted() {
    let app = spawn_app().await;
    app.publish("notes", "Notes").await;
    let r = app
        .client
        .put(app.url("/api/pages/notes"))
        .header("X-Forwarded-For", AGENT)
        .header(
            "X-Page-Pin",
            reqwest::header::HeaderValue::from_bytes(b"\xff\xfe123456").unwrap(),
        )
        .json(&json!({"title": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let p: serde_json::Value = r.json().await.unwrap();
    assert_eq!(p["type"], "/problems/validation");
    assert_eq!(p["field"], "X-Page-Pin");
    let pin_key = app
        .state
        .budgets
        .pin_failures
        .keys(&agent_pages::client_ip::ClientIp::from_addr(
            AGENT.parse().unwrap(),
        ))
        .0
        .remove(0);
    assert_eq!(app.counter_row(&pin_key), None, "no failure counted");
}
