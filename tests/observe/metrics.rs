//! `/metrics` of a real server (spawn_app: real HTTP, a real SQLite file): every
//! series the dashboard and the alert rules read is there before any traffic, and
//! each moves with the requests that should move it, by labels from fixed sets only.

use serde_json::{json, Value};

use crate::dashboard::dashboard_expressions;
use crate::helpers::{spawn_app, TestApp};
use crate::repo;

const CLIENT: &str = "198.51.100.23";
const PIN: &str = "correct horse battery";
const MCP_VERSION: &str = "2025-11-25";

/// One sample of the text exposition: its name, labels and value.
#[derive(Debug)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// The samples of an exposition text (label values here hold no quotes or commas).
pub fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("name value");
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            let labels = labels
                .split(',')
                .filter(|p| !p.is_empty())
                .map(|pair| {
                    let (k, v) = pair.split_once('=').expect("k=v");
                    (k.to_owned(), v.trim_matches('"').to_owned())
                })
                .collect();
            Sample {
                name: name.to_owned(),
                labels,
                value: value.parse().expect("a number"),
            }
        })
        .collect()
}

/// The sum of the samples named `name` carrying every label of `labels`.
pub fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    samples(text)
        .iter()
        .filter(|s| s.name == name)
        .filter(|s| {
            labels
                .iter()
                .all(|(k, v)| s.labels.iter().any(|(sk, sv)| sk == k && sv == v))
        })
        .map(|s| s.value)
        .sum()
}

/// Every `agent_pages_…` name in `text`.
pub fn metric_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = text
        .match_indices("agent_pages_")
        .map(|(at, _)| {
            text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Every expression of the alert rules.
pub fn alert_expressions() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("deploy/prometheus/alerts.yml")).unwrap();
    let rules: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    rules["groups"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_sequence().unwrap().iter())
        .map(|r| r["expr"].as_str().unwrap().to_owned())
        .collect()
}

