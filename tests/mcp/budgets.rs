//! MCP calls spend the same budgets as HTTP requests from the same client, once a
//! call; PINs reach no result, error or log.

use serde_json::json;

use crate::helpers::{spawn_app, spawn_app_with, PIN};
use agent_pages::budget::Budget;

const CLIENT: &str = "203.0.113.40";

#[actix_web::test]
async fn a_search_spends_one_search_of_the_client_and_nothing_else_does() {
    let app = spawn_app().await;
    app.call_as("search_pages", json!({"query": "kubernetes"}), CLIENT)
        .await
        .ok();
    assert_eq!(app.counters(CLIENT), (1, 1));
    // A hit spends one as well: the budget is spent before the cache is asked.
    app.call_as("search_pages", json!({"query": "kubernetes"}), CLIENT)
        .await
        .ok();
    assert_eq!(app.counters(CLIENT), (2, 2));
    // The same client over HTTP counts on the same windows.
    let (status, _, _) = app.search_json("kubernetes", CLIENT).await;
    assert_eq!(status, 200);
    assert_eq!(app.counters(CLIENT), (3, 3));
    // Gate 1 refusals, listing, reading and tools/list spend nothing.
    app.call_as("search_pages", json!({"query": "x".repeat(65)}), CLIENT)
        .await
        .problem(400, "invalid-query");
    app.call_as("read_page", json!({"slug": "vim"}), CLIENT)
        .await
        .ok();
    app.call_as("list_pages", json!({}), CLIENT).await.ok();
    app.mcp("tools/list", json!({}), CLIENT).await.result();
    assert_eq!(app.counters(CLIENT), (3, 3));
    assert_eq!(
        app.outcome_count("hit").await + app.outcome_count("miss").await,
        3
    );
}

#[actix_web::test]
async fn a_spent_search_budget_is_a_tool_error_with_the_wait() {
    let app = spawn_app_with(|s| s.search_budget = Budget::search(2, 100)).await;
    let (status, _, _) = app.search_json("kubernetes", CLIENT).await;
    assert_eq!(status, 200);
    app.call_as("search_pages", json!({"query": "golang"}), CLIENT)
        .await
        .ok();
    let refused = app
        .call_as("search_pages", json!({"query": "vim"}), CLIENT)
        .await;
    let p = refused.problem(429, "rate-limited");
    // The test clock sits on a minute boundary: the whole window is left.
    assert_eq!(p["retry_after"], 60);
    assert!(refused.text().contains("60 seconds"), "{}", refused.text());
    // Another client is not affected.
    app.call_as("search_pages", json!({"query": "vim"}), "203.0.113.41")
        .await
        .ok();
}

#[actix_web::test]
async fn each_write_spends_one_of_the_publish_budget_shared_with_http() {
    let app = spawn_app_with(|s| s.publish_budget = Budget::publish(3, 100)).await;
    let (status, _) = app
        .http_create(json!({"title": "Over HTTP", "pin": PIN}), CLIENT)
        .await;
    assert_eq!(status, 201);
    app.call_as(
        "publish_page",
        json!({"title": "Over MCP", "pin": PIN}),
        CLIENT,
    )
    .await
    .ok();
    app.call_as(
        "update_page",
        json!({"slug": "over-http", "pin": PIN, "body": "changed"}),
        CLIENT,
    )
    .await
    .ok();
    let refused = app
        .call_as(
            "archive_page",
            json!({"slug": "over-mcp", "pin": PIN}),
            CLIENT,
        )
        .await;
    let p = refused.problem(429, "publish-rate-limited");
    assert_eq!(p["retry_after"], 60);
    let (status, body) = app.http_create(json!({"title": "Again"}), CLIENT).await;
    assert_eq!(status, 429, "{body}");
    // Reads spend none of it.
    app.call_as("read_page", json!({"slug": "over-mcp"}), CLIENT)
        .await
        .ok();
    app.call_as(
        "publish_page",
        json!({"title": "Elsewhere"}),
        "203.0.113.41",
    )
    .await
    .ok();
}

#[actix_web::test]
async fn wrong_pins_over_mcp_and_http_count_against_one_failure_budget() {
    let app = spawn_app().await;
    app.mcp_publish("vault", "Vault").await;
    for i in 0..5 {
        let (status, body) = app
            .http_put(
                "vault",
                &format!("guess-{i:02}"),
                CLIENT,
                json!({"title": "x"}),
            )
            .await;
        assert_eq!(
            (status, &body["type"]),
            (403, &json!("/problems/wrong-pin"))
        );
    }
    for i in 5..10 {
        app.call_as(
            "archive_page",
            json!({"slug": "vault", "pin": format!("guess-{i:02}")}),
            CLIENT,
        )
        .await
        .problem(403, "wrong-pin");
    }
    // The 11th attempt, over either, is refused even with the right PIN.
    let p = app
        .call_as(
            "update_page",
            json!({"slug": "vault", "pin": PIN, "body": "x"}),
            CLIENT,
        )
        .await
        .problem(429, "too-many-pin-failures");
    assert_eq!(p["retry_after"], 3600);
    let (status, _) = app
        .http_put("vault", PIN, CLIENT, json!({"title": "x"}))
        .await;
    assert_eq!(status, 429);
    // Another client still gets in with the right PIN.
    app.call_as(
        "claim_page",
        json!({"slug": "vault", "pin": PIN}),
        "203.0.113.41",
    )
    .await
    .ok();
}

#[actix_web::test]
async fn pins_and_queries_reach_no_log_even_at_debug() {
    capture();
    let app = spawn_app().await;
    app.mcp_publish("secret", "Secret").await;
    app.call(
        "archive_page",
        json!({"slug": "secret", "pin": "guessing-pin-123"}),
    )
    .await
    .problem(403, "wrong-pin");
    app.call("search_pages", json!({"query": "zebrafish lantern"}))
        .await
        .ok();
    let logs = logs();
    assert!(
        logs.contains("wrong page PIN"),
        "the failure is logged: {logs}"
    );
    for secret in [PIN, "guessing-pin-123", "zebrafish", "lantern"] {
        assert!(!logs.contains(secret), "{secret} in the log");
    }
}

use std::io::Write;
use std::sync::{Mutex, Once};

static LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Installs, once for this binary, the service's own log filter at `debug` (the MCP
/// SDK capped as in production) writing to [`LOG`]: every test's lines land there,
/// so the check covers the PINs of the other tests too.
fn capture() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        tracing_subscriber::fmt()
            .with_env_filter(agent_pages::telemetry::capped(
                tracing_subscriber::EnvFilter::new("debug"),
            ))
            .with_writer(|| Capture)
            .with_ansi(false)
            .init();
    });
}

fn logs() -> String {
    String::from_utf8_lossy(&LOG.lock().unwrap()).into_owned()
}

struct Capture;

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOG.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
