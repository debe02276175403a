//! MCP with the budget store down (the app's redis-server stopped, as in an outage;
//! the pages in SQLite, up): the tools that spend a budget (search, publish) are
//! tool errors whose structured problem is 503 `/problems/budget-unavailable` with
//! `retry_after` 1, as over HTTP, and nothing is written; reading needs no budget
//! and goes on. With Redis back, they answer again. (The page store down is
//! `tests/postgres/mcp_pages_down.rs`: PostgreSQL behind a cut link, which needs no
//! root, where making SQLite's files fail does.)

use agent_pages::clock::Clock as _;
use serde_json::json;

use crate::helpers::{spawn_app_on, Store, ToolResult, PIN};

const CLIENT: &str = "203.0.113.70";

/// The problem of a 503 `kind` tool error, its wait in the text for models too.
#[track_caller]
fn assert_unavailable(result: &ToolResult, kind: &str, retry_after: u64) {
    let p = result.problem(503, kind);
    assert_eq!(p["retry_after"], retry_after, "{p}");
    assert!(
        result
            .text()
            .contains(&format!("Retry after {retry_after} seconds")),
        "{}",
        result.text()
    );
}

#[actix_web::test]
async fn with_the_budget_store_down_search_and_publish_are_budget_unavailable_errors_and_write_nothing(
) {
    let mut app = spawn_app_on(Store::Redis, |_| {}).await;
    app.mcp_publish("before", "Written before").await;
    app.call_as("search_pages", json!({"query": "written before"}), CLIENT)
        .await
        .ok();
    const PAGES: &str = "SELECT count(*), sum(current_version), max(updated_at) FROM pages";
    let before = app.sql_rows(PAGES);

    app.block_budget_store();
    let search = app
        .call_as("search_pages", json!({"query": "written before"}), CLIENT)
        .await;
    assert_unavailable(&search, "budget-unavailable", 1);
    let publish = app
        .call_as(
            "publish_page",
            json!({"slug": "during", "title": "Written during", "body": "Lost?", "pin": PIN}),
            CLIENT,
        )
        .await;
    assert_unavailable(&publish, "budget-unavailable", 1);
    // An edit checks its PIN against the failure budget first: refused the same way.
    let update = app
        .call_as(
            "update_page",
            json!({"slug": "before", "title": "Changed during", "pin": PIN}),
            CLIENT,
        )
        .await;
    assert_unavailable(&update, "budget-unavailable", 1);
    assert_eq!(app.sql_rows(PAGES), before, "a refused call wrote");
    // Reading spends no budget: it goes on.
    let read = app
        .call_as("read_page", json!({"slug": "before"}), CLIENT)
        .await
        .ok();
    assert_eq!(read["title"], "Written before", "{read}");

    // Redis back (empty): once the store has its link again, the tools answer.
    app.unblock_budget_store();
    app.wait_until_async(|| async {
        app.state
            .budgets
            .store
            .check_ready(app.clock.now())
            .await
            .is_ok()
    })
    .await;
    app.call_as("search_pages", json!({"query": "written before"}), CLIENT)
        .await
        .ok();
    assert_eq!(app.counters(CLIENT), (1, 1), "Redis came back empty");
}
