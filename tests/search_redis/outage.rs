//! The Redis store going away under a running app, in process: what a search, the
//! metrics and the readiness probe say, and that the app needs no restart.

use agent_pages::clock::Clock as _;

use crate::helpers::{header, spawn_app};

#[actix_web::test]
async fn with_redis_stopped_searches_are_503_budget_unavailable_and_counted_then_served_again() {
    let mut app = spawn_app().await;
    let client = "192.0.2.150";
    assert_eq!(app.search("kubernetes", client).await.status(), 200);
    assert!(app
        .state
        .budgets
        .store
        .check_ready(app.clock.now())
        .await
        .is_ok());

    app.redis.as_mut().unwrap().stop();
    for _ in 0..3 {
        let (status, headers, body) = app.search_json("kubernetes", client).await;
        assert_eq!(status, 503);
        assert_eq!(headers["retry-after"], "1");
        assert_eq!(headers["cache-control"], "no-store");
        assert!(
            body["type"]
                .as_str()
                .unwrap()
                .ends_with("/problems/budget-unavailable"),
            "{body}"
        );
    }
    let r = app.search("kubernetes", client).await;
    assert_eq!(r.status(), 503);
    assert_eq!(header(&r, "retry-after"), Some("1"));
    assert!(
        r.text().await.unwrap().contains("name=\"q\""),
        "the form is kept"
    );
    assert_eq!(app.outcome_count("503-budget").await, 4);
    assert!(
        app.state
            .budgets
            .store
            .check_ready(app.clock.now())
            .await
            .is_err(),
        "not ready"
    );
    // Nothing was admitted without a budget: no candidate fetch, no scoring.
    let (fetches, (slots, _)) = app.work().await;
    assert_eq!((fetches, slots), (1, 1));

    app.redis.as_mut().unwrap().start_again();
    app.wait_until_async(|| async {
        app.state
            .budgets
            .store
            .check_ready(app.clock.now())
            .await
            .is_ok()
    })
    .await;
    assert_eq!(app.search("kubernetes", client).await.status(), 200);
    // A fresh (empty) Redis: the windows started again.
    assert_eq!(app.counters(client), (1, 1));
}
