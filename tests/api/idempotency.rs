//! Idempotent publishes over HTTP (issue 32 §3): `Idempotency-Key` on
//! `POST /api/pages` — a replay answers the first answer with
//! `Idempotent-Replayed: true` and spends nothing, another body is 422, a request
//! while the first runs is 409, keys expire in a day, are the client's own, are
//! bounded, and only 2xx answers are kept. The store's rules themselves are the
//! contract suite's (`tests/contract/idempotency.rs`).

use agent_pages::client_ip::ClientIp;
use agent_pages::operations::idempotency::{client_hash, key_hash, IdempotencyKey, HEADER};

use crate::helpers::{spawn_app_with, Reply, TestApp, AGENT, T0};

/// `POST /api/pages` of `body` (sent as these exact bytes) from `client`, with
/// `key` in `Idempotency-Key` when given.
async fn post(app: &TestApp, client: &str, key: Option<&str>, body: &str) -> Reply {
    let mut r = app
        .client
        .post(app.url("/api/pages"))
        .header("X-Forwarded-For", client)
        .header("Content-Type", "application/json")
        .body(body.to_owned());
    if let Some(key) = key {
        r = r.header(HEADER, key);
    }
    Reply::of(r.send().await.unwrap()).await
}

/// (minute, hour) publish counters of `client` as stored (0 without a row).
fn publish_counters(app: &TestApp, client: &str) -> (i64, i64) {
    let keys = app
        .state
        .budgets
        .publish
        .keys(&ClientIp::from_addr(client.parse().unwrap()));
    let read = |k: &str| -> i64 { app.counter_row(k).map_or(0, |(_, count)| count) };
    (read(&keys.0[0]), read(&keys.0[1]))
}

fn pages_titled(app: &TestApp, title: &str) -> i64 {
    app.sql_i64(&format!(
        "SELECT count(*) FROM pages WHERE title = '{}'",
        title.replace('\'', "''")
    ))
}

const BODY: &str =
    r#"{"title": "Idempotent guide", "body": "text", "pin": "correct horse battery"}"#;

#[actix_web::test]
async fn the_same_key_and_body_publish_once_and_the_replay_spends_nothing() {
    let app = spawn_app_with(|_| {}).await;
    let first = post(&app, AGENT, Some("key-1"), BODY).await;
    assert_eq!(first.status, 201, "{}", first.text);
    assert_eq!(first.header("idempotent-replayed"), None);
    assert!(first.header("ratelimit").is_some());
    assert_eq!(publish_counters(&app, AGENT), (1, 1));

    app.clock.advance(30);
    let again = post(&app, AGENT, Some("key-1"), BODY).await;
    assert_eq!(again.status, 201, "{}", again.text);
    assert_eq!(again.text, first.text, "the same body, byte for byte");
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.header("location"), first.header("location"));
    assert_eq!(again.header("ratelimit"), None, "a replay spends nothing");
    assert_eq!(publish_counters(&app, AGENT), (1, 1));
    assert_eq!(pages_titled(&app, "Idempotent guide"), 1);

    // Without a key every publish is one (`-2`).
    let plain = post(&app, AGENT, None, BODY).await;
    assert_eq!(plain.status, 201, "{}", plain.text);
    assert_eq!(plain.json()["slug"], "idempotent-guide-2");
    // The key is stored hashed, never as sent.
    let stored = app.sql_rows("SELECT key_hash, client_hash FROM idempotency_keys");
    let client = ClientIp::from_addr(AGENT.parse().unwrap());
    let key = IdempotencyKey::parse(HEADER, b"key-1").unwrap();
    assert_eq!(
        stored,
        [[Some(key_hash(&client, &key)), Some(client_hash(&client))]]
    );
}

#[actix_web::test]
async fn the_same_key_with_another_body_is_422_and_publishes_nothing() {
    let app = spawn_app_with(|_| {}).await;
    assert_eq!(post(&app, AGENT, Some("k"), BODY).await.status, 201);
    // One space more is another request.
    let other = BODY.replace("\"text\"", "\"text\" ");
    let refused = post(&app, AGENT, Some("k"), &other).await;
    let problem = refused.problem(422, "idempotency-key-reused");
    assert_eq!(problem["field"], HEADER);
    assert_eq!(pages_titled(&app, "Idempotent guide"), 1);
    assert_eq!(publish_counters(&app, AGENT), (1, 1));
}

#[actix_web::test]
async fn a_key_whose_first_request_still_runs_is_409() {
    let app = spawn_app_with(|_| {}).await;
    // The first request of the key is running: its row, as a claim leaves it.
    let client = ClientIp::from_addr(AGENT.parse().unwrap());
    let key = IdempotencyKey::parse(HEADER, b"busy").unwrap();
    let fingerprint =
        agent_pages::operations::idempotency::Idempotency::of_body(key.clone(), BODY.as_bytes())
            .fingerprint;
    app.sql(&format!(
        "INSERT INTO idempotency_keys (key_hash, client_hash, fingerprint, state, started_at)
         VALUES ('{}', '{}', '{fingerprint}', 'running', {T0})",
        key_hash(&client, &key),
        client_hash(&client)
    ));
    let refused = post(&app, AGENT, Some("busy"), BODY).await;
    refused.problem(409, "idempotency-key-in-flight");
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(pages_titled(&app, "Idempotent guide"), 0);
    assert_eq!(publish_counters(&app, AGENT), (0, 0));
    // A minute on, the claim is abandoned and taken over.
    app.clock.advance(60);
    let taken = post(&app, AGENT, Some("busy"), BODY).await;
    assert_eq!(taken.status, 201, "{}", taken.text);
    assert_eq!(pages_titled(&app, "Idempotent guide"), 1);
}

