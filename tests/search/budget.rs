//! Gates 3/4 through HTTP: the two windows, their atomic rollback, their boundaries.

use crate::helpers::{header, spawn_app, spawn_app_with, T0};

#[actix_web::test]
async fn the_21st_search_in_a_minute_is_429_and_the_hour_counter_reads_20() {
    let app = spawn_app().await;
    let client = "192.0.2.21";
    for i in 1..=20 {
        let r = app.search("postgres", client).await;
        assert_eq!(r.status(), 200, "search {i}");
    }
    let r = app.search("postgres", client).await;
    assert_eq!(r.status(), 429);
    assert_eq!(header(&r, "retry-after"), Some("60"));
    assert_eq!(app.counters(client), (20, 20));
    // Another client has its own budget.
    assert_eq!(app.search("postgres", "192.0.2.22").await.status(), 200);
}

#[actix_web::test]
async fn with_the_hour_full_the_minute_counter_is_rolled_back() {
    let app = spawn_app_with(|s| s.search_budget.set_limit("hour", 3)).await;
    let client = "192.0.2.30";
    for minute in 0..3 {
        app.clock.set(T0 + minute * 60);
        assert_eq!(app.search("redis", client).await.status(), 200);
    }
    app.clock.set(T0 + 3 * 60 + 10);
    let r = app.search("redis", client).await;
    assert_eq!(r.status(), 429);
    assert_eq!(header(&r, "retry-after"), Some(&*(3600 - 190).to_string()));
    // The minute row still belongs to minute 2 with count 1: nothing was written.
    assert_eq!(app.window_row(client, 0), Some((T0 + 120, 1)));
    assert_eq!(app.counters(client).1, 3);
}

#[actix_web::test]
async fn fifty_concurrent_searches_against_a_budget_of_20_admit_exactly_20() {
    let app = spawn_app().await;
    let client = "192.0.2.50";
    let handles: Vec<_> = (0..50).map(|_| app.spawn_search("curl", client)).collect();
    let mut statuses = Vec::new();
    for h in handles {
        statuses.push(h.await.unwrap());
    }
    let refused = statuses.iter().filter(|&&s| s == 429).count();
    let admitted = statuses.iter().filter(|&&s| s == 200 || s == 503).count();
    assert_eq!((admitted, refused), (20, 30), "{statuses:?}");
    assert_eq!(app.counters(client), (20, 20));
}

#[actix_web::test]
async fn windows_reset_on_their_boundaries_and_retry_after_counts_down() {
    let app = spawn_app_with(|s| s.search_budget.set_limit("minute", 1)).await;
    let client = "192.0.2.60";
    app.clock.set(T0 + 60);
    assert_eq!(app.search("vim", client).await.status(), 200);
    for (now, left) in [(T0 + 60, "60"), (T0 + 61, "59"), (T0 + 119, "1")] {
        app.clock.set(now);
        let r = app.search("vim", client).await;
        assert_eq!(
            (r.status().as_u16(), header(&r, "retry-after")),
            (429, Some(left))
        );
    }
    app.clock.set(T0 + 120);
    assert_eq!(app.search("vim", client).await.status(), 200);
    assert_eq!(app.counters(client), (1, 2));
}

#[actix_web::test]
async fn a_third_window_added_to_the_budget_data_alone_is_enforced_end_to_end() {
    // No variable sets a third window: the test adds one to the settings' budget
    // data, and no code names minute or hour.
    let app = spawn_app_with(|s| {
        s.search_budget
            .windows
            .push(agent_pages::budget::FixedWindow::new("day", 86_400, 3));
    })
    .await;
    let client = "192.0.2.88";
    for hour in 0..3 {
        app.clock.set(T0 + hour * 3600);
        assert_eq!(app.search("redis", client).await.status(), 200);
    }
    app.clock.set(T0 + 3 * 3600 + 5);
    let r = app.search("redis", client).await;
    assert_eq!(r.status(), 429);
    let day_left = 86_400 - (T0 + 3 * 3600 + 5) % 86_400;
    assert_eq!(header(&r, "retry-after"), Some(&*day_left.to_string()));
    assert_eq!(
        header(&r, "ratelimit"),
        Some(&*format!("\"day\";r=0;t={day_left}"))
    );
    assert_eq!(app.outcome_count("429-day").await, 1);
    assert_eq!(
        app.counters(client),
        (1, 1),
        "minute and hour rows unchanged"
    );
}
