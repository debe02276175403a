//! Store clients recover (SPEC §10): a Redis connection that answers with a fault
//! the server will not fix on that connection (a refused password, a read-only
//! replica, silence) is replaced, and readiness checks a write, so a replica is
//! "not ready". Real redis-server processes, one address in front of them
//! ([`Forwarder`]) where a failover needs one; the app in process.
//!
//! Each test prints how long recovery took after the fault was fixed (or, for a
//! failover, after it happened); docs/scaling.md quotes these figures.

use std::time::{Duration, Instant};

use agent_pages::budget::redis::{key_name, RedisSettings};
use agent_pages::client_ip::ClientIp;

use crate::forwarder::Forwarder;
use crate::helpers::support::READY_DEADLINE;
use crate::helpers::{spawn_app_on, RedisServer, Store, TestApp};

/// The app with its budget in the Redis at `url` (manual clock; a deadline no
/// loaded test machine reaches unless told otherwise).
async fn app_on(url: String, call_timeout: Duration) -> TestApp {
    spawn_app_on(Store::Sqlite, |s| {
        s.budgets = agent_pages::budget::open::BudgetsAt::Redis(RedisSettings {
            call_timeout,
            server_clock: false,
            ..RedisSettings::new(url)
        })
    })
    .await
}

/// `/readyz`'s status and its `budget_store` check.
async fn readiness(app: &TestApp) -> (u16, String) {
    let r = app.get("/readyz").await;
    let status = r.status().as_u16();
    let body: serde_json::Value = r.json().await.unwrap();
    (status, body["budget_store"].as_str().unwrap().to_owned())
}

/// Asserts that searches from `client` are 503 `budget-unavailable` and `/readyz`
/// fails on the budget store.
async fn assert_unavailable(app: &TestApp, client: &str) {
    let (status, _, body) = app.search_json("kubernetes", client).await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body["type"]
            .as_str()
            .unwrap()
            .ends_with("/problems/budget-unavailable"),
        "{body}"
    );
    let (status, check) = readiness(app).await;
    assert_eq!(status, 503, "{check}");
    assert_ne!(check, "ok");
}