#[actix_web::test]
async fn a_key_a_day_old_publishes_again() {
    let app = spawn_app_with(|_| {}).await;
    let first = post(&app, AGENT, Some("daily"), BODY).await;
    assert_eq!(first.status, 201, "{}", first.text);
    app.clock.advance(24 * 3600 - 1);
    let replay = post(&app, AGENT, Some("daily"), BODY).await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    app.clock.advance(1);
    let fresh = post(&app, AGENT, Some("daily"), BODY).await;
    assert_eq!(fresh.status, 201, "{}", fresh.text);
    assert_eq!(fresh.header("idempotent-replayed"), None);
    assert_eq!(fresh.json()["slug"], "idempotent-guide-2");
}

#[actix_web::test]
async fn two_clients_keys_do_not_collide() {
    let app = spawn_app_with(|_| {}).await;
    let a = post(&app, AGENT, Some("shared"), BODY).await;
    let b = post(&app, "203.0.113.9", Some("shared"), BODY).await;
    assert_eq!((a.status, b.status), (201, 201), "{} {}", a.text, b.text);
    assert_eq!(b.header("idempotent-replayed"), None);
    assert_ne!(a.json()["slug"], b.json()["slug"]);
    // And another body from the second client is no reuse of the first's key.
    let c = post(
        &app,
        "203.0.113.10",
        Some("shared"),
        r#"{"title": "Other"}"#,
    )
    .await;
    assert_eq!(c.status, 201, "{}", c.text);
}

#[actix_web::test]
async fn a_refused_publish_is_not_kept_and_the_key_can_be_sent_again() {
    let app = spawn_app_with(|s| s.publish_budget.set_limit("minute", 1)).await;
    app.publish("taken", "Taken").await;
    // 409 slug taken (the budget is spent by then): nothing kept.
    app.clock.advance(60);
    let body = r#"{"slug": "taken", "title": "Mine"}"#;
    post(&app, AGENT, Some("retry"), body)
        .await
        .problem(409, "conflict");
    assert_eq!(app.sql_i64("SELECT count(*) FROM idempotency_keys"), 0);
    // 429 budget spent: nothing kept, and the same key with another body then
    // publishes.
    post(&app, AGENT, Some("retry"), r#"{"title": "Mine"}"#)
        .await
        .problem(429, "publish-rate-limited");
    assert_eq!(app.sql_i64("SELECT count(*) FROM idempotency_keys"), 0);
    app.clock.advance(60);
    let done = post(&app, AGENT, Some("retry"), r#"{"title": "Mine"}"#).await;
    assert_eq!(done.status, 201, "{}", done.text);
    assert_eq!(done.header("idempotent-replayed"), None);
}

#[actix_web::test]
async fn a_client_holds_at_most_1000_live_keys() {
    let app = spawn_app_with(|_| {}).await;
    let client = ClientIp::from_addr(AGENT.parse().unwrap());
    let mut rows = Vec::new();
    for n in 0..1000 {
        // The oldest 100 s before now.
        let started = T0 - 100 + n / 100;
        rows.push(format!(
            "('h{n}', '{}', 'f', 'done', {started}, 201, '{{}}')",
            client_hash(&client)
        ));
    }
    app.sql(&format!(
        "INSERT INTO idempotency_keys
             (key_hash, client_hash, fingerprint, state, started_at, status, response)
         VALUES {}",
        rows.join(", ")
    ));
    let refused = post(&app, AGENT, Some("one-more"), BODY).await;
    let problem = refused.problem(429, "too-many-idempotency-keys");
    assert_eq!(problem["field"], HEADER);
    let wait = (24 * 3600 - 100).to_string();
    assert_eq!(refused.header("retry-after"), Some(wait.as_str()));
    assert_eq!(publish_counters(&app, AGENT), (0, 0));
    // Without a key the client publishes; another client has keys of its own.
    assert_eq!(post(&app, AGENT, None, BODY).await.status, 201);
    let other = post(&app, "203.0.113.9", Some("one-more"), BODY).await;
    assert_eq!(other.status, 201, "{}", other.text);
    // Once the oldest keys expire, there is room again.
    app.clock.advance(24 * 3600 - 100);
    let later = post(&app, AGENT, Some("one-more"), BODY).await;
    assert_eq!(later.status, 201, "{}", later.text);
}

#[actix_web::test]
async fn a_key_breaking_its_rule_or_sent_twice_is_400() {
    let app = spawn_app_with(|_| {}).await;
    let long = "k".repeat(256);
    for bad in ["", "a b", &long] {
        let r = post(&app, AGENT, Some(bad), BODY).await;
        let problem = r.problem(400, "validation");
        assert_eq!(problem["field"], HEADER, "{bad:?}");
    }
    let twice = app
        .client
        .post(app.url("/api/pages"))
        .header("X-Forwarded-For", AGENT)
        .header(HEADER, "a")
        .header(HEADER, "b")
        .body(BODY)
        .send()
        .await
        .unwrap();
    let twice = Reply::of(twice).await;
    let problem = twice.problem(400, "validation");
    assert_eq!(problem["field"], HEADER);
    assert_eq!(pages_titled(&app, "Idempotent guide"), 0);
    let longest = "~".repeat(255);
    assert_eq!(post(&app, AGENT, Some(&longest), BODY).await.status, 201);
}
