//! `publish_page`'s `idempotency_key` (issue 32 §3): the rules of the
//! `Idempotency-Key` header (`tests/api/idempotency.rs`) on the MCP face, the
//! fingerprint being the canonical JSON of the other arguments.

use agent_pages::client_ip::ClientIp;
use agent_pages::operations::idempotency::{client_hash, key_hash, IdempotencyKey};
use serde_json::json;

use crate::helpers::{spawn_app, AGENT, PIN, T0};

fn pages_titled(app: &crate::helpers::TestApp, title: &str) -> i64 {
    app.sql_i64(&format!(
        "SELECT count(*) FROM pages WHERE title = '{title}'"
    ))
}

#[actix_web::test]
async fn a_repeated_call_answers_the_first_answer_and_publishes_once() {
    let app = spawn_app().await;
    let args = json!({"title": "Tool notes", "body": "b", "pin": PIN, "idempotency_key": "t-1"});
    let first = app.call("publish_page", args).await;
    let created = first.ok();
    assert!(!first.text().contains("sent again"), "{}", first.text());
    // The same arguments in another order are the same request.
    let again = app
        .call(
            "publish_page",
            json!({"idempotency_key": "t-1", "pin": PIN, "body": "b", "title": "Tool notes"}),
        )
        .await;
    assert_eq!(again.ok(), created);
    assert!(again.text().contains("sent again"), "{}", again.text());
    assert_eq!(pages_titled(&app, "Tool notes"), 1);

    // Other arguments with the key: reused.
    let p = app
        .call(
            "publish_page",
            json!({"title": "Tool notes", "body": "c", "pin": PIN, "idempotency_key": "t-1"}),
        )
        .await
        .problem(422, "idempotency-key-reused");
    assert_eq!(p["field"], "idempotency_key");
    // Another client's same key is its own.
    let other = app
        .call_as(
            "publish_page",
            json!({"title": "Tool notes", "body": "b", "pin": PIN, "idempotency_key": "t-1"}),
            "203.0.113.9",
        )
        .await
        .ok();
    assert_ne!(other["slug"], created["slug"]);
    assert_eq!(pages_titled(&app, "Tool notes"), 2);
}

#[actix_web::test]
async fn a_call_while_the_first_runs_fails_and_a_bad_key_is_refused() {
    let app = spawn_app().await;
    let client = ClientIp::from_addr(AGENT.parse().unwrap());
    let key = IdempotencyKey::parse("idempotency_key", b"busy").unwrap();
    app.sql(&format!(
        "INSERT INTO idempotency_keys (key_hash, client_hash, fingerprint, state, started_at)
         VALUES ('{}', '{}', 'any', 'running', {T0})",
        key_hash(&client, &key),
        client_hash(&client)
    ));
    app.call(
        "publish_page",
        json!({"title": "Busy", "idempotency_key": "busy"}),
    )
    .await
    .problem(422, "idempotency-key-reused");
    // The running row's own request (its fingerprint) waits.
    let fingerprint = agent_pages::operations::idempotency::Idempotency::of_arguments(
        key.clone(),
        json!({"title": "Busy"}).as_object().unwrap(),
        "idempotency_key",
    )
    .fingerprint;
    app.sql(&format!(
        "UPDATE idempotency_keys SET fingerprint = '{fingerprint}'"
    ));
    let p = app
        .call(
            "publish_page",
            json!({"title": "Busy", "idempotency_key": "busy"}),
        )
        .await
        .problem(409, "idempotency-key-in-flight");
    assert_eq!(p["retry_after"], 1);
    assert_eq!(pages_titled(&app, "Busy"), 0);
    for bad in ["", "a b", "é"] {
        let p = app
            .call(
                "publish_page",
                json!({"title": "Bad", "idempotency_key": bad}),
            )
            .await
            .problem(400, "validation");
        assert_eq!(p["field"], "idempotency_key", "{bad:?}");
    }
    assert_eq!(pages_titled(&app, "Bad"), 0);
}
