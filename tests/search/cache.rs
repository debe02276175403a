//! Gate 5: the fingerprinted cache never serves a stale corpus, and a hit maps its
//! ids onto the freshly fetched titles.

use crate::helpers::{header, spawn_app, T0};

const CLIENT: &str = "203.0.113.40";

#[actix_web::test]
async fn a_title_change_by_another_process_shows_in_the_next_identical_search() {
    let app = spawn_app().await;
    let r = app.search("persistent database", CLIENT).await;
    assert_eq!(header(&r, "x-search-cache"), Some("miss"));
    assert!(r
        .text()
        .await
        .unwrap()
        .contains("<mark>Persistent</mark> key-value <mark>database</mark> with network"));

    app.sql(
        "UPDATE pages SET title = 'Persistent key-value database, renamed', current_version = current_version + 1
         WHERE slug = 'redis'",
    );
    // The retitle keeps both query words (no weight moves), so the cached answer
    // is patched (docs/spec.md, "Patch"): a hit, with the new title marked afresh,
    // and no second scoring.
    let r = app.search("persistent database", CLIENT).await;
    assert_eq!(header(&r, "x-search-cache"), Some("hit"));
    let body = r.text().await.unwrap();
    assert!(
        body.contains("<mark>Persistent</mark> key-value <mark>database</mark>, renamed"),
        "{body}"
    );
    assert_eq!(app.faults.scorings(), 1);
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

    // Archive one page, then claim the other: each change takes exactly its own
    // page out of the results. The archive (two matches to one) moves the weight
    // of `kubernetes` in this small corpus, so the entry is dropped (a miss); the
    // claim (one to none, which weighs the same) has it patched (a hit;
    // docs/spec.md, "Patch").
    let mut gone: Vec<&str> = Vec::new();
    for (slug, cache, change) in [
        ("kubernetes", "miss", "UPDATE pages SET lifecycle = 'archived', current_version = current_version + 1 WHERE slug = 'kubernetes'"),
        ("kubernetes-client", "hit", "UPDATE pages SET claimed_at = 1, current_version = current_version + 1 WHERE slug = 'kubernetes-client'"),
    ] {
        let (_, _, body) = app.search_json("kubernetes", CLIENT).await;
        assert!(slugs(&body).iter().any(|s| s == slug), "{slug} shown before its change");
        app.sql(change);
        gone.push(slug);
        let (_, headers, body) = app.search_json("kubernetes", CLIENT).await;
        assert_eq!(headers.get("x-search-cache").unwrap(), cache, "{slug}");
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
    let generation = || async { app.metric_values().await["agent_pages_corpus_generation"] };
    let r = app.search("golang compiler", CLIENT).await;
    assert_eq!(header(&r, "x-search-cache"), Some("miss"));
    // Archiving vim takes it off the candidates: the fingerprint moves (and the
    // size class with it, in this small corpus), and the answer, which vim is not
    // in, is patched: a hit without a scoring.
    app.sql("UPDATE pages SET lifecycle = 'archived' WHERE slug = 'vim'");
    let r = app.search("golang compiler", CLIENT).await;
    assert_eq!(header(&r, "x-search-cache"), Some("hit"));
    let patched = || async {
        let text = app.metrics().await;
        text.lines()
            .find_map(|l| {
                l.strip_prefix("agent_pages_search_cache_carries_total{result=\"patched\"}")?
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .expect("the patched count")
    };
    assert_eq!(patched().await, 1.0);
    let before = generation().await;
    // A change to vim now, outside the candidates, moves the generation but not
    // the fingerprint: a hit.
    app.sql("UPDATE pages SET body = 'edited' WHERE slug = 'vim'");
    let r = app.search("golang compiler", CLIENT).await;
    assert_eq!(header(&r, "x-search-cache"), Some("hit"));
    assert!(generation().await > before, "the generation moved");
    assert_eq!(patched().await, 1.0, "no move, nothing patched");
    assert_eq!(app.faults.scorings(), 1);
}

#[actix_web::test]
async fn writes_by_another_process_during_a_burst_never_yield_a_stale_title() {
    let app = crate::helpers::spawn_app_with(|s| {
        s.search_budget.set_limit("minute", 100_000);
        s.search_budget.set_limit("hour", 100_000);
    })
    .await;
    for k in 1..=15 {
        // Searches in flight while another connection renames the page...
        let burst: Vec<_> = (0..8)
            .map(|i| app.spawn_search_full("persistent database", &format!("198.51.100.{i}")))
            .collect();
        app.sql(&format!(
            "UPDATE pages SET title = 'Persistent key-value database revision {k}',
                    current_version = current_version + 1
             WHERE slug = 'redis'"
        ));
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
    // More hits on kubernetes than the log holds (the first ones applied on the
    // flush, the last ones at eviction): redis, stored after it, is now the
    // oldest, so postgres evicts redis and kubernetes stays.
    let many = vec!["kubernetes"; TOUCH_LOG_FLUSH + 5];
    assert!(cache_statuses(&app, &many).await.iter().all(|s| s == "hit"));
    assert_eq!(
        cache_statuses(&app, &["postgres", "kubernetes", "redis"]).await,
        ["miss", "hit", "miss"]
    );
}

#[actix_web::test]
async fn concurrent_hits_keep_the_lru_order_exact() {
    use agent_pages::search::cache::view::TOUCH_LOG_FLUSH;
    let app = crate::helpers::spawn_app_with(|s| {
        s.search.cache_entries = 3;
        s.search.max_in_flight = 100_000;
        s.search_budget.set_limit("minute", 1_000_000);
        s.search_budget.set_limit("hour", 1_000_000);
    })
    .await;
    let queries = ["kubernetes", "redis", "postgres"];
    assert_eq!(cache_statuses(&app, &queries).await, ["miss"; 3]);
    // Three rounds of concurrent hits, each waited for: on all three entries, then
    // on the first two, then on the first one. Postgres is now the least recently
    // used, then redis, then kubernetes (the reverse of the order they were
    // stored in), whatever order each round's hits ran in, and with more hits in
    // all than the touch log holds before a flush.
    let per_round = 600;
    assert!(3 * per_round > TOUCH_LOG_FLUSH);
    for round in 0..3 {
        let hits: Vec<_> = (0..per_round)
            .map(|i| app.spawn_search_full(queries[i % (3 - round)], CLIENT))
            .collect();
        for hit in hits {
            let (status, cache, _) = hit.await.unwrap();
            assert_eq!((status, cache.as_str()), (200, "hit"), "round {round}");
        }
    }
    // Each miss evicts the least recently used: golang evicts postgres, then
    // postgres redis, redis kubernetes, kubernetes golang. One wrong step would
    // make a later one a hit.
    assert_eq!(
        cache_statuses(&app, &["golang", "postgres", "redis", "kubernetes"]).await,
        ["miss"; 4]
    );
}

/// Words of the generated corpus: far enough apart that each matches itself.
const WORDS: [&str; 40] = [
    "amber", "basalt", "cobalt", "dune", "ember", "fjord", "granite", "harbor", "iris", "jasper",
    "kelp", "lagoon", "meadow", "nebula", "orchid", "prairie", "quartz", "raven", "sierra",
    "tundra", "umber", "valley", "willow", "xenon", "yarrow", "zephyr", "acorn", "bramble",
    "canyon", "delta", "estuary", "falcon", "glacier", "heron", "island", "juniper", "kestrel",
    "lichen", "marsh", "nimbus",
];

/// The app over a generated corpus of `titles` pages of three [`WORDS`] each, with
/// `max_bytes` for the cache, no entry bound to speak of, `rows` rows a page and a
/// budget one client cannot use up.
async fn app_over_words(titles: usize, max_bytes: usize, rows: usize) -> crate::helpers::TestApp {
    let app = crate::helpers::spawn_app_with(|s| {
        s.search.cache_entries = 1_000_000;
        s.search.cache_max_bytes = max_bytes;
        s.search.result_limit = rows;
        s.search_budget.set_limit("minute", 1_000_000);
        s.search_budget.set_limit("hour", 1_000_000);
    })
    .await;
    let corpus: String = (0..titles)
        .map(|i| {
            let w = |k: usize| WORDS[(i * k + k) % WORDS.len()];
            format!("{{\"title\":\"{} {} {} {i}\"}}\n", w(1), w(7), w(13))
        })
        .collect();
    agent_pages::import::import_into(&app.state.pages.store, corpus.as_bytes(), None, T0)
        .await
        .unwrap();
    app
}

/// `GET /search?q=…&page=…` from [`CLIENT`]: as JSON, or as HTML with the `theme`
/// cookie set to `theme` (none: the system's theme).
async fn view(
    app: &crate::helpers::TestApp,
    q: &str,
    page: usize,
    format: View,
) -> reqwest::Response {
    let mut request = app
        .client
        .get(format!("{}/search", app.address))
        .query(&[("q", q), ("page", &page.to_string())])
        .header("X-Forwarded-For", CLIENT);
    request = match format {
        View::Json => request.header("Accept", "application/json"),
        View::Html(None) => request,
        View::Html(Some(theme)) => request.header("Cookie", format!("theme={theme}")),
    };
    let r = request.send().await.unwrap();
    assert_eq!(r.status(), 200, "{q} page {page}");
    r
}

#[derive(Clone, Copy)]
enum View {
    Json,
    Html(Option<&'static str>),
}

/// The bytes the cache holds, as `/metrics` says (the scrape asks the Cache actor,
/// so every trim asked for before it has been done).
async fn cache_bytes(app: &crate::helpers::TestApp) -> usize {
    app.metric_values().await["agent_pages_search_cache_bytes"] as usize
}

#[actix_web::test]
async fn the_cache_holds_no_more_bytes_than_its_bound_however_many_pages_are_viewed() {
    const BOUND: usize = 128 << 10;
    let app = app_over_words(60, BOUND, 5).await;
    let queries: Vec<String> = WORDS
        .iter()
        .flat_map(|a| WORDS.iter().map(move |b| format!("{a} {b}")))
        .filter(|q| {
            let (a, b) = q.split_once(' ').unwrap();
            a != b
        })
        .take(1000)
        .collect();
    let html = [
        View::Html(None),
        View::Html(Some("light")),
        View::Html(Some("dark")),
    ];
    let (mut most, mut views) = (0, 0);
    for q in &queries {
        // Every page of the query in both formats and every theme.
        let first: serde_json::Value = view(&app, q, 1, View::Json).await.json().await.unwrap();
        let pages = first["pages"].as_u64().unwrap() as usize;
        for page in 1..=pages {
            let formats = if page == 1 {
                &html[..]
            } else {
                &[View::Json, html[0], html[1], html[2]][..]
            };
            for &format in formats {
                view(&app, q, page, format).await;
            }
            views += 4;
        }
        // The actor's count, once the trims those views asked for are done.
        let stats = app.cache_stats().await;
        assert!(stats.bytes <= BOUND, "{stats:?} after {q:?}, bound {BOUND}");
        most = most.max(stats.bytes);
    }
    let stats = app.cache_stats().await;
    assert!(
        views >= 6 * queries.len(),
        "most queries have two pages: {views}"
    );
    assert!(most > BOUND / 2, "the bound was reached: at most {most}");
    assert!(
        stats.entries < queries.len() / 4,
        "entries were evicted by bytes, not by count: {stats:?}"
    );
    assert_eq!(
        cache_bytes(&app).await,
        stats.bytes,
        "the gauge says the same"
    );
}

#[actix_web::test]
async fn a_result_larger_than_the_byte_bound_is_served_but_not_kept() {
    // 1 byte: no result fits, not even before it is rendered.
    let app = crate::helpers::spawn_app_with(|s| s.search.cache_max_bytes = 1).await;
    for _ in 0..2 {
        let r = app.search("kubernetes", CLIENT).await;
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "x-search-cache"), Some("miss"));
        assert!(r.text().await.unwrap().contains("<mark>Kubernetes</mark>"));
        assert_eq!(app.cache_stats().await.entries, 0);
        assert_eq!(cache_bytes(&app).await, 0);
    }
    assert_eq!(app.faults.scorings(), 2);

    // A bound that a small JSON answer's entry and a larger entry before its HTML
    // page is kept fit in together, but that the larger entry alone passes once
    // its page is kept: that page makes it too large, so it leaves, alone.
    let roomy = spawn_app().await;
    roomy.search_json("redis", CLIENT).await;
    let small = cache_bytes(&roomy).await;
    let r = roomy.search("kubernetes", CLIENT).await;
    let page = r.text().await.unwrap().len();
    let large = cache_bytes(&roomy).await - small;
    let before_page = large - page;
    assert!(small < page, "{small} {page}: no such bound");
    let bound = (small + before_page + large) / 2;
    let app = crate::helpers::spawn_app_with(|s| s.search.cache_max_bytes = bound).await;
    let (_, headers, _) = app.search_json("redis", CLIENT).await;
    assert_eq!(headers["x-search-cache"], "miss");
    let kept = app.cache_stats().await;
    assert_eq!((kept.entries, kept.bytes), (1, small));
    for _ in 0..2 {
        let r = app.search("kubernetes", CLIENT).await;
        assert_eq!(header(&r, "x-search-cache"), Some("miss"));
        assert!(r.text().await.unwrap().contains("<mark>Kubernetes</mark>"));
        assert_eq!(app.cache_stats().await, kept, "only the large entry left");
    }
    let (_, headers, _) = app.search_json("redis", CLIENT).await;
    assert_eq!(headers["x-search-cache"], "hit");

    // 5 KiB: a result of 250 rows or more (over 6 KiB before anything is
    // rendered) is not stored at all, so it evicts nothing to make room.
    let app = app_over_words(400, 5 << 10, 50).await;
    let (_, headers, _) = app.search_json("nothing matches", CLIENT).await;
    assert_eq!(headers["x-search-cache"], "miss");
    let small = app.cache_stats().await;
    assert_eq!(small.entries, 1);
    let q = WORDS.join(" ");
    let (_, headers, body) = app.search_json(&q[..64], CLIENT).await;
    assert_eq!(headers["x-search-cache"], "miss");
    let total = body["total"].as_u64().unwrap();
    assert!(total >= 250, "{total} matches, 16 bytes a row kept");
    assert_eq!(
        app.cache_stats().await,
        small,
        "the large result was not kept"
    );
}

#[actix_web::test]
async fn a_cache_over_its_byte_bound_evicts_the_least_recently_used_entry() {
    // What each entry weighs once answered twice as JSON (a miss, then a hit: two
    // bodies), measured on an app with room for all three.
    let queries = ["kubernetes", "redis", "postgres"];
    let roomy = crate::helpers::spawn_app().await;
    let mut sizes = Vec::new();
    for q in queries {
        let before = cache_bytes(&roomy).await;
        roomy.search_json(q, CLIENT).await;
        roomy.search_json(q, CLIENT).await;
        sizes.push(cache_bytes(&roomy).await - before);
    }
    // Any two of them fit, all three do not.
    let bound = sizes.iter().sum::<usize>() - 1;
    let app = crate::helpers::spawn_app_with(|s| s.search.cache_max_bytes = bound).await;
    let cache = |q| {
        let app = &app;
        async move {
            let (status, headers, _) = app.search_json(q, CLIENT).await;
            assert_eq!(status, 200);
            // Asking the actor waits for any trim the answer asked for.
            app.cache_stats().await;
            headers["x-search-cache"].to_str().unwrap().to_owned()
        }
    };
    for q in ["kubernetes", "kubernetes", "redis", "redis"] {
        cache(q).await;
    }
    assert_eq!(cache_bytes(&app).await, sizes[0] + sizes[1]);
    // A hit on kubernetes makes redis the least recently used; postgres pushes
    // the bytes past the bound.
    assert_eq!(cache("kubernetes").await, "hit");
    assert_eq!(cache("postgres").await, "miss");
    assert_eq!(cache("postgres").await, "hit");
    assert_eq!(app.cache_stats().await.entries, 2);
    assert_eq!(cache_bytes(&app).await, sizes[0] + sizes[2]);
    assert_eq!(cache("kubernetes").await, "hit");
    assert_eq!(
        cache("redis").await,
        "miss",
        "redis was the least recently used"
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
        // Through `sql`: the same statement on SQLite and on PostgreSQL.
        app.sql(&format!(
            "INSERT INTO pages (slug, title, created_at, updated_at) \
             VALUES ('{slug}', 'Zanzibar quokka handbook {k}', 1, 1)"
        ));
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