/// Searches from `client` every 20 ms until one is a 200 (every answer before it a
/// 503 `budget-unavailable`), then checks that `/readyz` is 200. Returns how long
/// that took from `since`. Fails the test after [`READY_DEADLINE`].
async fn until_served(app: &TestApp, client: &str, since: Instant) -> Duration {
    loop {
        let (status, _, body) = app.search_json("kubernetes", client).await;
        if status == 200 {
            break;
        }
        assert_eq!(status, 503, "{body}");
        assert!(
            since.elapsed() < READY_DEADLINE,
            "the budget store never answered again: every search stayed 503"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = since.elapsed();
    assert_eq!(readiness(app).await, (200, "ok".to_owned()));
    took
}

/// The `"start:count"` of `client`'s search minute window in `redis`.
fn minute_count(app: &TestApp, redis: &RedisServer, client: &str) -> Option<i64> {
    let keys = app
        .state
        .budgets
        .search
        .keys(&ClientIp::from_addr(client.parse().unwrap()));
    let value = redis.get(&key_name(&keys.0[0], &keys.0[0]))?;
    Some(value.split_once(':').unwrap().1.parse().unwrap())
}

#[actix_web::test]
async fn auth_a_password_set_right_on_the_server_is_picked_up_without_a_restart() {
    let mut redis = RedisServer::start_with(&["--requirepass", "old"]);
    let app = app_on(redis.url_with_password("new"), Duration::from_secs(5)).await;
    let client = "192.0.2.201";
    // The handshake is refused: no budget, so nothing is admitted, and not ready.
    for _ in 0..5 {
        assert_unavailable(&app, client).await;
    }

    // The operator finishes the rotation: the server now takes the app's password.
    redis.admin(Some("old"), &["CONFIG", "SET", "requirepass", "new"]);
    let fixed = Instant::now();
    let took = until_served(&app, client, fixed).await;
    println!("auth: served again {took:?} after the password was set on the server");

    // Counted once, on the new connection; and the PIN routes count again too.
    redis.use_password("new");
    assert_eq!(minute_count(&app, &redis, client), Some(1));
    let created = app
        .client
        .post(format!("{}/api/pages", app.address))
        .json(&serde_json::json!({"title": "Rotated", "pin": "rotated-pin"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let slug = created.json::<serde_json::Value>().await.unwrap()["slug"]
        .as_str()
        .unwrap()
        .to_owned();
    let updated = app
        .client
        .put(format!("{}/api/pages/{slug}", app.address))
        .header("X-Page-Pin", "rotated-pin")
        .json(&serde_json::json!({"title": "Rotated again"}))
        .send()
        .await
        .unwrap();
    assert_eq!(updated.status(), 200);
}

#[actix_web::test]
async fn role_a_primary_demoted_behind_one_address_is_left_for_the_new_primary() {
    let old = RedisServer::start();
    let new = RedisServer::start();
    let address = Forwarder::start(old.addr());
    let app = app_on(address.url(None), Duration::from_secs(5)).await;
    let client = "192.0.2.202";
    assert_eq!(app.search("kubernetes", client).await.status(), 200);
    assert_eq!(readiness(&app).await, (200, "ok".to_owned()));
    assert_eq!(minute_count(&app, &old, client), Some(1));

    // Failover behind the one address: new connections reach the new primary, and
    // the old one becomes its replica (it keeps its clients: they get READONLY).
    address.repoint(new.addr());
    old.admin(None, &["REPLICAOF", "127.0.0.1", &new.port().to_string()]);
    let failed_over = Instant::now();
    let took = until_served(&app, client, failed_over).await;
    println!("READONLY: served again {took:?} after the primary was demoted");

    // The new primary counts: a fresh window there.
    assert_eq!(minute_count(&app, &new, client), Some(1));
    assert_eq!(app.search("kubernetes", client).await.status(), 200);
    assert_eq!(minute_count(&app, &new, client), Some(2));
    assert!(app.state.budgets.store.kind() == "redis");
}

#[actix_web::test]
async fn role_an_app_started_against_a_replica_is_not_ready_until_a_primary_is_reached() {
    let primary = RedisServer::start();
    let replica = RedisServer::start();
    replica.admin(
        None,
        &["REPLICAOF", "127.0.0.1", &primary.port().to_string()],
    );
    let address = Forwarder::start(replica.addr());
    let app = app_on(address.url(None), Duration::from_secs(5)).await;
    let client = "192.0.2.203";
    // A replica answers reads: a read would call it ready. A write says it is not.
    for _ in 0..3 {
        assert_unavailable(&app, client).await;
    }

    address.repoint(primary.addr());
    let repointed = Instant::now();
    let took = until_served(&app, client, repointed).await;
    println!("start against a replica: served {took:?} after the address led to the primary");
    assert_eq!(minute_count(&app, &primary, client), Some(1));
}

#[actix_web::test]
async fn silence_a_connection_that_stops_answering_is_replaced() {
    let redis = RedisServer::start();
    let address = Forwarder::start(redis.addr());
    // Short enough to run out, long enough for a loaded machine's real answers.
    let app = app_on(address.url(None), Duration::from_millis(1500)).await;
    let client = "192.0.2.204";
    assert_eq!(app.search("kubernetes", client).await.status(), 200);

    // The open connection goes quiet without being closed, as one to a host that
    // vanished does; TCP alone would notice after many minutes.
    let connections_before = address.connections();
    address.silence_open_connections();
    let silenced = Instant::now();
    let took = until_served(&app, client, silenced).await;
    println!("silence: served again {took:?} after the connection went quiet (deadline 1.5 s)");
    // The fault came first: the app sent into the silenced connection (a call that
    // went unanswered), and was then served over a connection made since.
    assert!(address.swallowed() > 0, "the app never met the silence");
    assert!(
        address.connections() > connections_before,
        "served again without a new connection: the silenced one was never left"
    );
    // The call that ran out may or may not have reached Redis before the silence:
    // at most one more count than the answered searches.
    let count = minute_count(&app, &redis, client).unwrap();
    assert!((2..=3).contains(&count), "{count}");
}
