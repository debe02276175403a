//! Every row of SPEC §5's outcome matrix (the seed's worked examples A–F, plus the
//! admission, 429-hour and join rows): status, counters, candidate fetch and scorer
//! slot, and the `/metrics` outcome counter of that row (and of no other), observed
//! from outside the handler; the JSON variant's problem `type`; and which answers
//! carry the `RateLimit` headers (those that reached the budget).

use std::collections::BTreeMap;

use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use crate::helpers::{header, spawn_app, spawn_app_with, TestApp, T0};

const CLIENT: &str = "203.0.113.10";

fn assert_search_headers(r: &reqwest::Response) {
    assert_eq!(header(r, "cache-control"), Some("no-store"));
    assert_eq!(header(r, "referrer-policy"), Some("no-referrer"));
}

/// `RateLimit-Policy` and `RateLimit` are both there (`present`) or both absent.
fn assert_rate_limit_headers(headers: &HeaderMap, present: bool) {
    for name in ["ratelimit-policy", "ratelimit"] {
        assert_eq!(
            headers.contains_key(name),
            present,
            "{name} should be {}: {headers:?}",
            if present { "present" } else { "absent" }
        );
    }
}

/// A JSON problem answer of `status` whose `type` is `/problems/{problem}`.
fn assert_problem(
    status: reqwest::StatusCode,
    headers: &HeaderMap,
    body: &Value,
    code: u16,
    problem: &str,
) {
    assert_eq!(status, code, "{body}");
    assert_eq!(
        headers.get("content-type").unwrap(),
        "application/problem+json"
    );
    assert_eq!(body["type"], format!("/problems/{problem}"), "{body}");
    assert_eq!(body["status"], code, "{body}");
    assert_eq!(headers.get("cache-control").unwrap(), "no-store");
    assert!(headers.get("x-search-cache").is_none());
}

/// `GET /search?{raw_query}` with `Accept: application/json`, body parsed.
async fn json_raw(app: &TestApp, raw_query: &str) -> (reqwest::StatusCode, HeaderMap, Value) {
    let r = app
        .client
        .get(format!("{}/search?{raw_query}", app.address))
        .header("X-Forwarded-For", CLIENT)
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap();
    let (status, headers) = (r.status(), r.headers().clone());
    (status, headers, r.json().await.unwrap())
}

/// What `/metrics` says: candidate fetches, scorer slots (acquired, refused) and the
/// count of every search outcome label.
#[derive(Debug, Clone)]
struct Seen {
    fetches: u64,
    slots: (u64, u64),
    outcomes: BTreeMap<String, u64>,
}

async fn seen(app: &TestApp) -> Seen {
    let (fetches, slots) = app.work().await;
    let outcomes: BTreeMap<String, u64> = app
        .metric_values()
        .await
        .into_iter()
        .filter_map(|(name, value)| {
            let label = name
                .strip_prefix("agent_pages_search_requests_total{outcome=\"")?
                .strip_suffix("\"}")?;
            Some((label.to_owned(), value as u64))
        })
        .collect();
    // Every label of the outcome table is exported from the start, so a missing one
    // is a bug.
    for label in agent_pages::operations::search::outcome::labels(&app.state.budgets.search) {
        assert!(outcomes.contains_key(&label), "{label} not in {outcomes:?}");
    }
    Seen {
        fetches,
        slots,
        outcomes,
    }
}

/// Between `before` and `after`: exactly `answers` (label, count) were counted and no
/// other outcome, `fetches` candidate fetches happened and `slots` (acquired,
/// refused) scorer slots were tried.
fn assert_row(
    before: &Seen,
    after: &Seen,
    answers: &[(&str, u64)],
    fetches: u64,
    slots: (u64, u64),
) {
    for (label, _) in answers {
        assert!(after.outcomes.contains_key(*label), "no outcome {label}");
    }
    for (label, n) in &after.outcomes {
        let expected = answers
            .iter()
            .find(|(l, _)| l == label)
            .map_or(0, |(_, n)| *n);
        assert_eq!(
            n - before.outcomes[label],
            expected,
            "outcome {label}: before {before:?}, after {after:?}"
        );
    }
    assert_eq!(after.fetches - before.fetches, fetches, "candidate fetches");
    assert_eq!(
        (
            after.slots.0 - before.slots.0,
            after.slots.1 - before.slots.1
        ),
        slots,
        "scorer slots (acquired, refused)"
    );
}

