//! MCP with the page store down: the pages in PostgreSQL behind a forwarder that
//! cuts the link, the budget in Redis (up). Every tool that needs the pages is a
//! tool error (`isError`, not a JSON-RPC error) whose structured problem is 503
//! `/problems/storage-unavailable` with `retry_after` 5, the same answer as over
//! HTTP, and nothing is written. (The budget store down is `tests/mcp/stores_down.rs`.)

use serde_json::{json, Value};

use super::forwarder::Forwarder;
use super::storage_row::app_with_pages_behind;
use crate::helpers::{pg_server, TestApp, PIN};

const AGENT: &str = "198.51.100.95";

/// `tools/call` of `name` with `arguments` over `/mcp` (Streamable HTTP, one
/// JSON-RPC request per POST): the tool result.
async fn call(app: &TestApp, name: &str, arguments: Value) -> Value {
    let message = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}
    });
    let r = app
        .client
        .post(format!("{}/mcp", app.address))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("X-Forwarded-For", AGENT)
        .header("MCP-Protocol-Version", "2025-11-25")
        .body(message.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.unwrap();
    assert!(answer.get("error").is_none(), "{answer}");
    answer["result"].clone()
}

/// The structured problem of a tool error of 503 `kind`, with its wait in the
/// text for models too.
#[track_caller]
fn assert_unavailable(result: &Value, kind: &str, retry_after: u64) {
    assert_eq!(result["isError"], true, "{result}");
    let p = &result["structuredContent"];
    assert_eq!(p["type"], format!("/problems/{kind}"), "{result}");
    assert_eq!(p["status"], 503, "{result}");
    assert_eq!(p["retry_after"], retry_after, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("Retry after {retry_after} seconds")),
        "{text}"
    );
}

#[actix_web::test]
async fn with_the_page_store_down_mcp_tools_are_storage_unavailable_errors_and_write_nothing() {
    let forwarder = Forwarder::start(pg_server::shared().port());
    let app = app_with_pages_behind(&forwarder).await;
    let published = call(
        &app,
        "publish_page",
        json!({"slug": "before", "title": "Written before", "body": "Words.", "pin": PIN}),
    )
    .await;
    assert_ne!(published["isError"], true, "{published}");
    let state = || {
        app.sql_rows(
            "SELECT (SELECT count(*) FROM pages), (SELECT sum(current_version) FROM pages)",
        )
    };
    let before = state();

    forwarder.cut();
    let search = call(&app, "search_pages", json!({"query": "written before"})).await;
    assert_unavailable(&search, "storage-unavailable", 5);
    let read = call(&app, "read_page", json!({"slug": "before"})).await;
    assert_unavailable(&read, "storage-unavailable", 5);
    let list = call(&app, "list_pages", json!({})).await;
    assert_unavailable(&list, "storage-unavailable", 5);
    let publish = call(
        &app,
        "publish_page",
        json!({"slug": "during", "title": "Written during", "body": "Lost?", "pin": PIN}),
    )
    .await;
    assert_unavailable(&publish, "storage-unavailable", 5);
    // Read past the forwarder: nothing was written.
    assert_eq!(state(), before, "a refused call wrote");

    forwarder.mend();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let read = call(&app, "read_page", json!({"slug": "before"})).await;
        if read["isError"] != true {
            break;
        }
        assert_unavailable(&read, "storage-unavailable", 5);
        assert!(std::time::Instant::now() < deadline, "never back: {read}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        app.sql_i64("SELECT count(*) FROM pages WHERE slug = 'during'"),
        0
    );
}
