//! The admission gate and the signals operators read: rate-limit headers and
//! `/metrics`.

use prometheus_parse::{Scrape, Value};

use crate::helpers::{header, spawn_app, spawn_app_with, T0};

#[actix_web::test]
async fn beyond_max_in_flight_searches_get_503_before_spending_any_budget() {
    let app = spawn_app_with(|s| {
        s.search.max_in_flight = 4;
        s.search.concurrency = 1;
    })
    .await;
    // One slow scoring and three joiners hold the four admission permits.
    let held: Vec<_> = (0..4)
        .map(|i| app.spawn_search("block slow", &format!("198.51.100.{i}")))
        .collect();
    app.faults.wait_blocked(1).await;
    app.wait_waiters(4).await;

    let burst: Vec<_> = (0..30)
        .map(|_| app.spawn_search_full("kubernetes", "192.0.2.200"))
        .collect();
    for h in burst {
        assert_eq!(h.await.unwrap().0, 503);
    }
    assert_eq!(app.counters("192.0.2.200"), (0, 0), "no budget spent");
    let r = app.search("kubernetes", "192.0.2.201").await;
    assert_eq!(
        (r.status().as_u16(), header(&r, "retry-after")),
        (503, Some("1"))
    );
    assert!(
        header(&r, "ratelimit").is_none(),
        "the budget was never reached"
    );

    app.faults.open();
    for h in held {
        assert_eq!(h.await.unwrap(), 200);
    }
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("agent_pages_search_in_flight 0"),
        "{metrics}"
    );
    assert!(
        metrics.contains("agent_pages_search_requests_total{outcome=\"503-admission\"} 31"),
        "{metrics}"
    );
}

#[actix_web::test]
async fn rate_limit_headers_show_the_quota_left_and_match_retry_after() {
    let app = spawn_app().await;
    app.clock.set(T0 + 15);
    let fresh = app.search("nginx", "192.0.2.1").await;
    assert_eq!(
        header(&fresh, "ratelimit-policy"),
        Some("\"minute\";q=20;w=60, \"hour\";q=200;w=3600")
    );
    assert_eq!(
        header(&fresh, "ratelimit"),
        Some("\"minute\";r=19;t=45, \"hour\";r=199;t=3585")
    );

    for _ in 0..16 {
        app.search("nginx", "192.0.2.1").await;
    }
    let three_left = app.search("nginx", "192.0.2.1").await;
    assert_eq!(
        header(&three_left, "ratelimit"),
        Some("\"minute\";r=2;t=45, \"hour\";r=182;t=3585")
    );
    for _ in 0..2 {
        app.search("nginx", "192.0.2.1").await;
    }
    let refused = app.search("nginx", "192.0.2.1").await;
    assert_eq!(refused.status(), 429);
    assert_eq!(header(&refused, "retry-after"), Some("45"));
    assert_eq!(header(&refused, "ratelimit"), Some("\"minute\";r=0;t=45"));
    assert!(header(&refused, "ratelimit-policy").is_some());
}

#[actix_web::test]
async fn metrics_parse_as_prometheus_text_and_count_what_happened() {
    let app = spawn_app_with(|s| s.search.rate_per_minute = 6).await;
    let client = "192.0.2.77";
    app.search_raw("q=", client).await; // 303
    app.search("k", client).await; // short
    app.search_raw("q=%FF", client).await; // 400
    app.search("golang", client).await; // miss
    app.search("golang", client).await; // hit
    app.search("panic please", client).await; // 500
    for _ in 0..3 {
        app.search("golang", client).await; // hit, hit, hit
    }
    app.search("golang", client).await; // 429-minute

    let text = app.metrics().await;
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    let value = |name: &str, outcome: Option<&str>| -> f64 {
        scrape
            .samples
            .iter()
            .find(|s| {
                s.metric == name && outcome.is_none_or(|o| s.labels.get("outcome") == Some(o))
            })
            .map(|s| match s.value {
                Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
                _ => f64::NAN,
            })
            .unwrap_or_else(|| panic!("{name} {outcome:?} missing in\n{text}"))
    };
    let counts = [
        ("303", 1.0),
        ("short", 1.0),
        ("400", 1.0),
        ("miss", 1.0),
        ("hit", 4.0),
        ("500", 1.0),
        ("429-minute", 1.0),
        ("429-hour", 0.0),
        ("join", 0.0),
        ("503-busy", 0.0),
        ("503-admission", 0.0),
    ];
    for (outcome, n) in counts {
        assert_eq!(
            value("agent_pages_search_requests_total", Some(outcome)),
            n,
            "{outcome}"
        );
    }
    assert_eq!(value("agent_pages_search_in_flight", None), 0.0);
    assert_eq!(value("agent_pages_search_scorer_slots_busy", None), 0.0);
    assert_eq!(value("agent_pages_search_cache_entries", None), 1.0);
    assert_eq!(value("agent_pages_search_candidates", None), 8.0);
    assert!(value("agent_pages_corpus_generation", None) >= 8.0);
    assert!(
        text.contains("agent_pages_search_scoring_seconds_count 2"),
        "{text}"
    );
    for forbidden in ["golang", "panic", "192.0.2", "ip"] {
        assert!(
            !text.contains(&format!("=\"{forbidden}")),
            "label {forbidden} in\n{text}"
        );
    }
}