#[actix_web::test]
async fn missing_or_blank_q_redirects_home_and_spends_nothing() {
    let app = spawn_app().await;
    let before = seen(&app).await;
    for raw in ["", "q=", "q=+++", "other=1"] {
        let r = app.search_raw(raw, CLIENT).await;
        assert_eq!(r.status(), 303, "{raw}");
        assert_eq!(header(&r, "location"), Some("/"));
        assert_search_headers(&r);
        assert_rate_limit_headers(r.headers(), false);
    }
    assert_eq!(app.counters(CLIENT), (0, 0));
    assert_row(&before, &seen(&app).await, &[("303", 4)], 0, (0, 0));
}

#[actix_web::test]
async fn example_a_a_short_query_gets_guidance_and_spends_nothing() {
    let app = spawn_app().await;
    let before = seen(&app).await;
    let r = app.search("k", CLIENT).await;
    assert_eq!(r.status(), 200);
    assert_search_headers(&r);
    assert_eq!(header(&r, "x-search-cache"), None);
    assert_rate_limit_headers(r.headers(), false);
    let body = r.text().await.unwrap();
    assert!(body.contains("Enter at least 2 characters"), "{body}");
    assert_eq!(app.counters(CLIENT), (0, 0));
    assert_row(&before, &seen(&app).await, &[("short", 1)], 0, (0, 0));
}

#[actix_web::test]
async fn a_short_query_in_json_is_200_with_a_message_no_results_and_no_cache_status() {
    let app = spawn_app().await;
    let before = seen(&app).await;
    let (status, headers, body) = app.search_json("-a-", CLIENT).await;
    assert_eq!(status, 200);
    assert_eq!(headers.get("content-type").unwrap(), "application/json");
    assert_eq!(headers.get("cache-control").unwrap(), "no-store");
    assert!(headers.get("x-search-cache").is_none());
    assert_rate_limit_headers(&headers, false);
    assert_eq!(
        body,
        json!({
            "query": "-a-",
            "results": [],
            "total": 0,
            "truncated": false,
            "message": "Enter at least 2 characters."
        })
    );
    assert_eq!(app.counters(CLIENT), (0, 0));
    assert_row(&before, &seen(&app).await, &[("short", 1)], 0, (0, 0));
}

#[actix_web::test]
async fn over_long_and_badly_encoded_queries_are_400_and_spend_nothing() {
    let app = spawn_app().await;
    let before = seen(&app).await;
    let long = "a".repeat(65);
    let r = app.search(&long, CLIENT).await;
    assert_eq!(r.status(), 400);
    assert_search_headers(&r);
    assert_rate_limit_headers(r.headers(), false);
    let body = r.text().await.unwrap();
    assert!(body.contains("at most 64 characters"));
    assert!(
        body.contains(&format!("value=\"{long}\"")),
        "form keeps the query"
    );
    for raw in ["q=%FF", "q=ab&q=cd"] {
        let r = app.search_raw(raw, CLIENT).await;
        assert_eq!(r.status(), 400, "{raw}");
        assert_search_headers(&r);
        assert_rate_limit_headers(r.headers(), false);
    }
    // The JSON variant of each: a problem of type invalid-query.
    for raw in [format!("q={long}"), "q=%FF".into(), "q=ab&q=cd".into()] {
        let (status, headers, body) = json_raw(&app, &raw).await;
        assert_problem(status, &headers, &body, 400, "invalid-query");
        assert_rate_limit_headers(&headers, false);
    }
    assert_eq!(app.counters(CLIENT), (0, 0));
    assert_row(&before, &seen(&app).await, &[("400", 6)], 0, (0, 0));
}

