//! The scorer pool's strict bound: never more than SEARCH_CONCURRENCY scorings, no
//! queue, and no slot leaked by a client that goes away.

use crate::helpers::{reset, spawn_app_with};

#[actix_web::test]
async fn distinct_concurrent_misses_never_run_more_than_the_slots_and_never_queue() {
    let app = spawn_app_with(|s| {
        s.search.concurrency = 2;
        s.search_budget.set_limit("minute", 100);
    })
    .await;
    let handles: Vec<_> = (0..12)
        .map(|i| app.spawn_search(&format!("block query {i}"), &format!("198.51.100.{i}")))
        .collect();
    app.faults.wait_blocked(2).await;
    // While two scorings hold both slots, the other ten are refused, not queued.
    app.wait_work(|(_, (_, refused))| refused == 10).await;
    app.faults.open();
    let mut statuses = Vec::new();
    for h in handles {
        statuses.push(h.await.unwrap());
    }
    statuses.sort();
    assert_eq!(statuses, [[200; 2].as_slice(), &[503; 10]].concat());
    assert_eq!(app.work().await.1, (2, 10));
    assert_eq!(app.faults.max_active(), 2);
    app.wait_slots_free().await;
}

#[actix_web::test]
async fn a_client_that_disconnects_mid_scoring_does_not_leak_its_slot() {
    let app = spawn_app_with(|s| s.search.concurrency = 1).await;
    let stream = app.raw_search("block+gone", "198.51.100.9");
    app.faults.wait_blocked(1).await;
    assert_eq!(app.state.search.scorers.busy(), 1);
    reset(stream);
    // The server dropped the handler while the scoring it started still held the slot.
    let probes = app
        .probe_until_hung_up_handlers_dropped("block gone", 0)
        .await;
    assert_eq!(app.state.search.scorers.busy(), 1);
    app.faults.open();
    for h in probes {
        assert_eq!(h.await.unwrap().0, 200);
    }
    // The slot and the admission permit both came back, and the gone client was
    // never answered.
    app.wait_idle().await;
    assert_eq!(app.outcome_count("miss").await, 0);
    let r = app.search("another query", "198.51.100.10").await;
    assert_eq!(r.status(), 200, "the only slot is free again");
    assert_eq!(app.work().await.1, (2, 0), "the slot was taken again");
}
