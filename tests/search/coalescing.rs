//! Single flight: identical concurrent misses share one scoring, and every way it
//! can end leaves no key stuck in flight.

use std::io::Write;
use std::net::TcpStream;

use crate::helpers::{spawn_app_with, TestApp};

async fn one_slot() -> TestApp {
    spawn_app_with(|s| s.search.concurrency = 1).await
}

/// Sends a search over a raw socket (so the test can hang up) and returns the socket.
fn raw_search(app: &TestApp, query: &str, client: &str) -> TcpStream {
    let addr = app.address.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET /search?q={query} HTTP/1.1\r\nHost: {addr}\r\nX-Forwarded-For: {client}\r\n\r\n"
    )
    .unwrap();
    stream
}

#[actix_web::test]
async fn twenty_identical_concurrent_misses_run_one_scoring_and_all_get_200() {
    let app = one_slot().await;
    let handles: Vec<_> = (0..20)
        .map(|i| app.spawn_search_full("block kubernetes", &format!("198.51.100.{i}")))
        .collect();
    app.faults.wait_blocked(1).await;
    app.wait_waiters(20).await;
    app.faults.open();
    let mut answers = Vec::new();
    for h in handles {
        answers.push(h.await.unwrap());
    }
    assert!(
        answers.iter().all(|(status, ..)| *status == 200),
        "{answers:?}"
    );
    let misses = answers
        .iter()
        .filter(|(_, cache, _)| cache == "miss")
        .count();
    let joins = answers
        .iter()
        .filter(|(_, cache, _)| cache == "join")
        .count();
    assert_eq!((misses, joins), (1, 19));
    let results =
        |body: &str| serde_json::from_str::<serde_json::Value>(body).unwrap()["results"].clone();
    assert!(answers
        .iter()
        .all(|(_, _, body)| results(body) == results(&answers[0].2)));
    assert_eq!(app.faults.scorings(), 1);
    assert_eq!(app.state.scorers.counts(), (1, 0), "joins take no slot");
    assert_eq!(app.cache_stats().await.flights, 0);
}

#[actix_web::test]
async fn distinct_concurrent_misses_with_one_slot_still_get_503() {
    let app = one_slot().await;
    let leader = app.spawn_search_full("block first", "198.51.100.1");
    app.faults.wait_blocked(1).await;
    let others: Vec<_> = (0..19)
        .map(|i| {
            app.spawn_search_full(
                &format!("other query {i}"),
                &format!("198.51.100.{}", i + 2),
            )
        })
        .collect();
    for h in others {
        assert_eq!(h.await.unwrap().0, 503);
    }
    app.faults.open();
    assert_eq!(leader.await.unwrap().0, 200);
}

#[actix_web::test]
async fn when_the_leader_panics_every_joiner_gets_500_and_the_next_search_starts_afresh() {
    let app = one_slot().await;
    let handles: Vec<_> = (0..5)
        .map(|i| app.spawn_search_full("block then panic", &format!("198.51.100.{i}")))
        .collect();
    app.faults.wait_blocked(1).await;
    app.wait_waiters(5).await;
    app.faults.open();
    for h in handles {
        assert_eq!(h.await.unwrap().0, 500);
    }
    assert_eq!(app.cache_stats().await.flights, 0, "the key was released");
    app.wait_slots_free().await;
    let (status, ..) = app
        .spawn_search_full("block then panic", "198.51.100.9")
        .await
        .unwrap();
    assert_eq!(status, 500);
    assert_eq!(
        app.faults.scorings(),
        2,
        "a fresh computation, not a stuck join"
    );
}

#[actix_web::test]
async fn when_the_leaders_client_hangs_up_the_scoring_goes_on_for_the_joiners() {
    let app = one_slot().await;
    let leader = raw_search(&app, "block+leader+leaves", "198.51.100.1");
    app.faults.wait_blocked(1).await;
    let joiners: Vec<_> = (0..3)
        .map(|i| app.spawn_search_full("block leader leaves", &format!("198.51.100.{}", i + 2)))
        .collect();
    app.wait_waiters(4).await;
    drop(leader);
    app.faults.open();
    for h in joiners {
        let (status, cache, _) = h.await.unwrap();
        assert_eq!((status, cache.as_str()), (200, "join"));
    }
    let (_, cache, _) = app
        .spawn_search_full("block leader leaves", "198.51.100.8")
        .await
        .unwrap();
    assert_eq!(
        cache, "hit",
        "the leaderless scoring still stored its result"
    );
    assert_eq!(app.cache_stats().await.flights, 0);
}

#[actix_web::test]
async fn a_joiner_that_hangs_up_affects_only_itself() {
    let app = one_slot().await;
    let leader = app.spawn_search_full("block joiner leaves", "198.51.100.1");
    app.faults.wait_blocked(1).await;
    let joiner = raw_search(&app, "block+joiner+leaves", "198.51.100.2");
    app.wait_waiters(2).await;
    drop(joiner);
    app.faults.open();
    let (status, cache, _) = leader.await.unwrap();
    assert_eq!((status, cache.as_str()), (200, "miss"));
    assert_eq!(app.cache_stats().await.flights, 0);
    app.wait_slots_free().await;
}