#[actix_web::test]
async fn with_every_admission_permit_held_a_search_is_503_before_budget_fetch_or_slot() {
    let app = spawn_app_with(|s| {
        s.search.max_in_flight = 2;
        s.search.concurrency = 2;
    })
    .await;
    // Two slow scorings hold both admission permits (and both slots) until they end.
    let held: Vec<_> = (0..2)
        .map(|i| app.spawn_search(&format!("block held {i}"), &format!("198.51.100.{i}")))
        .collect();
    app.faults.wait_blocked(2).await;
    let before = seen(&app).await;

    let r = app.search("kubernetes", CLIENT).await;
    assert_eq!(r.status(), 503);
    assert_search_headers(&r);
    assert_eq!(header(&r, "retry-after"), Some("1"));
    assert_eq!(header(&r, "x-search-cache"), None);
    assert_rate_limit_headers(r.headers(), false);
    let (status, headers, body) = app.search_json("kubernetes", CLIENT).await;
    assert_problem(status, &headers, &body, 503, "search-busy");
    assert_rate_limit_headers(&headers, false);
    assert_eq!(body["retry_after"], 1);

    assert_eq!(app.counters(CLIENT), (0, 0), "no budget spent");
    assert_row(
        &before,
        &seen(&app).await,
        &[("503-admission", 2)],
        0,
        (0, 0),
    );
    app.faults.open();
    for h in held {
        assert_eq!(h.await.unwrap(), 200);
    }
}

#[actix_web::test]
async fn example_b_and_c_a_miss_scores_then_the_same_search_hits_without_a_slot() {
    let app = spawn_app().await;
    let before = seen(&app).await;
    let r = app.search("kubrenetes", CLIENT).await;
    assert_eq!(r.status(), 200);
    assert_search_headers(&r);
    assert_eq!(header(&r, "x-search-cache"), Some("miss"));
    assert_rate_limit_headers(r.headers(), true);
    let body = r.text().await.unwrap();
    assert!(body.contains("href=\"/p/kubernetes\""), "{body}");
    assert_eq!(app.counters(CLIENT), (1, 1));
    let after_miss = seen(&app).await;
    assert_row(&before, &after_miss, &[("miss", 1)], 1, (1, 0));
    assert_eq!(app.faults.scorings(), 1);

    let r = app.search("kubrenetes", CLIENT).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-search-cache"), Some("hit"));
    assert_rate_limit_headers(r.headers(), true);
    assert_eq!(app.counters(CLIENT), (2, 2));
    // A hit fetches candidates but takes no slot.
    assert_row(&after_miss, &seen(&app).await, &[("hit", 1)], 1, (0, 0));
    assert_eq!(app.faults.scorings(), 1, "a hit does not score");
    app.wait_slots_free().await;
}

#[actix_web::test]
async fn a_miss_while_the_same_key_is_scored_joins_it_with_budget_and_fetch_but_no_slot() {
    let app = spawn_app_with(|s| s.search.concurrency = 1).await;
    let leader = app.spawn_search_full("block joined", "198.51.100.1");
    app.faults.wait_blocked(1).await;
    let before = seen(&app).await;

    let request = app
        .client
        .get(format!("{}/search", app.address))
        .query(&[("q", "block joined")])
        .header("X-Forwarded-For", CLIENT)
        .header("Accept", "application/json");
    let joiner = actix_web::rt::spawn(async move {
        let r = request.send().await.unwrap();
        let (status, headers) = (r.status(), r.headers().clone());
        (status, headers, r.json::<Value>().await.unwrap())
    });
    app.wait_waiters(2).await;
    // Joined: its budget is spent and it fetched candidates, but it took no slot
    // (the only one is the leader's) and was refused none.
    assert_eq!(app.counters(CLIENT), (1, 1));
    let joined = seen(&app).await;
    assert_row(&before, &joined, &[], 1, (0, 0));

    app.faults.open();
    let (status, headers, body) = joiner.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(headers.get("x-search-cache").unwrap(), "join");
    assert_eq!(body["cache"], "join");
    assert_rate_limit_headers(&headers, true);
    let (status, cache, _) = leader.await.unwrap();
    assert_eq!((status, cache.as_str()), (200, "miss"));
    assert_eq!(app.counters(CLIENT), (1, 1));
    assert_row(
        &joined,
        &seen(&app).await,
        &[("miss", 1), ("join", 1)],
        0,
        (0, 0),
    );
    assert_eq!(app.faults.scorings(), 1, "one scoring for both");
}

