//! Every row of SPEC §5's outcome matrix (the seed's worked examples A–F): status,
//! counters, candidate fetch and scorer slot, observed from outside the handler.

use crate::helpers::{header, spawn_app, spawn_app_with};

const CLIENT: &str = "203.0.113.10";

fn assert_search_headers(r: &reqwest::Response) {
    assert_eq!(header(r, "cache-control"), Some("no-store"));
    assert_eq!(header(r, "referrer-policy"), Some("no-referrer"));
}

#[actix_web::test]
async fn missing_or_blank_q_redirects_home_and_spends_nothing() {
    let app = spawn_app().await;
    for raw in ["", "q=", "q=+++", "other=1"] {
        let r = app.search_raw(raw, CLIENT).await;
        assert_eq!(r.status(), 303, "{raw}");
        assert_eq!(header(&r, "location"), Some("/"));
        assert_search_headers(&r);
    }
    assert_eq!(app.counters(CLIENT), (0, 0));
    assert_eq!(app.work().await, (0, (0, 0)));
}

#[actix_web::test]
async fn example_a_a_short_query_gets_guidance_and_spends_nothing() {
    let app = spawn_app().await;
    let r = app.search("k", CLIENT).await;
    assert_eq!(r.status(), 200);
    assert_search_headers(&r);
    assert_eq!(header(&r, "x-search-cache"), None);
    let body = r.text().await.unwrap();
    assert!(body.contains("Enter at least 2 characters"), "{body}");
    assert_eq!(app.counters(CLIENT), (0, 0));
    assert_eq!(app.work().await, (0, (0, 0)));
}

#[actix_web::test]
async fn over_long_and_badly_encoded_queries_are_400_and_spend_nothing() {
    let app = spawn_app().await;
    let long = "a".repeat(65);
    let r = app.search(&long, CLIENT).await;
    assert_eq!(r.status(), 400);
    assert_search_headers(&r);
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
    }
    assert_eq!(app.counters(CLIENT), (0, 0));
    assert_eq!(app.work().await, (0, (0, 0)));
}

#[actix_web::test]
async fn example_b_and_c_a_miss_scores_then_the_same_search_hits_without_a_slot() {
    let app = spawn_app().await;
    let r = app.search("kubrenetes", CLIENT).await;
    assert_eq!(r.status(), 200);
    assert_search_headers(&r);
    assert_eq!(header(&r, "x-search-cache"), Some("miss"));
    let body = r.text().await.unwrap();
    assert!(body.contains("href=\"/p/kubernetes\""), "{body}");
    assert_eq!(app.counters(CLIENT), (1, 1));
    assert_eq!(app.work().await, (1, (1, 0)));
    assert_eq!(app.faults.scorings(), 1);

    let r = app.search("kubrenetes", CLIENT).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-search-cache"), Some("hit"));
    assert_eq!(app.counters(CLIENT), (2, 2));
    assert_eq!(
        app.work().await,
        (2, (1, 0)),
        "a hit fetches candidates but takes no slot"
    );
    assert_eq!(app.faults.scorings(), 1, "a hit does not score");
    app.wait_slots_free().await;
}

#[actix_web::test]
async fn example_d_a_full_burst_window_is_429_with_no_fetch_and_no_slot() {
    let app = spawn_app_with(|s| s.search_budget.set_limit("minute", 2)).await;
    app.clock.set(crate::helpers::T0 + 17);
    for _ in 0..2 {
        assert_eq!(app.search("migration", CLIENT).await.status(), 200);
    }
    let before = app.work().await;
    let r = app.search("migration", CLIENT).await;
    assert_eq!(r.status(), 429);
    assert_search_headers(&r);
    assert_eq!(header(&r, "retry-after"), Some("43"));
    assert_eq!(header(&r, "x-search-cache"), None);
    let body = r.text().await.unwrap();
    assert!(body.contains("action=\"/search\""), "the form stays");
    assert!(body.contains("href=\"/\""), "a link to the ledger");
    assert_eq!(app.counters(CLIENT), (2, 2), "both counters unchanged");
    assert_eq!(app.work().await, before, "no candidate fetch, no slot");
}

#[actix_web::test]
async fn example_e_a_miss_with_every_slot_busy_is_503_at_once_and_keeps_the_budget_spent() {
    let app = spawn_app_with(|s| s.search.concurrency = 2).await;
    let a = app.spawn_search("block one", "198.51.100.1");
    let b = app.spawn_search("block two", "198.51.100.2");
    app.faults.wait_blocked(2).await;

    let r = app.search("deployment", CLIENT).await;
    assert_eq!(r.status(), 503);
    assert_search_headers(&r);
    assert_eq!(header(&r, "retry-after"), Some("1"));
    let body = r.text().await.unwrap();
    assert!(body.contains("action=\"/search\"") && body.contains("href=\"/\""));
    assert_eq!(app.counters(CLIENT), (1, 1), "the budget stays spent");
    let (fetches, (acquired, refused)) = app.work().await;
    assert_eq!(
        (fetches, acquired, refused),
        (3, 2, 1),
        "fetched, tried and not got"
    );

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
    let r = app.search("panic now", CLIENT).await;
    assert_eq!(r.status(), 500);
    assert_search_headers(&r);
    assert_eq!(app.counters(CLIENT), (1, 1));
    app.wait_slots_free().await;

    let r = app.search("panic now", CLIENT).await;
    assert_eq!(
        r.status(),
        500,
        "a failed scoring stored nothing, so this scores again"
    );
    assert_eq!(app.faults.scorings(), 2);
    app.wait_slots_free().await;

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
    assert_eq!(status, 429);
    assert_eq!(
        headers.get("content-type").unwrap(),
        "application/problem+json"
    );
    assert!(headers.get("retry-after").is_some());
    assert_eq!(body["status"], 429);
}
