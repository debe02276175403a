//! The publish budget: page writes spend their own two windows per client,
//! both-or-neither, and a refusal is a 429 problem with `Retry-After` and `RateLimit`.

use serde_json::json;

use crate::helpers::{spawn_app_with, AGENT, PIN};

/// (minute, hour) publish counters of `client` as stored (0 without a row).
fn publish_counters(app: &crate::helpers::TestApp, client: &str) -> (i64, i64) {
    let keys = app
        .state
        .budgets
        .publish
        .keys(&agent_pages::client_ip::ClientIp::from_addr(
            client.parse().unwrap(),
        ));
    let read = |k: &str| -> i64 { app.counter_row(k).map_or(0, |(_, count)| count) };
    (read(&keys.0[0]), read(&keys.0[1]))
}

#[actix_web::test]
async fn the_fourth_write_in_a_minute_of_three_is_refused_and_counts_nothing() {
    let app = spawn_app_with(|s| s.publish_budget.set_limit("minute", 3)).await;
    app.clock.set(crate::helpers::T0 + 20);
    let first = app
        .create(json!({"slug": "budgeted", "title": "Budgeted page", "pin": PIN}))
        .await;
    assert_eq!(first.status, 201, "{}", first.text);
    assert_eq!(
        first.header("ratelimit"),
        Some("\"minute\";r=2;t=40, \"hour\";r=299;t=3580")
    );
    assert_eq!(
        first.header("ratelimit-policy"),
        Some("\"minute\";q=3;w=60, \"hour\";q=300;w=3600")
    );
    // An update and an archive are page writes too.
    let update = app
        .put_page(
            "budgeted",
            Some(PIN),
            AGENT,
            json!({"title": "Budgeted again"}),
        )
        .await;
    assert_eq!(update.status, 200, "{}", update.text);
    let archive = app.act("budgeted", "archive", Some(PIN), AGENT).await;
    assert_eq!(archive.status, 200, "{}", archive.text);
    assert_eq!(publish_counters(&app, AGENT), (3, 3));

    let refused = app.create(json!({"title": "One too many"})).await;
    let problem = refused.problem(429, "publish-rate-limited");
    assert_eq!(refused.header("retry-after"), Some("40"));
    assert_eq!(problem["retry_after"], 40);
    assert_eq!(refused.header("ratelimit"), Some("\"minute\";r=0;t=40"));
    assert_eq!(
        publish_counters(&app, AGENT),
        (3, 3),
        "a refusal moves neither window"
    );

    // Another client has its own budget; searching spends none of it.
    let other = app
        .client
        .post(app.url("/api/pages"))
        .header("X-Forwarded-For", "198.51.100.99")
        .json(&json!({"title": "Someone else"}))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 201);
    app.search("kubernetes", AGENT).await;
    assert_eq!(publish_counters(&app, AGENT), (3, 3));

    // The next minute admits again; the hour window kept counting.
    app.clock.set(crate::helpers::T0 + 60);
    let next = app.create(json!({"title": "Next minute"})).await;
    assert_eq!(next.status, 201);
    assert_eq!(publish_counters(&app, AGENT), (1, 4));
}

#[actix_web::test]
async fn a_full_hour_refuses_and_leaves_the_minute_as_it_was() {
    let app = spawn_app_with(|s| s.publish_budget.set_limit("hour", 2)).await;
    for title in ["One", "Two"] {
        assert_eq!(app.create(json!({"title": title})).await.status, 201);
    }
    let refused = app.create(json!({"title": "Three"})).await;
    refused.problem(429, "publish-rate-limited");
    assert_eq!(publish_counters(&app, AGENT), (2, 2));
}

#[actix_web::test]
async fn an_invalid_write_spends_nothing() {
    let app = spawn_app_with(|s| s.publish_budget.set_limit("minute", 1)).await;
    let bad = app.create(json!({"title": "   "})).await;
    bad.problem(400, "validation");
    assert_eq!(publish_counters(&app, AGENT), (0, 0));
    assert_eq!(app.create(json!({"title": "Fine"})).await.status, 201);
}
