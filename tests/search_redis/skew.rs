//! Refusals are remembered in the store's time (SPEC §10): two replicas on one
//! redis-server whose windows follow the server's clock (`TIME`), one replica's own
//! clock 8 s fast. Its memo of full windows must end when the Redis window ends, and
//! its `Retry-After` never exceed what the store has left.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_pages::budget::redis::RedisSettings;
use agent_pages::budget::Budget;
use agent_pages::clock::{Clock, SystemClock};

use crate::helpers::{header, spawn_app_on, RedisServer, Store, TestApp};

/// The system clock moved by `.0` seconds (8: eight seconds fast).
struct Skewed(i64);

impl Clock for Skewed {
    fn now(&self) -> i64 {
        SystemClock.now() + self.0
    }
}

/// A replica whose clock is `skew` seconds off, 3 searches a minute, its budget in
/// `redis` with the server's clock.
async fn replica(redis: &RedisServer, skew: i64) -> TestApp {
    let url = redis.url();
    spawn_app_on(Store::Sqlite, move |s| {
        s.clock = Arc::new(Skewed(skew));
        s.search_budget = Budget::search(3, 1000);
        s.budgets = agent_pages::budget::open::BudgetsAt::Redis(RedisSettings {
            call_timeout: Duration::from_secs(5),
            server_clock: true,
            ..RedisSettings::new(url)
        });
    })
    .await
}

/// Polls the Redis clock until `condition` holds for its unix seconds; fails the
/// test after 90 s.
async fn wait_for_redis(redis: &RedisServer, what: &str, condition: impl Fn(i64) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !condition(redis.time()) {
        assert!(
            Instant::now() < deadline,
            "the Redis clock never reached {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[actix_web::test]
async fn clock_skew_a_replica_8_s_fast_refuses_no_longer_than_the_stores_window() {
    let redis = RedisServer::start();
    let a = replica(&redis, 0).await;
    let b = replica(&redis, 8).await;
    let client = "198.51.100.88";

    // The budget is used up on B late in a Redis minute, when B's own clock already
    // reads the next minute.
    wait_for_redis(&redis, "second 52-55 of a minute", |t| {
        (52..=55).contains(&t.rem_euclid(60))
    })
    .await;
    let minute = redis.time().div_euclid(60);
    for _ in 0..3 {
        assert_eq!(b.search("golang", client).await.status(), 200);
    }
    // The first refusal comes from the store, the next from B's memo: every
    // Retry-After at most the store's seconds left when the request was sent.
    for _ in 0..3 {
        let left = 60 - redis.time().rem_euclid(60);
        let r = b.search("golang", client).await;
        assert_eq!(r.status(), 429);
        let retry_after: i64 = header(&r, "retry-after").unwrap().parse().unwrap();
        assert!(
            (1..=left).contains(&retry_after),
            "Retry-After {retry_after} with {left} s left in the Redis minute"
        );
        assert_eq!(
            header(&r, "ratelimit").unwrap(),
            format!("\"minute\";r=0;t={retry_after}")
        );
    }
    assert_eq!(
        redis.time().div_euclid(60),
        minute,
        "the test machine took over 4 s for six searches: the refusals crossed the minute"
    );

    // One second into the next Redis minute both replicas admit the client.
    wait_for_redis(&redis, "the next minute", |t| t.div_euclid(60) > minute).await;
    assert_eq!(a.search("golang", client).await.status(), 200);
    let r = b.search("golang", client).await;
    assert_eq!(
        (r.status().as_u16(), header(&r, "retry-after")),
        (200, None),
        "B still refuses from a memo kept in its own clock"
    );
    // One budget: A's search and B's both counted in the new Redis window.
    assert!(
        header(&r, "ratelimit")
            .unwrap()
            .starts_with("\"minute\";r=1;"),
        "{:?}",
        header(&r, "ratelimit")
    );
}
