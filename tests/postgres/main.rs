//! The pages (and budget counters) in a real PostgreSQL: the API suite and the
//! search outcome-matrix, budget, cache and admission suites of `tests/api/` and
//! `tests/search/` run again with each app's pages in a database of its own on one
//! PostgreSQL server this binary starts (`tests/support/pg_server.rs`), and the
//! tests' own reads and writes go there instead of a SQLite file. Same assertions,
//! other store. The SQLite-file suites (a deleted data folder, read-only pooled
//! connections, another process holding the file's lock) stay SQLite's; what
//! PostgreSQL brings of its own is tested beside them: several replicas on one
//! database, following every write exactly once, faults, import and moving a SQLite
//! database over.

// The API helpers include the shared ones (`tests/common`) and re-export them.
#[path = "../api/helpers.rs"]
mod api_helpers;

/// What the included tests call `crate::helpers`: the shared and API helpers, with
/// the spawn functions putting the pages and budget counters in PostgreSQL.
mod helpers {
    pub use crate::api_helpers::*;

    use agent_pages::configuration::Settings;

    /// The app with default settings, pages and counters in a database of its own.
    pub async fn spawn_app() -> TestApp {
        spawn_app_in(Pages::Postgres, Store::Postgres, |_| {}).await
    }

    /// [`spawn_app`] with `configure` applied to the settings first.
    pub async fn spawn_app_with(configure: impl FnOnce(&mut Settings)) -> TestApp {
        spawn_app_in(Pages::Postgres, Store::Postgres, configure).await
    }
}

// `tests/api/`, but for the SQLite-file faults (storage, read_only, other_writers).
#[path = "../api/concurrency.rs"]
mod api_concurrency;
#[path = "../api/create.rs"]
mod api_create;
#[path = "../api/deadlines.rs"]
mod api_deadlines;
#[path = "../api/errors.rs"]
mod api_errors;
#[path = "../api/forwarded.rs"]
mod api_forwarded;
#[path = "../api/head.rs"]
mod api_head;
#[path = "../api/lifecycle.rs"]
mod api_lifecycle;
#[path = "../api/openapi.rs"]
mod api_openapi;
#[path = "../api/pins.rs"]
mod api_pins;
#[path = "../api/publish_budget.rs"]
mod api_publish_budget;
#[path = "../api/read.rs"]
mod api_read;
#[path = "../api/search_effects.rs"]
mod api_search_effects;
#[path = "../api/titles.rs"]
mod api_titles;
#[path = "../api/update.rs"]
mod api_update;
// The outcome matrix, budget, cache and admission suites of `tests/search/`.
#[path = "../search/admission.rs"]
mod search_admission;
#[path = "../search/budget.rs"]
mod search_budget;
#[path = "../search/cache.rs"]
mod search_cache;
#[path = "../search/carry.rs"]
mod search_carry;
#[path = "../search/matrix.rs"]
mod search_matrix;

mod commands;
mod faults;
mod follow;
mod forwarder;
mod replicas;
mod store;
