//! The budget-related search tests of `tests/search/` (budget, outcome matrix,
//! admission and rate-limit headers) run again with the counters in Redis: each app
//! gets a real `redis-server` of its own (no persistence, free port), and the
//! tests' counter reads go to Redis instead of SQLite. Same assertions, other store.

#[path = "../search/admission.rs"]
mod admission;
#[path = "../search/budget.rs"]
mod budget;
#[path = "../common/mod.rs"]
mod common;
mod forwarder;
#[path = "../search/matrix.rs"]
mod matrix;
mod outage;
mod pins;
mod recovery;
mod recovery_times;
mod skew;

/// What the included tests call `crate::helpers`: the shared helpers, with the two
/// spawn functions putting the budget in Redis.
mod helpers {
    pub use crate::common::*;

    use agent_pages::configuration::Settings;

    /// The app with default settings, budget counters in its own redis-server.
    pub async fn spawn_app() -> TestApp {
        spawn_app_on(Store::Redis, |_| {}).await
    }

    /// [`spawn_app`] with `configure` applied to the settings first.
    pub async fn spawn_app_with(configure: impl FnOnce(&mut Settings)) -> TestApp {
        spawn_app_on(Store::Redis, configure).await
    }

    #[actix_web::test]
    async fn the_budget_counters_really_are_in_redis_and_not_in_sqlite() {
        let app = spawn_app().await;
        assert_eq!(app.state.budgets.store.kind(), "redis");
        assert_eq!(app.search("golang", "192.0.2.77").await.status(), 200);
        assert_eq!(app.counters("192.0.2.77"), (1, 1));
        let rows: i64 = app
            .conn()
            .query_row("SELECT COUNT(*) FROM rate_limit_counters", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 0);
    }
}
