//! How long the Redis client takes to recover from each fault of `recovery.rs`,
//! with the default 50 ms call deadline and a search every 20 ms: a measurement,
//! not a test (no timing is asserted), so it is ignored by default. Run:
//!
//! ```sh
//! cargo test --locked --test search_redis recovery_times -- --ignored --nocapture --test-threads 1
//! ```
//!
//! docs/scaling.md quotes its figures.

use std::time::{Duration, Instant};

use agent_pages::budget::redis::{RedisSettings, DEFAULT_CALL_TIMEOUT};

use crate::forwarder::Forwarder;
use crate::helpers::{spawn_app_on, RedisServer, Store, TestApp};

const ROUNDS: usize = 3;
const CLIENT: &str = "192.0.2.9";

async fn app_on(url: String) -> TestApp {
    spawn_app_on(Store::Sqlite, |s| {
        s.budgets = agent_pages::budget::open::BudgetsAt::Redis(RedisSettings {
            call_timeout: DEFAULT_CALL_TIMEOUT,
            server_clock: false,
            ..RedisSettings::new(url)
        })
    })
    .await
}

/// Searches every 20 ms for `period`, whatever the answers.
async fn traffic(app: &TestApp, period: Duration) {
    let started = Instant::now();
    while started.elapsed() < period {
        let _ = app.search("kubernetes", CLIENT).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Searches every 20 ms until one is a 200; how long that took.
async fn until_served(app: &TestApp) -> Duration {
    let started = Instant::now();
    while app.search("kubernetes", CLIENT).await.status() != 200 {
        assert!(started.elapsed() < Duration::from_secs(60), "never served");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    started.elapsed()
}

#[actix_web::test]
#[ignore = "a measurement; run with --ignored --nocapture"]
async fn recovery_times() {
    for round in 0..ROUNDS {
        // The password was wrong for 10 s of traffic (the backoff at its longest).
        let redis = RedisServer::start_with(&["--requirepass", "old"]);
        let app = app_on(redis.url_with_password("new")).await;
        traffic(&app, Duration::from_secs(10)).await;
        redis.admin(Some("old"), &["CONFIG", "SET", "requirepass", "new"]);
        println!(
            "auth, after 10 s refused, round {round}: {:?}",
            until_served(&app).await
        );

        // A failover behind one address: the old primary demoted to a replica.
        let old = RedisServer::start();
        let new = RedisServer::start();
        let address = Forwarder::start(old.addr());
        let app = app_on(address.url(None)).await;
        assert_eq!(app.search("kubernetes", CLIENT).await.status(), 200);
        address.repoint(new.addr());
        old.admin(None, &["REPLICAOF", "127.0.0.1", &new.port().to_string()]);
        println!(
            "READONLY after a demotion, round {round}: {:?}",
            until_served(&app).await
        );

        // Started against a replica, 10 s of traffic, then the address leads to
        // the primary.
        let address = Forwarder::start(old.addr());
        let app = app_on(address.url(None)).await;
        traffic(&app, Duration::from_secs(10)).await;
        address.repoint(new.addr());
        println!(
            "started against a replica, round {round}: {:?}",
            until_served(&app).await
        );

        // The open connection goes silent (not closed).
        let redis = RedisServer::start();
        let address = Forwarder::start(redis.addr());
        let app = app_on(address.url(None)).await;
        assert_eq!(app.search("kubernetes", CLIENT).await.status(), 200);
        address.silence_open_connections();
        println!(
            "silent connection, round {round}: {:?}",
            until_served(&app).await
        );
    }
}