#[actix_web::test]
async fn example_d_a_full_burst_window_is_429_with_no_fetch_and_no_slot() {
    let app = spawn_app_with(|s| s.search_budget.set_limit("minute", 2)).await;
    app.clock.set(T0 + 17);
    for _ in 0..2 {
        assert_eq!(app.search("migration", CLIENT).await.status(), 200);
    }
    let before = seen(&app).await;
    let r = app.search("migration", CLIENT).await;
    assert_eq!(r.status(), 429);
    assert_search_headers(&r);
    assert_eq!(header(&r, "retry-after"), Some("43"));
    assert_eq!(header(&r, "x-search-cache"), None);
    assert_rate_limit_headers(r.headers(), true);
    assert_eq!(header(&r, "ratelimit"), Some("\"minute\";r=0;t=43"));
    let body = r.text().await.unwrap();
    assert!(body.contains("action=\"/search\""), "the form stays");
    assert!(body.contains("href=\"/\""), "a link to the ledger");
    let (status, headers, body) = app.search_json("migration", CLIENT).await;
    assert_problem(status, &headers, &body, 429, "rate-limited");
    assert_eq!(body["retry_after"], 43);
    assert_eq!(app.counters(CLIENT), (2, 2), "both counters unchanged");
    assert_row(&before, &seen(&app).await, &[("429-minute", 2)], 0, (0, 0));
}

#[actix_web::test]
async fn a_full_hour_window_is_429_hour_with_no_fetch_and_no_slot() {
    let app = spawn_app_with(|s| s.search_budget.set_limit("hour", 2)).await;
    app.clock.set(T0 + 17);
    for _ in 0..2 {
        assert_eq!(app.search("migration", CLIENT).await.status(), 200);
    }
    let before = seen(&app).await;
    let r = app.search("migration", CLIENT).await;
    assert_eq!(r.status(), 429);
    assert_search_headers(&r);
    assert_eq!(header(&r, "retry-after"), Some("3583"));
    assert_eq!(header(&r, "x-search-cache"), None);
    assert_eq!(header(&r, "ratelimit"), Some("\"hour\";r=0;t=3583"));
    assert_rate_limit_headers(r.headers(), true);
    let (status, headers, body) = app.search_json("migration", CLIENT).await;
    assert_problem(status, &headers, &body, 429, "rate-limited");
    assert_eq!(body["retry_after"], 3583);
    assert_eq!(app.counters(CLIENT), (2, 2), "both counters unchanged");
    assert_row(&before, &seen(&app).await, &[("429-hour", 2)], 0, (0, 0));
}

#[actix_web::test]
async fn example_e_a_miss_with_every_slot_busy_is_503_at_once_and_keeps_the_budget_spent() {
    let app = spawn_app_with(|s| s.search.concurrency = 2).await;
    let a = app.spawn_search("block one", "198.51.100.1");
    let b = app.spawn_search("block two", "198.51.100.2");
    app.faults.wait_blocked(2).await;
    let before = seen(&app).await;

    let r = app.search("deployment", CLIENT).await;
    assert_eq!(r.status(), 503);
    assert_search_headers(&r);
    assert_eq!(header(&r, "retry-after"), Some("1"));
    assert_eq!(header(&r, "x-search-cache"), None);
    assert_rate_limit_headers(r.headers(), true);
    let body = r.text().await.unwrap();
    assert!(body.contains("action=\"/search\"") && body.contains("href=\"/\""));
    let (status, headers, body) = app.search_json("deployment", CLIENT).await;
    assert_problem(status, &headers, &body, 503, "search-busy");
    assert_rate_limit_headers(&headers, true);
    assert_eq!(app.counters(CLIENT), (2, 2), "the budget stays spent");
    // Fetched, tried a slot and did not get one, twice.
    assert_row(&before, &seen(&app).await, &[("503-busy", 2)], 2, (0, 2));

    app.faults.open();
    assert_eq!(a.await.unwrap(), 200);
    assert_eq!(b.await.unwrap(), 200);
    app.wait_slots_free().await;
    // The refused miss stored nothing: the same search now scores.
    let r = app.search("deployment", CLIENT).await;
    assert_eq!(header(&r, "x-search-cache"), Some("miss"));
}

