//! The shared budget store with real programs: two `agent-pages serve` processes (the
//! built binary) on one SQLite file and one `redis-server`, as two replicas behind a
//! load balancer would run. Each replica trusts 127.0.0.1 as its proxy, so a test
//! picks the client with `X-Forwarded-For`. Windows follow the Redis server's clock.
//!
//! Also: Redis stopped in the middle (503 `budget-unavailable`, logged once, the
//! rest of the service unchanged) and started again on the same port (searches
//! succeed again without restarting anything).

#[path = "common/mod.rs"]
mod helpers;
use helpers::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use agent_pages::budget::redis::key_name;
use agent_pages::budget::Budget;
use agent_pages::client_ip::ClientIp;
use support::{ChildGuard, RedisServer};

const BIN: &str = env!("CARGO_BIN_EXE_agent-pages");

const PAGES: &str = r#"{"slug":"kubernetes","title":"Kubernetes container orchestration"}
{"slug":"golang","title":"Go programming language compiler"}
{"slug":"postgresql","title":"object-relational SQL database"}
{"slug":"redis","title":"Persistent key-value database with network interface"}
{"slug":"curl","title":"command line tool for transferring data with URL syntax"}
"#;

/// One `agent-pages serve` process and the URL from its ready line.
struct Replica {
    url: String,
    process: ChildGuard,
}

impl Replica {
    /// Starts `serve` on port 0 over `database` with its budget in `redis`, `env`
    /// added, and waits for its `listening on http://…` line.
    fn start(
        name: &str,
        dir: &Path,
        database: &Path,
        redis: &RedisServer,
        env: &[(&str, &str)],
    ) -> Self {
        let mut command = Command::new(BIN);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("AGENT_PAGES_BIND", "127.0.0.1:0")
            .env("AGENT_PAGES_DATABASE", database)
            .env("AGENT_PAGES_REDIS_URL", redis.url())
            .env("TRUSTED_PROXY_CIDRS", "127.0.0.1")
            .env("AGENT_PAGES_LOG_FORMAT", "json")
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .arg("serve");
        let mut process = ChildGuard::spawn(name, command, dir);
        let line = process.wait_for_line("listening on http://");
        let rest = line.split("listening on ").nth(1).unwrap();
        let url: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '/' | '.'))
            .collect();
        Replica { url, process }
    }
}

/// A temp folder with a migrated database holding [`PAGES`].
fn seeded_database() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("pages.sqlite3");
    let mut conn = agent_pages::sqlite::open_migrated(&database).unwrap();
    agent_pages::import::import(&mut conn, PAGES.as_bytes(), None, 1_700_000_000).unwrap();
    (dir, database)
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// `"start:count"` of search window `window` (0 minute, 1 hour) of `client`.
fn stored(redis: &RedisServer, client: &str, window: usize) -> Option<(i64, i64)> {
    let keys = Budget::search(1, 1).keys(&ClientIp::from_addr(client.parse().unwrap()));
    let value = redis.get(&key_name(&keys.0[0], &keys.0[window]))?;
    let (start, count) = value.split_once(':').unwrap();
    Some((start.parse().unwrap(), count.parse().unwrap()))
}

