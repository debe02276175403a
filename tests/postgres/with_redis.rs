//! PostgreSQL pages with Redis budgets, as a deployment of several replicas runs
//! them: the built binary's `serve` with `AGENT_PAGES_DATABASE_URL` and
//! `AGENT_PAGES_REDIS_URL`, end to end. A page is published, found (a miss, then a
//! hit), updated and archived; every search is counted in Redis (both windows),
//! none in PostgreSQL; the budget spent is 429. Windows follow the Redis server's
//! clock, as in production.

use std::process::Command;
use std::time::{Duration, Instant};

use agent_pages::budget::redis::key_name;
use agent_pages::budget::Budget;
use agent_pages::client_ip::ClientIp;
use serde_json::{json, Value};

use crate::helpers::support::ChildGuard;
use crate::helpers::{pg_server, RedisServer, PIN};

const BIN: &str = env!("CARGO_BIN_EXE_agent-pages");
const CLIENT: &str = "198.51.100.80";
const WRITER: &str = "198.51.100.81";
/// The search budget of the server: small, so that spending it is quick.
const PER_MINUTE: i64 = 6;

/// `(window start, count)` of search window `window` (0 minute, 1 hour) of
/// `client` in Redis.
fn in_redis(redis: &RedisServer, client: &str, window: usize) -> Option<(i64, i64)> {
    let keys = Budget::search(1, 1).keys(&ClientIp::from_addr(client.parse().unwrap()));
    let value = redis.get(&key_name(&keys.0[0], &keys.0[window]))?;
    let (start, count) = value.split_once(':').unwrap();
    Some((start.parse().unwrap(), count.parse().unwrap()))
}

/// The two counts (minute, hour) of `client` in Redis, 0 for none.
fn counts(redis: &RedisServer, client: &str) -> (i64, i64) {
    let count = |w| in_redis(redis, client, w).map_or(0, |(_, c)| c);
    (count(0), count(1))
}

/// A JSON search from [`CLIENT`]: (status, headers, body).
async fn search(
    http: &reqwest::Client,
    base: &str,
    q: &str,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let r = http
        .get(format!("{base}/search"))
        .query(&[("q", q)])
        .header("X-Forwarded-For", CLIENT)
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap();
    let (status, headers) = (r.status().as_u16(), r.headers().clone());
    (status, headers, r.json().await.unwrap())
}

/// The slugs of a search answer's results.
fn slugs(body: &Value) -> Vec<&str> {
    body["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {body}"))
        .iter()
        .map(|r| r["slug"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgresql_pages_with_redis_budgets_publish_search_update_archive_and_refuse_at_the_budget(
) {
    let pg = pg_server::shared();
    let db = pg.create_database();
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(BIN);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AGENT_PAGES_BIND", "127.0.0.1:0")
        .env("AGENT_PAGES_DATABASE_URL", pg.url(&db))
        .env("AGENT_PAGES_REDIS_URL", redis.url())
        // A deadline no loaded test machine reaches: this test is about counting.
        .env("AGENT_PAGES_REDIS_TIMEOUT_MS", "5000")
        .env("SEARCH_RATE_PER_MINUTE", PER_MINUTE.to_string())
        .env("SEARCH_RATE_PER_HOUR", "1000")
        .env("TRUSTED_PROXY_CIDRS", "127.0.0.1")
        .env("RUST_LOG", "warn")
        .arg("serve");
    let mut server = ChildGuard::spawn("serve", command, dir.path());
    let line = server.wait_for_line("listening on http://");
    let base: String = line
        .split("listening on ")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '/' | '.'))
        .collect();
    let http = reqwest::Client::new();
    // The test needs one minute window: start with 20 s of it left at least.
    let deadline = Instant::now() + Duration::from_secs(30);
    while redis.time().rem_euclid(60) > 40 {
        assert!(Instant::now() < deadline, "the Redis clock does not move");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Publish: the page is in PostgreSQL.
    let r = http
        .post(format!("{base}/api/pages"))
        .header("X-Forwarded-For", WRITER)
        .json(
            &json!({"slug": "wombat-care", "title": "Wombat care", "body": "Burrows.", "pin": PIN}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let stored = |query: &str| pg.text_rows(&db, query)[0][0].clone();
    assert_eq!(
        stored("SELECT title FROM pages WHERE slug = 'wombat-care'").as_deref(),
        Some("Wombat care")
    );

    // Search: a miss, then a hit; each counted once in both windows in Redis.
    let (status, headers, body) = search(&http, &base, "wombat care").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["x-search-cache"], "miss");
    assert_eq!(slugs(&body), ["wombat-care"]);
    assert!(headers.contains_key("ratelimit") && headers.contains_key("ratelimit-policy"));
    assert_eq!(counts(&redis, CLIENT), (1, 1));
    let (status, headers, body) = search(&http, &base, "wombat care").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["x-search-cache"], "hit");
    assert_eq!(counts(&redis, CLIENT), (2, 2));
    let minute = in_redis(&redis, CLIENT, 0).unwrap().0;
    let hour = in_redis(&redis, CLIENT, 1).unwrap().0;
    assert_eq!(
        (minute % 60, hour % 3600),
        (0, 0),
        "window starts {minute} {hour}"
    );
    // None of it went to PostgreSQL's counters.
    assert_eq!(
        stored("SELECT count(*) FROM rate_limit_counters").as_deref(),
        Some("0")
    );

    // Update: the next search finds the new text, scored afresh.
    let r = http
        .put(format!("{base}/api/pages/wombat-care"))
        .header("X-Forwarded-For", WRITER)
        .header("X-Page-Pin", PIN)
        .json(&json!({"title": "Wombat burrow care"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let (status, headers, body) = search(&http, &base, "wombat burrow").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["x-search-cache"], "miss");
    assert_eq!(slugs(&body), ["wombat-care"]);
    assert_eq!(body["results"][0]["title"], "Wombat burrow care", "{body}");

    // Archive: gone from search and its page.
    let r = http
        .post(format!("{base}/api/pages/wombat-care/archive"))
        .header("X-Forwarded-For", WRITER)
        .header("X-Page-Pin", PIN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let (status, _, body) = search(&http, &base, "wombat care").await;
    assert_eq!(status, 200, "{body}");
    assert!(slugs(&body).is_empty(), "an archived page found: {body}");
    let page = http
        .get(format!("{base}/p/wombat-care"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 404);
    assert_eq!(counts(&redis, CLIENT), (4, 4));

    // The rest of the minute's budget, then 429 (not counted).
    for _ in 4..PER_MINUTE {
        assert_eq!(search(&http, &base, "wombat").await.0, 200);
    }
    let (status, headers, body) = search(&http, &base, "wombat").await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["type"], "/problems/rate-limited", "{body}");
    assert!(headers.contains_key("retry-after"), "{headers:?}");
    assert_eq!(counts(&redis, CLIENT), (PER_MINUTE, PER_MINUTE));
    assert_eq!(
        (
            in_redis(&redis, CLIENT, 0).unwrap().0,
            in_redis(&redis, CLIENT, 1).unwrap().0
        ),
        (minute, hour),
        "all in the same windows"
    );
    server.kill();
}
