//! What every API request gets, `/mcp` gets too: the Origin rule, the body cap, the
//! body deadline and the cap on bodies read at once.

use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncReadExt as _;

use crate::helpers::{spawn_app, spawn_app_with, AGENT};

fn list_message() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
}

#[actix_web::test]
async fn a_foreign_browser_origin_is_refused_and_the_own_or_a_listed_one_served() {
    let app = spawn_app_with(|s| {
        s.mcp_allowed_origins = "https://console.example".parse().unwrap();
    })
    .await;
    let r = app
        .mcp_post(
            &list_message(),
            AGENT,
            Some("2025-11-25"),
            &[("Origin", "https://evil.example")],
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(
        r.headers.get("content-type").unwrap(),
        "application/problem+json"
    );
    assert_eq!(r.json()["type"], "/problems/origin-not-allowed");
    // A rebinding page names its own origin, never the service's: a page served by
    // the service itself and a listed console are fine, as is no Origin at all.
    for origin in [app.address.as_str(), "https://console.example"] {
        let r = app
            .mcp_post(
                &list_message(),
                AGENT,
                Some("2025-11-25"),
                &[("Origin", origin)],
            )
            .await;
        assert_eq!(r.status, 200, "{origin}: {}", r.text);
    }
    let r = app
        .mcp_post(&list_message(), AGENT, Some("2025-11-25"), &[])
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

#[actix_web::test]
async fn by_default_every_other_origin_is_refused() {
    let app = spawn_app().await;
    for origin in [
        "null",
        "http://localhost:3000",
        "https://pages.example.evil",
    ] {
        let r = app
            .mcp_post(
                &list_message(),
                AGENT,
                Some("2025-11-25"),
                &[("Origin", origin)],
            )
            .await;
        assert_eq!(r.status, 403, "{origin}");
    }
}

#[actix_web::test]
async fn a_body_over_the_api_cap_is_refused_from_its_length() {
    let app = spawn_app().await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
        agent_pages::http::body::BODY_LIMIT + 1
    );
    let (status, answer) = app.raw_exchange(head.as_bytes()).await;
    assert_eq!(status, 413, "{answer}");
    assert!(answer.contains("/problems/payload-too-large"), "{answer}");
}

#[actix_web::test]
async fn a_slow_body_gets_the_api_deadline() {
    let app = spawn_app_with(|s| s.requests.body_timeout = Duration::from_secs(1)).await;
    let mut slow = app.raw_connect(SLOW_HEAD.as_bytes()).await;
    let mut answer = Vec::new();
    slow.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("/problems/request-timeout"), "{answer}");
}

#[actix_web::test]
async fn a_body_being_read_holds_one_of_the_open_bodies() {
    let app = spawn_app_with(|s| {
        s.requests.body_timeout = Duration::from_secs(600);
        s.requests.max_open_bodies = 1;
    })
    .await;
    let slow = app.raw_connect(SLOW_HEAD.as_bytes()).await;
    // Wait for the server's own count, not for a 503 by polling: a poll can reach
    // the gate before the slow request's head has been read.
    app.wait_until(|| app.state.api.bodies.open() == 1).await;
    // While it holds the only slot, another body is refused at once.
    let r = app
        .mcp_post(&list_message(), AGENT, Some("2025-11-25"), &[])
        .await;
    assert_eq!(r.status, 503, "{}", r.text);
    assert_eq!(r.json()["type"], "/problems/too-many-open-bodies");
    assert_eq!(r.headers.get("retry-after").unwrap(), "1");
    // A client that hangs up gives its slot back.
    drop(slow);
    app.wait_until(|| app.state.api.bodies.open() == 0).await;
    let r = app
        .mcp_post(&list_message(), AGENT, Some("2025-11-25"), &[])
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

/// A POST whose body never comes in full.
const SLOW_HEAD: &str =
    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
    Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{";