#[actix_web::test]
async fn example_f_a_scoring_panic_is_500_frees_its_slot_and_caches_nothing() {
    let app = spawn_app_with(|s| s.search.concurrency = 2).await;
    let before = seen(&app).await;
    let r = app.search("panic now", CLIENT).await;
    assert_eq!(r.status(), 500);
    assert_search_headers(&r);
    assert_eq!(header(&r, "x-search-cache"), None);
    assert_rate_limit_headers(r.headers(), true);
    assert_eq!(app.counters(CLIENT), (1, 1));
    app.wait_slots_free().await;
    let after_html = seen(&app).await;
    assert_row(&before, &after_html, &[("500", 1)], 1, (1, 0));

    let (status, headers, body) = app.search_json("panic now", CLIENT).await;
    assert_problem(status, &headers, &body, 500, "internal");
    assert_rate_limit_headers(&headers, true);
    assert_eq!(app.counters(CLIENT), (2, 2));
    app.wait_slots_free().await;
    // A failed scoring stored nothing, so the same search scored again.
    assert_row(&after_html, &seen(&app).await, &[("500", 1)], 1, (1, 0));
    assert_eq!(app.faults.scorings(), 2);

    // Both slots, and both scorer threads, still work.
    let a = app.spawn_search("block x", "198.51.100.1");
    let b = app.spawn_search("block y", "198.51.100.2");
    app.faults.wait_blocked(2).await;
    app.faults.open();
    assert_eq!((a.await.unwrap(), b.await.unwrap()), (200, 200));
}

#[actix_web::test]
async fn json_answers_carry_the_same_statuses_and_fields() {
    let app = spawn_app_with(|s| s.search_budget.set_limit("minute", 2)).await;
    let (status, headers, body) = app.search_json("kubrenetes", CLIENT).await;
    assert_eq!(status, 200);
    assert_eq!(headers.get("x-search-cache").unwrap(), "miss");
    assert_eq!(headers.get("cache-control").unwrap(), "no-store");
    assert_eq!(body["cache"], "miss");
    assert_eq!(body["truncated"], false);
    assert!(body["total"].as_u64().unwrap() >= 1);
    let results = body["results"].as_array().unwrap();
    assert!(results.iter().any(|r| r["slug"] == "kubernetes"), "{body}");
    let first = &results[0];
    assert!(
        first["title"].is_string() && first["score"].is_number() && first["updated_at"].is_number()
    );

    let (status, _, body) = app.search_json("kubrenetes", CLIENT).await;
    assert_eq!(
        (status.as_u16(), body["cache"].as_str()),
        (200, Some("hit"))
    );

    let (status, headers, body) = app.search_json("kubrenetes", CLIENT).await;
    assert_problem(status, &headers, &body, 429, "rate-limited");
    assert!(headers.get("retry-after").is_some());
}

#[actix_web::test]
async fn a_budget_store_locked_past_its_timeout_is_503_budget_with_no_fetch_and_no_slot() {
    let mut app = spawn_app().await;
    let before = seen(&app).await;
    // Another process holds SQLite's write lock past the 5 s busy timeout (with the
    // counters in Redis: Redis is stopped).
    app.block_budget_store();
    let (status, headers, body) = app.search_json("kubernetes", CLIENT).await;
    app.unblock_budget_store();
    assert_problem(status, &headers, &body, 503, "budget-unavailable");
    assert_eq!(headers.get("retry-after").unwrap(), "1");
    assert_rate_limit_headers(&headers, false);
    assert_eq!(
        app.counters(CLIENT),
        (0, 0),
        "never admitted, nothing spent"
    );
    assert_row(&before, &seen(&app).await, &[("503-budget", 1)], 0, (0, 0));
}
