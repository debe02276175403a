//! The admission gate and the signals operators read: rate-limit headers and
//! `/metrics`.

use prometheus_parse::{Scrape, Value};

use crate::helpers::{header, spawn_app, spawn_app_with, T0};

#[actix_web::test]
async fn beyond_max_in_flight_searches_get_503_before_spending_any_budget() {
    let app = spawn_app_with(|s| {
        s.search.max_in_flight = 4;
        s.search.concurrency = 4;
    })
    .await;
    // Four slow scorings hold the four admission permits until they end.
    let held: Vec<_> = (0..4)
        .map(|i| app.spawn_search(&format!("block slow {i}"), &format!("198.51.100.{i}")))
        .collect();
    app.faults.wait_blocked(4).await;

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
async fn joins_give_their_admission_permit_back_so_fifty_join_one_held_scoring() {
    let app = spawn_app_with(|s| {
        s.search.max_in_flight = 8;
        s.search.concurrency = 1;
    })
    .await;
    let leader = app.spawn_search_full("block shared", "198.51.100.200");
    app.faults.wait_blocked(1).await;
    let mut joiners = Vec::new();
    for i in 0..50 {
        joiners.push(app.spawn_search_full("block shared", &format!("198.51.101.{i}")));
        // One after another: each has joined before the next is sent.
        app.wait_waiters(i + 2).await;
    }
    let m = app.metric_values().await;
    assert_eq!(
        m["agent_pages_search_in_flight"], 1.0,
        "only the leader holds a permit while 50 wait"
    );
    app.faults.open();
    let first = leader.await.unwrap();
    assert_eq!((first.0, first.1.as_str()), (200, "miss"));
    let results =
        |body: &str| serde_json::from_str::<serde_json::Value>(body).unwrap()["results"].clone();
    for j in joiners {
        let (status, cache, body) = j.await.unwrap();
        assert_eq!((status, cache.as_str()), (200, "join"));
        assert_eq!(results(&body), results(&first.2));
    }
    assert_eq!(app.outcome_count("join").await, 50);
    assert_eq!(app.outcome_count("503-admission").await, 0);
    assert_eq!(app.faults.scorings(), 1);
}

#[actix_web::test]
async fn distinct_scorings_still_hold_the_ceiling_until_they_end() {
    let app = spawn_app_with(|s| {
        s.search.max_in_flight = 8;
        s.search.concurrency = 8;
    })
    .await;
    let leaders: Vec<_> = (0..8)
        .map(|i| app.spawn_search(&format!("block distinct {i}"), &format!("198.51.100.{i}")))
        .collect();
    app.faults.wait_blocked(8).await;
    let m = app.metric_values().await;
    assert_eq!(m["agent_pages_search_in_flight"], 8.0);
    let r = app.search("block distinct 0", "192.0.2.9").await;
    assert_eq!(
        r.status(),
        503,
        "even a would-be joiner is shed at the ceiling"
    );
    assert_eq!(app.counters("192.0.2.9"), (0, 0));
    assert_eq!(app.outcome_count("503-admission").await, 1);
    app.faults.open();
    for l in leaders {
        assert_eq!(l.await.unwrap(), 200);
    }
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
    let app = spawn_app_with(|s| s.search_budget.set_limit("minute", 6)).await;
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
    // Every label of the outcome table is exported; these were counted, the
    // others are 0.
    let counted = [
        ("303", 1.0),
        ("short", 1.0),
        ("400", 1.0),
        ("miss", 1.0),
        ("hit", 4.0),
        ("500", 1.0),
        ("429-minute", 1.0),
    ];
    let labels = agent_pages::operations::search::outcome::labels(&app.state.budgets.search);
    for (outcome, _) in counted {
        assert!(labels.iter().any(|l| l == outcome), "{outcome} is no label");
    }
    for outcome in &labels {
        let n = counted
            .iter()
            .find(|(label, _)| label == outcome)
            .map_or(0.0, |(_, n)| *n);
        assert_eq!(
            value("agent_pages_search_requests_total", Some(outcome)),
            n,
            "{outcome}"
        );
    }
    assert_eq!(value("agent_pages_search_in_flight", None), 0.0);
    assert_eq!(value("agent_pages_search_scorer_slots_busy", None), 0.0);
    assert_eq!(value("agent_pages_search_cache_entries", None), 1.0);
    assert!(value("agent_pages_search_cache_bytes", None) > 0.0);
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
