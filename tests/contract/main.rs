//! Contract suites: the behaviour each seam promises, written once and run against
//! every backend behind it (the model is tantivy's `directory/tests.rs`).
//!
//! - [`page_store`]: [`agent_pages::page_store::PageStore`] on SQLite and PostgreSQL;
//!   [`page_history`] and [`idempotency`] its history and idempotency keys.
//! - [`budget`]: [`agent_pages::budget::store::BudgetStore`] on SQLite, PostgreSQL
//!   and Redis.
//!
//! Each case is a plain `async fn` taking a fixture ([`backends`]): a freshly opened
//! store of one backend, through the same `open` the service uses, and the means to
//! open a second handle on the same data, as another replica would. The
//! [`contract_suite!`] line under each suite turns every case into one test per
//! backend, named `<suite>::<backend>::<case>` (`cargo test --test contract
//! budget::redis::`, say).
//!
//! Adding a case: write the `async fn` in the suite's file and add its name to the
//! list at the bottom. Adding a backend: a constructor on the fixture in
//! [`backends`] and its name in the suite's backend list; "implement the traits
//! (a page store's `PageBackend` with its `PageHistory` and `IdempotencyBackend`, or
//! a `BudgetBackend`), pass the suite".
//!
//! PostgreSQL and Redis are the real servers (`tests/support`): one PostgreSQL per
//! binary with a database per test, one `redis-server` per test. A missing
//! PostgreSQL skips the binary unless `AGENT_PAGES_REQUIRE_POSTGRES` or `CI` is set
//! (`.ci/run` sets it), where it fails; a missing `redis-server` fails.

// The shared test helpers: `T0`, the PostgreSQL settings tests use, the real servers.
#[path = "../common/mod.rs"]
mod helpers;

/// Turns each case of a suite into one test per backend: a module per backend,
/// holding `#[actix_web::test] async fn <case>()`, which opens the backend's fixture
/// (`backends::<Fixture>::<backend>()`) and runs the suite's `<case>(&fixture)`.
///
/// ```ignore
/// contract_suite!(PagesFixture; [sqlite, postgres]; [create_reads_back, …]);
/// ```
macro_rules! contract_suite {
    ($fixture:ident; [$($backend:ident),+ $(,)?]; $cases:tt) => {
        $( contract_suite!(@backend $fixture; $backend; $cases); )+
    };
    (@backend $fixture:ident; $backend:ident; [$($case:ident),+ $(,)?]) => {
        mod $backend {
            $(
                #[actix_web::test]
                async fn $case() {
                    let fixture = crate::backends::$fixture::$backend().await;
                    super::$case(&fixture).await;
                }
            )+
        }
    };
}

mod backends;
mod budget;
mod idempotency;
mod page_history;
mod page_store;
mod search_carry;
