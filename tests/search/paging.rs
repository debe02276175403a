//! Paging through search results: every page passes the five gates like a search
//! (spends budget, counts as hit or miss), a later page of a cached query is a hit
//! that scores nothing, and a bad `page` spends nothing.

use crate::helpers::{header, spawn_app, spawn_app_with, TestApp, T0};

const CLIENT: &str = "203.0.113.90";

/// Adds 130 pages titled `Widget catalogue 000` … `Widget catalogue 129`: all
/// match `widget` with the same score and length, so they rank by page id
/// (import order) and page 2 shows `bulk-050` … `bulk-099`.
fn add_widgets(app: &TestApp) {
    let mut conn = app.conn();
    let lines: String = (0..130)
        .map(|i| format!("{{\"slug\":\"bulk-{i:03}\",\"title\":\"Widget catalogue {i:03}\"}}\n"))
        .collect();
    agent_pages::import::import(&mut conn, lines.as_bytes(), None, T0).unwrap();
}

/// `GET /search?{raw}` with `Accept: application/json`: (status, cache, body).
async fn json_raw(app: &TestApp, raw: &str) -> (u16, Option<String>, serde_json::Value) {
    let r = app
        .client
        .get(format!("{}/search?{raw}", app.address))
        .header("X-Forwarded-For", CLIENT)
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let cache = header(&r, "x-search-cache").map(str::to_owned);
    (status, cache, r.json().await.unwrap())
}

fn slugs(body: &serde_json::Value) -> Vec<String> {
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["slug"].as_str().unwrap().to_owned())
        .collect()
}

#[actix_web::test]
async fn page_two_is_a_hit_that_scores_nothing_spends_budget_and_shows_rows_51_to_100() {
    let app = spawn_app().await;
    add_widgets(&app);

    let first = app.search("widget", CLIENT).await;
    assert_eq!(first.status(), 200);
    assert_eq!(header(&first, "x-search-cache"), Some("miss"));
    let body = first.text().await.unwrap();
    assert!(body.contains("Showing 1–50 of 130 matches"), "{body}");
    assert!(body.contains("/p/bulk-049\""), "{body}");
    assert!(!body.contains("/p/bulk-050\""), "{body}");
    assert!(body.contains("rel=\"next\""), "{body}");
    assert!(!body.contains("rel=\"prev\""), "{body}");
    assert_eq!(app.faults.scorings(), 1);
    assert_eq!(app.counters(CLIENT), (1, 1));
    assert_eq!(app.work().await, (1, (1, 0)));

    let second = app.search_raw("q=widget&page=2", CLIENT).await;
    assert_eq!(second.status(), 200);
    assert_eq!(header(&second, "x-search-cache"), Some("hit"));
    assert_eq!(header(&second, "cache-control"), Some("no-store"));
    let body = second.text().await.unwrap();
    // No new scoring and no scorer slot; one more candidate fetch and budget spend.
    assert_eq!(app.faults.scorings(), 1);
    assert_eq!(app.work().await, (2, (1, 0)));
    assert_eq!(app.counters(CLIENT), (2, 2));
    assert_eq!(app.outcome_count("hit").await, 1);

    assert!(body.contains("Showing 51–100 of 130 matches"), "{body}");
    for i in 50..100 {
        assert!(
            body.contains(&format!("/p/bulk-{i:03}\"")),
            "row {i}: {body}"
        );
    }
    assert!(!body.contains("/p/bulk-049\""), "{body}");
    assert!(!body.contains("/p/bulk-100\""), "{body}");
    // Rows of a later page are marked too (computed when the page is first shown).
    assert!(body.contains("<mark>Widget</mark> catalogue 050"), "{body}");
    // Previous and next keep the query; page 1 is the plain search address.
    assert!(
        body.contains("<a href=\"&#x2F;search?q=widget\" rel=\"prev\">"),
        "{body}"
    );
    assert!(
        body.contains("<a href=\"&#x2F;search?q=widget&amp;page=3\" rel=\"next\">"),
        "{body}"
    );
    assert!(body.contains("Page 2 of 3"), "{body}");
    // The form keeps the query.
    assert!(body.contains("name=\"q\" value=\"widget\""), "{body}");

    // The last page has no next link; a repeat is a hit again.
    let third = app.search_raw("q=widget&page=3", CLIENT).await;
    assert_eq!(header(&third, "x-search-cache"), Some("hit"));
    let body = third.text().await.unwrap();
    assert!(body.contains("Showing 101–130 of 130 matches"), "{body}");
    assert!(body.contains("rel=\"prev\""), "{body}");
    assert!(!body.contains("rel=\"next\""), "{body}");
    assert_eq!(app.faults.scorings(), 1);
    assert_eq!(app.counters(CLIENT), (3, 3));
}