/// Searches with `search` until one is a 200 (within `READY_DEADLINE`), every
/// answer before it a 503 (`meanwhile` and `never` say what failed otherwise).
async fn until_searches_succeed<F, Fut>(search: F, meanwhile: &str, never: &str)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = reqwest::Result<reqwest::Response>>,
{
    let deadline = Instant::now() + support::READY_DEADLINE;
    loop {
        let status = search().await.unwrap().status();
        if status == 200 {
            return;
        }
        assert_eq!(status, 503, "{meanwhile}");
        assert!(Instant::now() < deadline, "{never}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the Redis server's clock is at most 40 s into its minute, so a test
/// that needs one minute (and one hour) window has 20 s before the boundary.
fn wait_for_a_fresh_minute(redis: &RedisServer) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while redis.time().rem_euclid(60) > 40 {
        assert!(Instant::now() < deadline, "the Redis clock does not move");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_searches_from_one_client_over_two_replicas_admit_exactly_20() {
    let redis = RedisServer::start();
    let (dir, database) = seeded_database();
    // A deadline no loaded test machine reaches: this test is about counting.
    let env = [("AGENT_PAGES_REDIS_TIMEOUT_MS", "5000")];
    let a = Replica::start("replica-a", dir.path(), &database, &redis, &env);
    let b = Replica::start("replica-b", dir.path(), &database, &redis, &env);
    wait_for_a_fresh_minute(&redis);

    let client = "198.51.100.50";
    let http = http();
    let handles: Vec<_> = (0..50)
        .map(|i| {
            let base = if i % 2 == 0 { &a.url } else { &b.url };
            let request = http
                .get(format!("{base}/search?q=kubernetes"))
                .header("X-Forwarded-For", client);
            tokio::spawn(async move { request.send().await.unwrap().status().as_u16() })
        })
        .collect();
    let mut statuses = Vec::new();
    for h in handles {
        statuses.push(h.await.unwrap());
    }
    let admitted = statuses.iter().filter(|&&s| s == 200 || s == 503).count();
    let refused = statuses.iter().filter(|&&s| s == 429).count();
    println!(
        "burst over two replicas: {} x 200, {} x 503, {refused} x 429",
        statuses.iter().filter(|&&s| s == 200).count(),
        statuses.iter().filter(|&&s| s == 503).count(),
    );
    assert_eq!((admitted, refused), (20, 30), "{statuses:?}");
    assert_eq!(stored(&redis, client, 0).map(|v| v.1), Some(20));
    assert_eq!(stored(&redis, client, 1).map(|v| v.1), Some(20));
    // Both replicas refused some: the budget is one, not one per replica.
    for replica in [&a, &b] {
        let r = http
            .get(format!("{}/search?q=golang", replica.url))
            .header("X-Forwarded-For", client)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 429, "{}", replica.url);
    }
    // No SQLite file holds a counter: the pages are there, the budget database
    // was never made.
    assert!(database.exists());
    assert!(!agent_pages::budget::open::path_beside(&database).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_hour_full_no_replica_moves_the_minute_counter() {
    let redis = RedisServer::start();
    let (dir, database) = seeded_database();
    let env = [
        ("SEARCH_RATE_PER_HOUR", "3"),
        ("AGENT_PAGES_REDIS_TIMEOUT_MS", "5000"),
    ];
    let a = Replica::start("replica-a", dir.path(), &database, &redis, &env);
    let b = Replica::start("replica-b", dir.path(), &database, &redis, &env);
    wait_for_a_fresh_minute(&redis);

    let client = "198.51.100.3";
    let http = http();
    let search = |base: &str| {
        http.get(format!("{base}/search?q=golang"))
            .header("X-Forwarded-For", client)
            .send()
    };
    for base in [&a.url, &b.url, &a.url] {
        assert_eq!(search(base).await.unwrap().status(), 200);
    }
    let minute_before = stored(&redis, client, 0);
    let before = redis.time();
    let r = search(&b.url).await.unwrap();
    let after = redis.time();
    assert_eq!(r.status(), 429);
    let retry_after: i64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (3600 - after.rem_euclid(3600)..=3600 - before.rem_euclid(3600)).contains(&retry_after),
        "Retry-After {retry_after} is not the Redis clock's time to the end of the hour"
    );
    assert_eq!(
        r.headers()["ratelimit"].to_str().unwrap(),
        format!("\"hour\";r=0;t={retry_after}")
    );
    assert_eq!(stored(&redis, client, 0), minute_before, "minute untouched");
    assert_eq!(stored(&redis, client, 1).map(|v| v.1), Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stopped_is_503_budget_unavailable_logged_once_and_redis_back_is_served_again() {
    let mut redis = RedisServer::start();
    let (dir, database) = seeded_database();
    // A stopped Redis refuses connections at once, so the 503 comes from the
    // refusal, not from the deadline; a generous deadline keeps a loaded test
    // machine from turning the searches before and after into 503s.
    let env = [("AGENT_PAGES_REDIS_TIMEOUT_MS", "5000")];
    let mut app = Replica::start("replica", dir.path(), &database, &redis, &env);
    let http = http();
    let client = "198.51.100.99";
    let search = || {
        http.get(format!("{}/search?q=postgres", app.url))
            .header("X-Forwarded-For", client)
            .header("Accept", "application/json")
            .send()
    };
    assert_eq!(search().await.unwrap().status(), 200);
    let created = http
        .post(format!("{}/api/pages", app.url))
        .json(&serde_json::json!({"title": "Shared budget notes", "pin": "s3cret-pin"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let slug = created.json::<serde_json::Value>().await.unwrap()["slug"]
        .as_str()
        .unwrap()
        .to_owned();

    redis.stop();
    let mut latencies = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let r = search().await.unwrap();
        latencies.push(started.elapsed());
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()["retry-after"], "1");
        let problem: serde_json::Value = r.json().await.unwrap();
        assert!(
            problem["type"]
                .as_str()
                .unwrap()
                .ends_with("/problems/budget-unavailable"),
            "{problem}"
        );
    }
    latencies.sort();
    println!(
        "503 budget-unavailable with Redis stopped, 20 sequential searches: min {:?}, median {:?}, max {:?}",
        latencies[0], latencies[10], latencies[19]
    );
    // A PIN check needs the failure count: 503 too, not 500.
    let r = http
        .put(format!("{}/api/pages/{slug}", app.url))
        .header("X-Page-Pin", "s3cret-pin")
        .json(&serde_json::json!({"title": "Shared budget notes, edited"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    let problem: serde_json::Value = r.json().await.unwrap();
    assert!(problem["type"]
        .as_str()
        .unwrap()
        .ends_with("/problems/budget-unavailable"));
    // Not ready while it lasts, so a load balancer sends traffic elsewhere.
    let readyz = http
        .get(format!("{}/readyz", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(readyz.status(), 503);
    // Nothing else changes: the ledger, pages and liveness answer as before.
    for path in ["/", "/p/golang", "/healthz"] {
        let r = http.get(format!("{}{path}", app.url)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
    }
    // Once per incident, not once per request.
    assert_eq!(app.process.count_lines("budget store unavailable"), 1);

    redis.start_again();
    until_searches_succeed(
        search,
        "while Redis comes back",
        "searches never succeeded again",
    )
    .await;
    app.process.wait_for_line("budget store answers again");
    let readyz = http
        .get(format!("{}/readyz", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(readyz.status(), 200);
    assert_eq!(app.process.count_lines("budget store answers again"), 1);
    assert_eq!(app.process.count_lines("budget store unavailable"), 1);
    let r = http
        .put(format!("{}/api/pages/{slug}", app.url))
        .header("X-Page-Pin", "s3cret-pin")
        .json(&serde_json::json!({"title": "Shared budget notes, edited"}))
        .send()
        .await
        .unwrap();
    let status = r.status();
    assert_eq!(
        status,
        200,
        "{}\n{}",
        r.text().await.unwrap(),
        app.process.output()
    );
    app.process.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_starts_while_redis_is_down_and_counts_once_it_is_up() {
    let mut redis = RedisServer::start();
    redis.stop();
    let (dir, database) = seeded_database();
    let env = [("AGENT_PAGES_REDIS_TIMEOUT_MS", "5000")];
    // Start-up does not wait for Redis: the ready line comes while it is down.
    let app = Replica::start("replica", dir.path(), &database, &redis, &env);
    let http = http();
    let client = "198.51.100.7";
    let search = || {
        http.get(format!("{}/search?q=curl", app.url))
            .header("X-Forwarded-For", client)
            .send()
    };
    assert_eq!(search().await.unwrap().status(), 503);
    assert_eq!(
        http.get(format!("{}/", app.url))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    redis.start_again();
    until_searches_succeed(search, "while Redis comes up", "searches never succeeded").await;
    assert_eq!(stored(&redis, client, 0).map(|v| v.1), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_reaches_a_tls_redis_whose_certificate_the_system_trusts_and_no_other() {
    let redis = RedisServer::start_tls();
    let (dir, database) = seeded_database();
    let ca = redis.tls().unwrap().ca.display().to_string();
    // SSL_CERT_FILE replaces the system's roots with the test CA.
    let trusting = [
        ("AGENT_PAGES_REDIS_TIMEOUT_MS", "5000"),
        ("SSL_CERT_FILE", ca.as_str()),
    ];
    let app = Replica::start("trusting", dir.path(), &database, &redis, &trusting);
    let http = http();
    let search = |base: &str| {
        http.get(format!("{base}/search?q=golang"))
            .header("X-Forwarded-For", "198.51.100.44")
            .send()
    };
    for remaining in [19, 18] {
        let r = search(&app.url).await.unwrap();
        assert_eq!(r.status(), 200);
        let state = r.headers()["ratelimit"].to_str().unwrap().to_owned();
        assert!(
            state.starts_with(&format!("\"minute\";r={remaining};")),
            "{state}"
        );
    }

    // Without the CA the certificate is not trusted: no budget, so no search.
    let doubting = [("AGENT_PAGES_REDIS_TIMEOUT_MS", "5000")];
    let other = Replica::start("doubting", dir.path(), &database, &redis, &doubting);
    let r = search(&other.url).await.unwrap();
    assert_eq!(r.status(), 503);
}

/// The `run_id` of the running `redis-server` (`INFO server`): a new one on
/// every start.
fn redis_run_id(redis: &RedisServer) -> String {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut redis.connection())
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("run_id:"))
        .expect("INFO server gives a run_id")
        .trim()
        .to_owned()
}

/// The clients connected to `redis` now, other than the one asking.
fn redis_clients(redis: &RedisServer) -> usize {
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query(&mut redis.connection())
        .unwrap();
    list.lines().count().saturating_sub(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_redis_restart_the_first_search_on_each_quiet_replica_is_served_once() {
    // Issue 31 §2: recovery must not cost a visitor's request.
    let mut redis = RedisServer::start();
    let (dir, database) = seeded_database();
    let env = [("AGENT_PAGES_REDIS_TIMEOUT_MS", "5000")];
    let a = Replica::start("quiet-a", dir.path(), &database, &redis, &env);
    let b = Replica::start("quiet-b", dir.path(), &database, &redis, &env);
    let http = http();
    let search = |url: &str, client: &str| {
        http.get(format!("{url}/search?q=golang"))
            .header("X-Forwarded-For", client.to_owned())
            .send()
    };
    // Each replica holds a connection to the server about to restart.
    assert_eq!(
        search(&a.url, "198.51.100.120").await.unwrap().status(),
        200
    );
    assert_eq!(
        search(&b.url, "198.51.100.121").await.unwrap().status(),
        200
    );
    assert!(redis_clients(&redis) >= 2, "each replica is connected");
    let first_server = redis_run_id(&redis);

    redis.stop();
    // The fault first: the server and every connection to it are gone.
    assert!(
        std::net::TcpStream::connect(redis.addr()).is_err(),
        "Redis is down"
    );
    redis.start_again();
    // A new server process, so every client it will list connected anew.
    // (Not "it lists no client yet": a replica's background check may
    // already have connected again, which is what this test waits for.)
    assert_ne!(redis_run_id(&redis), first_server, "Redis restarted");
    // No request meanwhile: each replica connects again by itself.
    let deadline = Instant::now() + support::READY_DEADLINE;
    while redis_clients(&redis) < 2 {
        assert!(
            Instant::now() < deadline,
            "the quiet replicas never connected again:\n{}\n{}",
            a.process.output(),
            b.process.output()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    for (replica, client) in [(&a, "198.51.100.122"), (&b, "198.51.100.123")] {
        let r = search(&replica.url, client).await.unwrap();
        assert_eq!(r.status(), 200, "{}", replica.process.output());
        // Spent exactly once.
        assert_eq!(stored(&redis, client, 0).map(|v| v.1), Some(1), "{client}");
        assert_eq!(stored(&redis, client, 1).map(|v| v.1), Some(1), "{client}");
    }
}
