//! The pages (and budget counters) in a real PostgreSQL, end to end: what only a
//! running app shows. Each app's pages are in a database of its own on one
//! PostgreSQL server this binary starts (`tests/support/pg_server.rs`), and the
//! tests' own reads and writes go there instead of a SQLite file.
//!
//! What each store promises on its own (publish, read, update, archive, claim, the
//! ledger, slugs, the snapshot, the change log and generation; the budget windows,
//! refusals, both-or-neither, exactly-once under concurrency) is
//! `tests/contract`'s, run on every backend. Here, of the `tests/api/` and
//! `tests/search/` suites, only those run again whose assertions cross the store and
//! the app: a write reaching the next search and the public views (lifecycle,
//! search effects), page history and `If-Match` (two writers racing on one tag
//! through HTTP), the cache following the corpus generation the store reports,
//! and the outcome matrix (the budget function answering the generation with the
//! spend). Beside them, what PostgreSQL brings of its own: several replicas on one
//! database, following every write exactly once, faults, import and moving a SQLite
//! database over.

// The API helpers include the shared ones (`tests/common`) and re-export them.
// This binary runs a few of the API suites: part of their helpers stays unused.
#[allow(dead_code)]
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

// Of `tests/api/`: a write reaching search and the public views, and the
// conditional reads of pages and versions (the stores' versions and times).
#[path = "../api/conditional_reads.rs"]
mod api_conditional_reads;
// Of `tests/api/`: a write reaching search and the public views; idempotent
// publishes with their rows in PostgreSQL.
#[path = "../api/idempotency.rs"]
mod api_idempotency;
#[path = "../api/lifecycle.rs"]
mod api_lifecycle;
#[path = "../api/search_effects.rs"]
mod api_search_effects;
// Of `tests/api/`: page history and If-Match, two writers racing on one tag.
#[path = "../api/history.rs"]
mod api_history;
// Of `tests/search/`: the cache over the store's generation, the outcome matrix.
#[path = "../search/cache.rs"]
mod search_cache;
#[path = "../search/matrix.rs"]
mod search_matrix;

mod commands;
mod faults;
mod follow;
mod forwarder;
mod idempotency;
mod mcp_pages_down;
mod pool;
mod replicas;
mod restart;
mod restore;
mod storage_row;
mod store;
mod with_redis;
