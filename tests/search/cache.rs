//! Gate 5: the fingerprinted cache never serves a stale corpus, and a hit maps its
//! ids onto the freshly fetched titles.

use crate::helpers::{header, spawn_app};

const CLIENT: &str = "203.0.113.40";

#[actix_web::test]
async fn a_title_change_by_another_process_makes_the_next_identical_search_a_miss() {
    let app = spawn_app().await;
    let r = app.search("persistent database", CLIENT).await;
    assert_eq!(header(&r, "x-search-cache"), Some("miss"));
    assert!(r
        .text()
        .await
        .unwrap()
        .contains("<mark>Persistent</mark> key-value <mark>database</mark> with network"));

    app.conn()
        .execute(
            "UPDATE pages SET title = 'Persistent key-value database, renamed', current_version = current_version + 1
             WHERE slug = 'redis'",
            [],
        )
        .unwrap();
    let r = app.search("persistent database", CLIENT).await;
    assert_eq!(header(&r, "x-search-cache"), Some("miss"));
    let body = r.text().await.unwrap();
    assert!(
        body.contains("<mark>Persistent</mark> key-value <mark>database</mark>, renamed"),
        "{body}"
    );
    assert_eq!(app.faults.scorings(), 2);
}

#[actix_web::test]
async fn a_page_taken_off_the_candidates_is_never_shown_again() {
    let app = spawn_app().await;
    let slugs = |body: &serde_json::Value| -> Vec<String> {
        body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["slug"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, _, body) = app.search_json("kubernetes", CLIENT).await;
    let shown = slugs(&body);
    assert!(
        shown.iter().any(|s| s == "kubernetes") && shown.iter().any(|s| s == "kubernetes-client"),
        "both pages match before: {shown:?}"
    );

    // Archive one page, then claim the other: each change leaves the cache (a miss)
    // and takes exactly its own page out of the results.
    let mut gone: Vec<&str> = Vec::new();
    for (slug, change) in [
        ("kubernetes", "UPDATE pages SET lifecycle = 'archived', current_version = current_version + 1 WHERE slug = 'kubernetes'"),
        ("kubernetes-client", "UPDATE pages SET claimed_at = 1, current_version = current_version + 1 WHERE slug = 'kubernetes-client'"),
    ] {
        let (_, _, body) = app.search_json("kubernetes", CLIENT).await;
        assert!(slugs(&body).iter().any(|s| s == slug), "{slug} shown before its change");
        app.conn().execute(change, []).unwrap();
        gone.push(slug);
        let (_, headers, body) = app.search_json("kubernetes", CLIENT).await;
        assert_eq!(headers.get("x-search-cache").unwrap(), "miss");
        let shown = slugs(&body);
        for slug in &gone {
            assert!(!shown.iter().any(|s| s == slug), "{slug} in {shown:?}");
        }
    }
    let (_, headers, body) = app.search_json("kubernetes", CLIENT).await;
    assert_eq!(headers.get("x-search-cache").unwrap(), "hit");
    let shown = slugs(&body);
    for slug in gone {
        assert!(!shown.iter().any(|s| s == slug), "{slug} in {shown:?}");
    }
}

#[actix_web::test]
async fn a_change_outside_the_candidates_keeps_the_cache_warm() {
    let app = spawn_app().await;
    app.search("golang compiler", CLIENT).await;
    // An archived page changing moves the generation but not the fingerprint.
    app.conn()
        .execute(
            "UPDATE pages SET lifecycle = 'archived' WHERE slug = 'vim'",
            [],
        )
        .unwrap();
    app.search("golang compiler", CLIENT).await;
    app.conn()
        .execute("UPDATE pages SET body = 'edited' WHERE slug = 'vim'", [])
        .unwrap();
    let r = app.search("golang compiler", CLIENT).await;
    assert_eq!(header(&r, "x-search-cache"), Some("hit"));
}

#[actix_web::test]
async fn writes_by_another_process_during_a_burst_never_yield_a_stale_title() {
    let app = crate::helpers::spawn_app_with(|s| {
        s.search_budget.set_limit("minute", 100_000);
        s.search_budget.set_limit("hour", 100_000);
    })
    .await;
    let writer = app.conn();
    for k in 1..=15 {
        // Searches in flight while another connection renames the page...
        let burst: Vec<_> = (0..8)
            .map(|i| app.spawn_search_full("persistent database", &format!("198.51.100.{i}")))
            .collect();
        writer
            .execute(
                "UPDATE pages SET title = ?1, current_version = current_version + 1
                 WHERE slug = 'redis'",
                [format!("Persistent key-value database revision {k}")],
            )
            .unwrap();
        // ...and every search sent after that commit shows the new title.
        let (status, _, body) = app
            .spawn_search_full("persistent database", CLIENT)
            .await
            .unwrap();
        assert_eq!(status, 200);
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        let title = json["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["slug"] == "redis")
            .map(|r| r["title"].as_str().unwrap().to_owned());
        assert_eq!(
            title.as_deref(),
            Some(&*format!("Persistent key-value database revision {k}")),
            "after write {k}"
        );
        for h in burst {
            assert!(matches!(h.await.unwrap().0, 200 | 503));
        }
    }
}

/// The status of each search in `queries`, in order, from one client.
async fn cache_statuses(app: &crate::helpers::TestApp, queries: &[&str]) -> Vec<String> {
    let mut statuses = Vec::new();
    for q in queries {
        let r = app.search(q, CLIENT).await;
        assert_eq!(r.status(), 200, "{q}");
        statuses.push(header(&r, "x-search-cache").unwrap_or("none").to_owned());
    }
    statuses
}

#[actix_web::test]
async fn a_full_cache_evicts_the_least_recently_used_entry_counting_hits_as_uses() {
    let app = crate::helpers::spawn_app_with(|s| s.search.cache_entries = 2).await;
    // a, b stored; a hit (read without asking the actor) makes b the oldest; c evicts b.
    assert_eq!(
        cache_statuses(&app, &["kubernetes", "redis", "kubernetes", "postgres"]).await,
        ["miss", "miss", "hit", "miss"]
    );
    assert_eq!(app.cache_stats().await.entries, 2);
    assert_eq!(
        cache_statuses(&app, &["kubernetes", "postgres", "redis"]).await,
        ["hit", "hit", "miss"],
        "redis was the least recently used"
    );
    // Now kubernetes is the oldest (postgres and redis were used after it).
    assert_eq!(
        cache_statuses(&app, &["postgres", "kubernetes"]).await,
        ["hit", "miss"]
    );
    assert_eq!(app.faults.scorings(), 5);
}

#[actix_web::test]
async fn hits_past_the_touch_log_bound_keep_the_lru_order_exact() {
    use agent_pages::search::cache::view::TOUCH_LOG_FLUSH;
    let app = crate::helpers::spawn_app_with(|s| {
        s.search.cache_entries = 2;
        s.search_budget.set_limit("minute", 1_000_000);
        s.search_budget.set_limit("hour", 1_000_000);
    })
    .await;
    assert_eq!(
        cache_statuses(&app, &["kubernetes", "redis"]).await,
        ["miss", "miss"]
    );
    // More hits on kubernetes than the log holds, then one on redis: kubernetes is
    // now the oldest, whether its uses were applied on the flush or at eviction.
    let many = vec!["kubernetes"; TOUCH_LOG_FLUSH + 5];
    assert!(cache_statuses(&app, &many).await.iter().all(|s| s == "hit"));
    assert_eq!(
        cache_statuses(&app, &["redis", "postgres", "redis", "kubernetes"]).await,
        ["hit", "miss", "hit", "miss"]
    );
}

#[actix_web::test]
async fn pages_written_while_a_scoring_holds_the_snapshot_are_found_by_the_next_searches() {
    let app = spawn_app().await;
    let slugs = |body: &serde_json::Value| -> Vec<String> {
        body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["slug"].as_str().unwrap().to_owned())
            .collect()
    };
    // One slot scores over the snapshot of now, and stays there.
    let held = app.spawn_search_full("block kubernetes", "198.51.100.1");
    app.faults.wait_blocked(1).await;
    // Two writes land one after the other while it runs; each next search (in
    // the other slot) is answered at the generation after its write.
    for (k, slug) in ["zanzibar-one", "zanzibar-two"].iter().enumerate() {
        app.conn()
            .execute(
                "INSERT INTO pages (slug, title, created_at, updated_at) VALUES (?1, ?2, 1, 1)",
                [*slug, &format!("Zanzibar quokka handbook {k}")],
            )
            .unwrap();
        let (status, headers, body) = app.search_json("zanzibar quokka", CLIENT).await;
        assert_eq!(status, 200);
        assert_eq!(headers.get("x-search-cache").unwrap(), "miss");
        let shown = slugs(&body);
        assert_eq!(shown.len(), k + 1, "{shown:?}");
        assert!(shown.iter().any(|s| s == slug), "{slug} in {shown:?}");
    }
    // The held scoring still ends well, over the snapshot its request read.
    app.faults.open();
    let (status, cache, body) = held.await.unwrap();
    assert_eq!((status, cache.as_str()), (200, "miss"), "{body}");
    let (_, _, body) = app.search_json("kubernetes", CLIENT).await;
    assert!(!slugs(&body).is_empty());
}