async fn post_mcp(app: &TestApp, message: Value) -> Value {
    let r = app
        .client
        .post(format!("{}/mcp", app.address))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", MCP_VERSION)
        .header("X-Forwarded-For", CLIENT)
        .body(message.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

#[actix_web::test]
async fn every_series_the_dashboard_and_the_alerts_read_is_on_metrics_before_any_traffic() {
    let app = spawn_app().await;
    let scrape = app.metrics().await;
    let exported: Vec<String> = samples(&scrape).into_iter().map(|s| s.name).collect();
    let mut read = dashboard_expressions();
    read.extend(alert_expressions());
    let names = metric_names(&read.join("\n"));
    assert!(names.len() >= 15, "{names:?}");
    for name in &names {
        assert!(
            exported.contains(name),
            "{name} is read by the dashboard or the alerts but not on /metrics"
        );
    }
    // The bounds the gauges are drawn against, and the build.
    assert_eq!(
        value(&scrape, "agent_pages_search_cache_max_bytes", &[]),
        app.state.search.settings.cache_max_bytes as f64
    );
    assert_eq!(
        value(&scrape, "agent_pages_search_scorer_slots", &[]),
        app.state.search.settings.concurrency as f64
    );
    let build = samples(&scrape)
        .into_iter()
        .find(|s| s.name == "agent_pages_build_info")
        .expect("build info");
    assert_eq!(build.value, 1.0);
    assert!(build
        .labels
        .contains(&("version".into(), env!("CARGO_PKG_VERSION").into())));
    let commit = &build.labels.iter().find(|(k, _)| k == "commit").unwrap().1;
    assert!(!commit.is_empty());
    assert_eq!(
        value(&scrape, "agent_pages_ready", &[("reason", "ok")]),
        1.0
    );
}

#[actix_web::test]
async fn requests_are_timed_by_route_family_and_status_class_and_no_query_or_client_is_a_label() {
    let app = spawn_app().await;
    let before = app.metrics().await;
    let secret = "zebrasecretquery";
    assert_eq!(app.search(secret, CLIENT).await.status(), 200);
    let get = |path: &str| app.client.get(format!("{}{path}", app.address)).send();
    assert_eq!(get("/api/pages").await.unwrap().status(), 200);
    assert_eq!(get("/p/no-such-page").await.unwrap().status(), 404);
    assert_eq!(get("/healthz").await.unwrap().status(), 200);
    post_mcp(
        &app,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
    )
    .await;
    let after = app.metrics().await;
    let count = "agent_pages_http_request_duration_seconds_count";
    for (family, class) in [
        ("search", "2xx"),
        ("api", "2xx"),
        ("pages", "4xx"),
        ("other", "2xx"),
        ("mcp", "2xx"),
    ] {
        let labels = [("family", family), ("outcome", class)];
        assert_eq!(
            value(&after, count, &labels) - value(&before, count, &labels),
            1.0,
            "{family} {class}"
        );
    }
    for leak in [secret, CLIENT, "no-such-page"] {
        assert!(!after.contains(leak), "{leak} on /metrics");
    }
}

#[actix_web::test]
async fn store_calls_are_counted_by_result_and_readiness_names_the_failing_store() {
    let mut app = spawn_app().await;
    let calls = "agent_pages_budget_store_calls_total";
    let backend = app.state.budgets.store.kind();
    let before = app.metrics().await;
    let of =
        |text: &str, result: &str| value(text, calls, &[("backend", backend), ("result", result)]);

    // Searches until the minute's budget says no: counted calls, then one refusal
    // (later refusals are answered from the memo of full windows, without a call).
    let mut statuses = Vec::new();
    for _ in 0..30 {
        let status = app.search("kubernetes", CLIENT).await.status().as_u16();
        statuses.push(status);
        if status == 429 {
            break;
        }
    }
    assert_eq!(statuses.last(), Some(&429), "{statuses:?}");
    // And one page read: a page-store call.
    let page = app.client.get(format!("{}/p/vim", app.address)).send();
    assert_eq!(page.await.unwrap().status(), 200);
    let spent = app.metrics().await;
    assert!(of(&spent, "ok") - of(&before, "ok") >= (statuses.len() - 1) as f64);
    assert_eq!(of(&spent, "refused") - of(&before, "refused"), 1.0);
    assert_eq!(of(&spent, "failed"), of(&before, "failed"));
    let pages = |text: &str, result: &str| {
        value(
            text,
            "agent_pages_page_store_calls_total",
            &[
                ("backend", app.state.pages.store.kind()),
                ("result", result),
            ],
        )
    };
    assert!(pages(&spent, "ok") > pages(&before, "ok"));
    assert!(
        value(
            &spent,
            "agent_pages_budget_store_call_duration_seconds_count",
            &[("backend", backend)]
        ) >= of(&spent, "ok") - of(&before, "ok")
    );

    // The store locked past its timeout: a failed call, and readiness says why.
    app.block_budget_store();
    let status = app.search("other words", "198.51.100.99").await.status();
    let blocked = app.metrics().await;
    app.unblock_budget_store();
    assert_eq!(status, 503);
    assert!(of(&blocked, "failed") - of(&spent, "failed") >= 1.0);
    assert_eq!(
        value(&blocked, "agent_pages_ready", &[("reason", "budget_store")]),
        1.0
    );
    assert_eq!(
        value(&blocked, "agent_pages_ready", &[("reason", "ok")]),
        0.0
    );
    assert_eq!(
        value(&blocked, "agent_pages_ready", &[("reason", "page_store")]),
        0.0
    );
    let again = app.metrics().await;
    assert_eq!(value(&again, "agent_pages_ready", &[("reason", "ok")]), 1.0);
    assert_eq!(
        value(&again, "agent_pages_ready", &[("reason", "budget_store")]),
        0.0
    );
}

#[actix_web::test]
async fn publishes_updates_pin_failures_and_mcp_calls_are_counted_by_outcome() {
    let app = spawn_app().await;
    let before = app.metrics().await;
    let created = app
        .client
        .post(format!("{}/api/pages", app.address))
        .header("X-Forwarded-For", CLIENT)
        .json(&json!({"slug": "observed", "title": "Observed page", "body": "Words.", "pin": PIN}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let put = |pin: Option<&str>| {
        let mut r = app
            .client
            .put(format!("{}/api/pages/observed", app.address))
            .header("X-Forwarded-For", CLIENT)
            .json(&json!({"title": "Changed"}));
        if let Some(pin) = pin {
            r = r.header("X-Page-Pin", pin);
        }
        r.send()
    };
    assert_eq!(put(Some("not the pin")).await.unwrap().status(), 403);
    assert_eq!(put(None).await.unwrap().status(), 403);
    assert_eq!(put(Some(PIN)).await.unwrap().status(), 200);

    let read = post_mcp(
        &app,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "read_page", "arguments": {"slug": "vim"}}}),
    )
    .await;
    assert!(read["result"].is_object(), "{read}");
    let missing = post_mcp(
        &app,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "read_page", "arguments": {"slug": "no-such-page"}}}),
    )
    .await;
    assert_eq!(missing["result"]["isError"], true, "{missing}");
    post_mcp(
        &app,
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
               "params": {"name": "drop_tables", "arguments": {}}}),
    )
    .await;

    let after = app.metrics().await;
    let moved = |name: &str, labels: &[(&str, &str)]| {
        value(&after, name, labels) - value(&before, name, labels)
    };
    let writes = "agent_pages_page_writes_total";
    assert_eq!(
        moved(writes, &[("operation", "publish"), ("outcome", "ok")]),
        1.0
    );
    assert_eq!(
        moved(writes, &[("operation", "update"), ("outcome", "wrong-pin")]),
        1.0
    );
    assert_eq!(
        moved(
            writes,
            &[("operation", "update"), ("outcome", "pin-required")]
        ),
        1.0
    );
    assert_eq!(
        moved(writes, &[("operation", "update"), ("outcome", "ok")]),
        1.0
    );
    let pins = "agent_pages_pin_failures_total";
    assert_eq!(moved(pins, &[("outcome", "wrong")]), 1.0);
    assert_eq!(moved(pins, &[("outcome", "missing")]), 1.0);
    assert_eq!(moved(pins, &[]), 2.0);
    let tools = "agent_pages_mcp_tool_calls_total";
    assert_eq!(
        moved(tools, &[("tool", "read_page"), ("outcome", "ok")]),
        1.0
    );
    assert_eq!(
        moved(tools, &[("tool", "read_page"), ("outcome", "error")]),
        1.0
    );
    assert_eq!(
        moved(tools, &[("tool", "unknown"), ("outcome", "unknown_tool")]),
        1.0
    );
    for leak in ["drop_tables", "observed", PIN, "no-such-page"] {
        assert!(!after.contains(leak), "{leak} on /metrics");
    }
}
