//! Two `agent-pages serve` processes (the built binary) on one PostgreSQL database
//! and no shared file, as replicas on two hosts would run: a write on either is in
//! the other's next search, they share one budget per client, either survives the
//! other's `kill -9`, and both fail closed while PostgreSQL is stopped and serve
//! again once it is back, without a restart. Each replica trusts 127.0.0.1 as its
//! proxy, so a test picks the client with `X-Forwarded-For`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::support::ChildGuard;
use crate::helpers::{import_into_postgres, pg_settings, PostgresServer, PAGES};
use crate::helpers::{pg_server, PIN};

const BIN: &str = env!("CARGO_BIN_EXE_agent-pages");

/// One `agent-pages serve` process and the URL from its ready line.
pub struct Replica {
    pub url: String,
    pub process: ChildGuard,
}

impl Replica {
    /// Starts `serve` on port 0 with its pages in `database_url`, `env` added, and
    /// waits for its `listening on http://…` line.
    pub fn start(name: &str, dir: &Path, database_url: &str, env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(BIN);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("AGENT_PAGES_BIND", "127.0.0.1:0")
            .env("AGENT_PAGES_DATABASE_URL", database_url)
            // Not used with PostgreSQL: no file may appear here.
            .env("AGENT_PAGES_DATABASE", dir.join("unused.sqlite3"))
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

pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A database of its own on `server` holding [`PAGES`]; its URL.
pub async fn seeded(server: &PostgresServer) -> String {
    let db = server.create_database();
    import_into_postgres(&pg_settings(server, &db), PAGES, 1_700_000_000).await;
    server.url(&db)
}

/// The slugs of a JSON search for `q` from `client` on `url`, and the status.
async fn found(url: &str, q: &str, client: &str) -> (u16, Vec<String>) {
    let r = http()
        .get(format!("{url}/search"))
        .query(&[("q", q)])
        .header("X-Forwarded-For", client)
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let body: Value = r.json().await.unwrap_or(Value::Null);
    let slugs = body["results"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| r["slug"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    (status, slugs)
}

async fn post(url: &str, path: &str, body: Value, pin: Option<&str>) -> (u16, Value) {
    let mut r = http()
        .post(format!("{url}{path}"))
        .header("X-Forwarded-For", "198.51.100.9")
        .json(&body);
    if let Some(pin) = pin {
        r = r.header("X-Page-Pin", pin);
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_on_either_replica_is_in_the_others_next_search_and_ledger() {
    let server = pg_server::shared();
    let url = seeded(server).await;
    let dir = tempfile::tempdir().unwrap();
    let a = Replica::start("replica-a", dir.path(), &url, &[]);
    let b = Replica::start("replica-b", dir.path(), &url, &[]);

    // Each has searched once, so each holds a snapshot to follow from.
    assert_eq!(found(&a.url, "orchestration", "192.0.2.1").await.0, 200);
    assert_eq!(found(&b.url, "orchestration", "192.0.2.1").await.0, 200);

    let (status, created) = post(
        &a.url,
        "/api/pages",
        json!({"slug": "zebrafish", "title": "Zebrafish husbandry notes", "pin": PIN}),
        None,
    )
    .await;
    assert_eq!(status, 201, "{created}");
    // The very next search on B, no waiting.
    let (status, slugs) = found(&b.url, "zebrafish husbandry", "192.0.2.2").await;
    assert_eq!(status, 200);
    assert_eq!(
        slugs.first().map(String::as_str),
        Some("zebrafish"),
        "{slugs:?}"
    );

    let (status, body) = post(&b.url, "/api/pages/zebrafish/archive", json!({}), Some(PIN)).await;
    assert_eq!(status, 200, "{body}");
    let (status, slugs) = found(&a.url, "zebrafish husbandry", "192.0.2.3").await;
    assert_eq!(status, 200);
    assert!(!slugs.contains(&"zebrafish".to_owned()), "{slugs:?}");
    let ledger = http()
        .get(&a.url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !ledger.contains("/p/zebrafish\""),
        "archived page on A's ledger"
    );
    assert!(ledger.contains("/p/kubernetes\""));
    assert!(
        !dir.path().join("unused.sqlite3").exists(),
        "no SQLite file"
    );
}

/// Waits until the database server's clock is at least 10 s from an hour's end, so
/// a test needing one hour window has it.
fn wait_for_room_in_the_hour(server: &PostgresServer, db: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now: i64 = server.text_rows(db, "SELECT floor(extract(epoch FROM now()))::bigint")[0]
            [0]
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
        if now.rem_euclid(3600) < 3590 {
            return;
        }
        assert!(Instant::now() < deadline, "the clock does not move");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_searches_from_one_client_over_both_replicas_admit_exactly_the_budget() {
    let server = pg_server::shared();
    let url = seeded(server).await;
    let db = url.rsplit('/').next().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    // The hour window binds (a minute boundary in the middle changes nothing).
    let env = [
        ("SEARCH_RATE_PER_MINUTE", "1000"),
        ("SEARCH_RATE_PER_HOUR", "20"),
    ];
    let a = Replica::start("budget-a", dir.path(), &url, &env);
    let b = Replica::start("budget-b", dir.path(), &url, &env);
    wait_for_room_in_the_hour(server, &db);
    let searches: Vec<_> = (0..50)
        .map(|i| {
            let url = if i % 2 == 0 {
                a.url.clone()
            } else {
                b.url.clone()
            };
            tokio::spawn(async move { found(&url, "kubernetes", "203.0.113.50").await.0 })
        })
        .collect();
    let mut statuses = Vec::new();
    for s in searches {
        statuses.push(s.await.unwrap());
    }
    let refused = statuses.iter().filter(|s| **s == 429).count();
    let admitted = statuses.iter().filter(|s| matches!(**s, 200 | 503)).count();
    assert_eq!((admitted, refused), (20, 30), "{statuses:?}");
    let counted = server.text_rows(
        &db,
        "SELECT max(count) FROM rate_limit_counters WHERE count > 0",
    )[0][0]
        .clone();
    assert_eq!(counted.as_deref(), Some("20"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn either_replica_keeps_serving_after_the_other_is_killed() {
    let server = pg_server::shared();
    let url = seeded(server).await;
    let dir = tempfile::tempdir().unwrap();
    for victim in 0..2 {
        let mut replicas = [
            Replica::start(&format!("kill-{victim}-a"), dir.path(), &url, &[]),
            Replica::start(&format!("kill-{victim}-b"), dir.path(), &url, &[]),
        ];
        assert_eq!(found(&replicas[0].url, "golang", "192.0.2.20").await.0, 200);
        // kill -9 mid-life: its connections drop without a goodbye.
        replicas[victim].process.kill();
        let survivor = &replicas[1 - victim];
        let slug = format!("after-kill-{victim}");
        let (status, body) = post(
            &survivor.url,
            "/api/pages",
            json!({"slug": slug, "title": format!("Written after kill {victim}")}),
            None,
        )
        .await;
        assert_eq!(status, 201, "{body}");
        let (status, slugs) = found(&survivor.url, "written after kill", "192.0.2.21").await;
        assert_eq!(status, 200);
        assert!(slugs.contains(&slug), "{slugs:?}");
        let ready = http()
            .get(format!("{}/readyz", survivor.url))
            .send()
            .await
            .unwrap();
        assert_eq!(ready.status(), 200);
    }
}

/// Polls `url/readyz` until it answers `status` (30 s at most); returns its body.
async fn until_ready_is(url: &str, status: u16) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(r) = http().get(format!("{url}/readyz")).send().await {
            if r.status().as_u16() == status {
                return r.json().await.unwrap();
            }
        }
        assert!(
            Instant::now() < deadline,
            "{url}/readyz never answered {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_postgresql_stopped_both_replicas_fail_closed_and_serve_again_once_it_is_back() {
    // A server of its own: this test stops it.
    let mut server = PostgresServer::start();
    let db = server.create_database();
    import_into_postgres(&pg_settings(&server, &db), PAGES, 1_700_000_000).await;
    let url = server.url(&db);
    let dir = tempfile::tempdir().unwrap();
    let env = [("AGENT_PAGES_DATABASE_TIMEOUT_MS", "1000")];
    let replicas = [
        Replica::start("outage-a", dir.path(), &url, &env),
        Replica::start("outage-b", dir.path(), &url, &env),
    ];
    for r in &replicas {
        assert_eq!(found(&r.url, "golang", "192.0.2.30").await.0, 200);
        until_ready_is(&r.url, 200).await;
    }

    server.stop("fast");
    for r in &replicas {
        for _ in 0..3 {
            let (status, _) = found(&r.url, "golang", "192.0.2.31").await;
            assert_eq!(status, 503, "a search without the generation");
        }
        let (status, body) = post(
            &r.url,
            "/api/pages",
            json!({"title": "During the outage"}),
            None,
        )
        .await;
        assert_eq!(status, 503, "{body}");
        let kind = body["type"].as_str().unwrap();
        assert!(
            kind == "/problems/budget-unavailable" || kind == "/problems/storage-unavailable",
            "{body}"
        );
        let ledger = http().get(&r.url).send().await.unwrap();
        assert_eq!(ledger.status(), 503);
        assert!(ledger.headers().contains_key("retry-after"));
        let ready = until_ready_is(&r.url, 503).await;
        assert_eq!(ready["ready"], false, "{ready}");
        assert_eq!(ready["database"], "the database does not answer", "{ready}");
    }

    server.start_again();
    for r in &replicas {
        until_ready_is(&r.url, 200).await;
        assert_eq!(http().get(&r.url).send().await.unwrap().status(), 200);
        let (status, slugs) = found(&r.url, "golang", "192.0.2.32").await;
        assert_eq!(status, 200);
        assert!(slugs.contains(&"golang".to_owned()));
    }
    let (status, body) = post(
        &replicas[0].url,
        "/api/pages",
        json!({"slug": "after-the-outage", "title": "Written after the outage"}),
        None,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (_, slugs) = found(&replicas[1].url, "written after the outage", "192.0.2.33").await;
    assert!(slugs.contains(&"after-the-outage".to_owned()), "{slugs:?}");
    for r in &replicas {
        // Once per incident: down once, up once, whatever the number of requests.
        assert_eq!(
            r.process.count_lines("page store unavailable"),
            1,
            "{}",
            r.process.output()
        );
        assert_eq!(
            r.process.count_lines("page store answers again"),
            1,
            "{}",
            r.process.output()
        );
    }
}