#[actix_web::test]
async fn json_answers_carry_page_and_pages_and_page_one_stays_as_before() {
    let app = spawn_app().await;
    add_widgets(&app);

    let (status, headers, body) = app.search_json("widget", CLIENT).await;
    assert_eq!(status, 200);
    assert_eq!(headers.get("x-search-cache").unwrap(), "miss");
    assert_eq!(body["total"], 130);
    assert_eq!(body["truncated"], true);
    assert_eq!(body["cache"], "miss");
    assert_eq!(body["page"], 1);
    assert_eq!(body["pages"], 3);
    assert_eq!(body["capped"], false);
    assert_eq!(body["close_matches"], false);
    let first = slugs(&body);
    assert_eq!(first.len(), 50);
    assert_eq!(first[0], "bulk-000");
    assert_eq!(first[49], "bulk-049");

    let (status, cache, body) = json_raw(&app, "q=widget&page=2").await;
    assert_eq!((status, cache.as_deref()), (200, Some("hit")));
    assert_eq!(
        (body["page"].clone(), body["pages"].clone()),
        (2.into(), 3.into())
    );
    assert_eq!(body["cache"], "hit");
    let second = slugs(&body);
    assert_eq!(second.len(), 50);
    assert_eq!((&*second[0], &*second[49]), ("bulk-050", "bulk-099"));
    assert_eq!(body["results"][0]["marks"], serde_json::json!([[0, 6]]));

    let (_, _, body) = json_raw(&app, "q=widget&page=3").await;
    assert_eq!(slugs(&body).len(), 30);
    // Not every match is in `results`, as on page 1.
    assert_eq!(body["truncated"], true);
    assert_eq!(app.faults.scorings(), 1);
    assert_eq!(app.counters(CLIENT), (3, 3));

    // A query with one page of results: as before paging, plus page 1 of 1.
    let (_, _, body) = app.search_json("kubernetes", CLIENT).await;
    assert_eq!(body["total"], 2);
    assert_eq!(body["truncated"], false);
    assert_eq!(
        (body["page"].clone(), body["pages"].clone()),
        (1.into(), 1.into())
    );
}

#[actix_web::test]
async fn results_stop_at_max_pages_and_a_page_past_the_end_says_where_they_end() {
    // 5 rows a page: a scoring keeps 5 × MAX_PAGES = 50 of the 130 matches.
    let app = spawn_app_with(|s| s.search.result_limit = 5).await;
    add_widgets(&app);

    let body = app.search("widget", CLIENT).await.text().await.unwrap();
    assert!(body.contains("Showing 1–5 of 130 matches"), "{body}");
    assert!(body.contains("the best 50 can be paged through"), "{body}");
    assert!(body.contains("Page 1 of 10"), "{body}");

    let (_, _, body) = json_raw(&app, "q=widget&page=10").await;
    assert_eq!(
        slugs(&body),
        ["bulk-045", "bulk-046", "bulk-047", "bulk-048", "bulk-049"]
    );
    assert_eq!(body["capped"], true);
    assert_eq!(body["pages"], 10);

    // Past the last page: 200, no rows, where the results end and a link there;
    // it passed the gates, so it spent budget like any search (a hit).
    let past = app.search_raw("q=widget&page=11", CLIENT).await;
    assert_eq!(past.status(), 200);
    assert_eq!(header(&past, "x-search-cache"), Some("hit"));
    let body = past.text().await.unwrap();
    assert!(
        body.contains("Page 11 is past the end of these results: they end at page 10"),
        "{body}"
    );
    assert!(
        body.contains("href=\"&#x2F;search?q=widget&amp;page=10\""),
        "{body}"
    );
    assert!(!body.contains("/p/bulk-"), "{body}");
    assert!(!body.contains("rel=\"prev\""), "{body}");
    let (status, _, body) = json_raw(&app, "q=widget&page=99999999999999999999999").await;
    assert_eq!(status, 200);
    assert_eq!(slugs(&body).len(), 0);
    assert_eq!(body["total"], 130);
    assert_eq!(body["pages"], 10);
    assert_eq!(app.faults.scorings(), 1);
    assert_eq!(app.counters(CLIENT), (4, 4));
}

#[actix_web::test]
async fn a_bad_page_or_page_given_twice_is_a_400_that_spends_nothing() {
    let app = spawn_app().await;
    for bad in ["0", "-1", "two", "1.5", "%2B2"] {
        let r = app
            .search_raw(&format!("q=widget&page={bad}"), CLIENT)
            .await;
        assert_eq!(r.status(), 400, "{bad}");
        assert_eq!(header(&r, "x-search-cache"), None, "{bad}");
        assert_eq!(header(&r, "cache-control"), Some("no-store"), "{bad}");
        let body = r.text().await.unwrap();
        assert!(
            body.contains("The page number must be a whole number from 1."),
            "{bad}: {body}"
        );
        assert!(
            body.contains("name=\"q\" value=\"widget\""),
            "{bad}: {body}"
        );
    }
    let (status, _, body) = json_raw(&app, "q=widget&page=zero").await;
    assert_eq!(status, 400);
    assert_eq!(body["type"], "/problems/invalid-query");

    for raw in ["q=widget&page=1&page=1", "page=2&q=widget&page=3"] {
        let r = app.search_raw(raw, CLIENT).await;
        assert_eq!(r.status(), 400, "{raw}");
        assert_eq!(header(&r, "x-search-cache"), None, "{raw}");
    }
    // An empty page (a form's blank field) is page 1.
    let r = app.search_raw("q=vim&page=", CLIENT).await;
    assert_eq!(r.status(), 200);
    assert_eq!(app.counters(CLIENT), (1, 1), "only the valid search spent");
    assert_eq!(app.work().await, (1, (1, 0)));
}

#[actix_web::test]
async fn a_page_with_typo_corrected_or_prefix_matches_says_so() {
    let app = spawn_app().await;
    let line = "Includes close matches for words you typed.";
    let exact = app.search("kubernetes", CLIENT).await.text().await.unwrap();
    assert!(!exact.contains(line), "{exact}");
    for q in ["kubrenetes", "kuber"] {
        let body = app.search(q, CLIENT).await.text().await.unwrap();
        assert!(body.contains(line), "{q}: {body}");
        let (_, _, json) = app.search_json(q, CLIENT).await;
        assert_eq!(json["close_matches"], true, "{q}");
    }
    // Case and accents are no typos.
    let (_, _, json) = app.search_json("KUBERNETES", CLIENT).await;
    assert_eq!(json["close_matches"], false);
}
