//! A real Prometheus (Debian's `prometheus`, or `PROMETHEUS`) scraping a real server
//! every second, with the alert rules loaded: the outcome matrix is driven (hit,
//! miss, 429, busy 503, budget store down, a publish, a wrong PIN, an MCP call),
//! then every dashboard expression and every alert expression is evaluated through
//! Prometheus' HTTP API.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::dashboard::dashboard_expressions;
use crate::helpers::{spawn_app_with, support};
use crate::metrics::{alert_expressions, metric_names};
use crate::repo;

/// How long Prometheus may take to show a scrape or an evaluation; reaching it
/// fails the test.
const DEADLINE: Duration = Duration::from_secs(90);

/// What the dashboard's `$__rate_interval` stands for here: many 1 s scrapes.
const RATE_INTERVAL: &str = "1m";

struct Prometheus {
    _process: support::ChildGuard,
    url: String,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Prometheus scraping `target` (`127.0.0.1:PORT`) as job `agent-pages` every
    /// second, evaluating deploy/prometheus/alerts.yml every second.
    fn start(target: &str) -> Self {
        let program = support::require_program("prometheus", "PROMETHEUS", "prometheus");
        let dir = tempfile::tempdir().unwrap();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - {rules}\n\
             scrape_configs:\n  - job_name: agent-pages\n    static_configs:\n      - targets: [\"{target}\"]\n",
            rules = repo().join("deploy/prometheus/alerts.yml").display(),
        );
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).unwrap();
        let port = support::free_port();
        let mut command = Command::new(program);
        command
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn");
        let mut process = support::ChildGuard::spawn("prometheus", command, dir.path());
        process.wait_for_port(port);
        Self {
            _process: process,
            url: format!("http://127.0.0.1:{port}"),
            client: reqwest::Client::new(),
            _dir: dir,
        }
    }

    /// `GET /api/v1/{path}` with `query`; the answer's `data`, after checking its
    /// `status` is `success`.
    async fn api(&self, path: &str, query: &[(&str, &str)]) -> Value {
        let answer: Value = self
            .client
            .get(format!("{}/api/v1/{path}", self.url))
            .query(query)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(answer["status"], "success", "{path} {query:?}: {answer}");
        answer["data"].clone()
    }

    /// The instant vector `expr` evaluates to now.
    async fn query(&self, expr: &str) -> Vec<Value> {
        let data = self.api("query", &[("query", expr)]).await;
        assert_eq!(data["resultType"], "vector", "{expr}: {data}");
        data["result"].as_array().unwrap().clone()
    }

    /// Polls `expr` until some series of it has the value `want`.
    async fn wait_for(&self, expr: &str, want: &str) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let result = self.query(expr).await;
            if result.iter().any(|s| s["value"][1] == want) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{expr} never reached {want} in Prometheus: {result:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[actix_web::test]
async fn a_real_prometheus_evaluates_every_dashboard_and_alert_expression_over_the_outcome_matrix()
{
    let mut app = spawn_app_with(|s| s.search.concurrency = 2).await;
    let target = app.metrics_address.trim_start_matches("http://").to_owned();
    let prometheus = Prometheus::start(&target);
    // A sample from before any traffic, so every counter's rate has two points.
    prometheus.wait_for("up{job=\"agent-pages\"}", "1").await;

    // Miss, then hit.
    let client = "198.51.100.31";
    assert_eq!(app.search("kubernetes", client).await.status(), 200);
    assert_eq!(app.search("kubernetes", client).await.status(), 200);
    // 503-busy: both scorer slots held by blocked scorings, then a third miss.
    let a = app.spawn_search("block one", "198.51.100.32");
    let b = app.spawn_search("block two", "198.51.100.33");
    app.faults.wait_blocked(2).await;
    assert_eq!(app.search("golang", "198.51.100.34").await.status(), 503);
    app.faults.open();
    assert_eq!(a.await.unwrap(), 200);
    assert_eq!(b.await.unwrap(), 200);
    // 429: one client past its minute budget.
    let mut status = 200;
    for _ in 0..30 {
        status = app.search("vim", "198.51.100.35").await.status().as_u16();
        if status == 429 {
            break;
        }
    }
    assert_eq!(status, 429);
    // The budget store down: 503-budget.
    app.block_budget_store();
    let down = app.search("curl", "198.51.100.36").await.status();
    app.unblock_budget_store();
    assert_eq!(down, 503);
    // A publish, a wrong PIN, an MCP call.
    let created = app
        .client
        .post(format!("{}/api/pages", app.address))
        .header("X-Forwarded-For", client)
        .json(&json!({"slug": "scraped", "title": "Scraped page", "body": "Words.", "pin": "a good long pin"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let wrong = app
        .client
        .put(format!("{}/api/pages/scraped", app.address))
        .header("X-Forwarded-For", client)
        .header("X-Page-Pin", "not the pin")
        .json(&json!({"title": "Changed"}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 403);
    let call = app
        .client
        .post(format!("{}/mcp", app.address))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("X-Forwarded-For", client)
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "read_page", "arguments": {"slug": "vim"}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(call.status(), 200);

    // Prometheus has scraped the last of it.
    prometheus
        .wait_for(
            "agent_pages_mcp_tool_calls_total{tool=\"read_page\",outcome=\"ok\"}",
            "1",
        )
        .await;
    for (outcome, at_least) in [
        ("hit", 1),
        ("miss", 1),
        ("429-minute", 1),
        ("503-busy", 1),
        ("503-budget", 1),
    ] {
        let expr =
            format!("agent_pages_search_requests_total{{outcome=\"{outcome}\"}} >= {at_least}");
        assert_eq!(prometheus.query(&expr).await.len(), 1, "{expr}");
    }
    for expr in [
        "agent_pages_page_writes_total{operation=\"publish\",outcome=\"ok\"} == 1",
        "agent_pages_pin_failures_total{outcome=\"wrong\"} == 1",
        "agent_pages_budget_store_calls_total{result=\"failed\"} >= 1",
        "agent_pages_budget_store_calls_total{result=\"refused\"} >= 1",
    ] {
        assert_eq!(prometheus.query(expr).await.len(), 1, "{expr}");
    }

    // Every metric either reads is in Prometheus, and every selector (name and label
    // matchers) picks series: a misspelt label value would pick none.
    let dashboard = dashboard_expressions();
    let alerts = alert_expressions();
    let mut all = dashboard.clone();
    all.extend(alerts.iter().cloned());
    let known: Vec<String> = prometheus
        .api("label/__name__/values", &[])
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_owned())
        .collect();
    for name in metric_names(&all.join("\n")) {
        assert!(known.contains(&name), "{name} is not in Prometheus");
    }
    for selector in selectors(&all.join("\n")) {
        assert!(
            !prometheus.query(&selector).await.is_empty(),
            "{selector} selects no series"
        );
    }

    // Every dashboard expression returns series.
    for expr in &dashboard {
        let expr = expr.replace("$__rate_interval", RATE_INTERVAL);
        assert!(
            !prometheus.query(&expr).await.is_empty(),
            "the dashboard's {expr} returns no series"
        );
    }
    // Every alert expression evaluates (an error fails `api`), and Prometheus' own
    // evaluation of every rule is healthy.
    for expr in &alerts {
        prometheus.query(expr).await;
    }
    let deadline = Instant::now() + DEADLINE;
    loop {
        let groups = prometheus.api("rules", &[]).await;
        let rules: Vec<Value> = groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["rules"].as_array().unwrap().clone())
            .collect();
        assert_eq!(rules.len(), alerts.len());
        let evaluated = rules.iter().all(|r| {
            !r["lastEvaluation"]
                .as_str()
                .unwrap_or("0001")
                .starts_with("0001")
        });
        if evaluated {
            for rule in &rules {
                assert_eq!(rule["health"], "ok", "{rule}");
            }
            break;
        }
        assert!(
            Instant::now() < deadline,
            "rules never evaluated: {rules:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every vector selector `agent_pages_…{…}` (or bare name) in `text`.
fn selectors(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("agent_pages_") {
        let rest = &text[at..];
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let selector = match rest[name_len..].strip_prefix('{') {
            Some(matchers) => {
                let end = matchers.find('}').expect("a closed selector");
                rest[..name_len + 1 + end + 1].to_owned()
            }
            None => rest[..name_len].to_owned(),
        };
        if !found.contains(&selector) {
            found.push(selector);
        }
    }
    found
}
