//! What the included tests call `crate::helpers`: the shared helpers, with the two
//! spawn functions putting the budget in Redis.

#[path = "../common/mod.rs"]
mod common;
pub use common::*;

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
    assert!(app.db_path.exists());
    assert!(!app.budget_db_path.exists(), "no SQLite budget database");
}
