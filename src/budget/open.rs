//! The budget store configuration chose, opened: the one way `serve` gets it and
//! `migrate` migrates it. [`BudgetsAt`] is the choice (configuration makes it from
//! `AGENT_PAGES_REDIS_URL`, `AGENT_PAGES_DATABASE_URL` and
//! `AGENT_PAGES_BUDGET_DATABASE`); [`open`] turns it into a [`BudgetStore`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use actix::Actor as _;
use anyhow::Context as _;

use super::checkpoint::{Checkpointer, CHECKPOINT_EVERY};
use super::postgres::PgCounters;
use super::rate_limiter::{RateLimiter, SqliteCounters};
use super::redis::{RedisCounters, RedisSettings};
use super::store::BudgetStore;
use crate::page_store::postgres::PostgresPages;
use crate::page_store::sqlite::SqlitePages;
use crate::page_store::PageStore;
use crate::sqlite::storage::Storage;

/// Where the budget counters are.
#[derive(Debug, Clone)]
pub enum BudgetsAt {
    /// A SQLite file of their own (`AGENT_PAGES_BUDGET_DATABASE`, by default
    /// [`path_beside`] the page file): a page write never holds its lock.
    Sqlite(PathBuf),
    /// The PostgreSQL database of the pages (which must be there): what a
    /// PostgreSQL deployment without Redis gets.
    Postgres,
    /// Redis or Valkey (`AGENT_PAGES_REDIS_URL`), shared by replicas on any host.
    Redis(RedisSettings),
}

/// Where the budget database lives unless configured: beside the page database,
/// named after it with `.budget` before its extension
/// (`data/agent-pages.sqlite3` → `data/agent-pages.budget.sqlite3`).
pub fn path_beside(pages: &Path) -> PathBuf {
    let stem = pages.file_stem().map(|s| s.to_string_lossy().into_owned());
    let name = match (stem, pages.extension()) {
        (Some(stem), Some(ext)) => format!("{stem}.budget.{}", ext.to_string_lossy()),
        (Some(stem), None) => format!("{stem}.budget"),
        (None, _) => "budget.sqlite3".to_owned(),
    };
    pages.with_file_name(name)
}

/// The budget store `at` names, beside the opened `pages`: PostgreSQL counters
/// live in the pages' database (on its control pool, noting its epoch), and
/// SQLite counters read the corpus generation of SQLite pages once per committed
/// batch. Call inside a running actix System: the SQLite counters' actor gets an arbiter
/// (thread) of its own, since SQLite calls block. Redis is connected on first use.
///
/// Errors: the budget file cannot be opened or migrated; PostgreSQL counters
/// without PostgreSQL pages; a Redis URL no client can be made of.
pub fn open(at: &BudgetsAt, pages: &PageStore) -> anyhow::Result<BudgetStore> {
    match at {
        BudgetsAt::Sqlite(path) => {
            let conn = crate::sqlite::open_budget(path)
                .with_context(|| format!("opening {}", path.display()))?;
            let storage = Arc::new(
                Storage::capture(path).with_context(|| format!("reading {}", path.display()))?,
            );
            // Its WAL is checkpointed on a thread of its own, never inside a
            // commit that searches wait on.
            let checkpoints = Checkpointer::start(path, storage.clone(), CHECKPOINT_EVERY)?;
            let mut rate_limiter = RateLimiter::new(conn, storage.clone())
                .and_then(|limiter| limiter.with_checkpointer(checkpoints))
                .context("setting the budget connection")?;
            // Pages in SQLite too: each committed batch of spends reads the corpus
            // generation once for all its searches.
            if let Some(probe) = pages
                .backend::<SqlitePages>()
                .and_then(SqlitePages::generation_probe)
            {
                rate_limiter = rate_limiter.with_generation_probe(Box::new(probe));
            }
            let limiter =
                RateLimiter::start_in_arbiter(&actix::Arbiter::new().handle(), |_| rate_limiter);
            Ok(BudgetStore::new(SqliteCounters::new(limiter, storage)))
        }
        BudgetsAt::Postgres => {
            let pages = pages.backend::<PostgresPages>().context(
                "budget counters in PostgreSQL need the pages there (AGENT_PAGES_DATABASE_URL)",
            )?;
            let control = pages.control().clone();
            let server_clock = control.settings().server_clock;
            tracing::info!("budget counters in PostgreSQL, beside the pages");
            let counters = PgCounters::new(control, server_clock, pages.epoch_cell());
            Ok(BudgetStore::new(counters))
        }
        BudgetsAt::Redis(redis) => {
            let counters = RedisCounters::connect_lazily(redis)
                .context("AGENT_PAGES_REDIS_URL: cannot make a Redis client")?;
            tracing::info!(
                redis = %redis.describe(),
                timeout_ms = redis.call_timeout.as_millis() as u64,
                "budget counters in Redis (connected on first use)"
            );
            Ok(BudgetStore::new(counters))
        }
    }
}

/// Applies the migrations of the budget store `at` names: the SQLite budget file's
/// (PostgreSQL's come with the pages', Redis has none).
///
/// Errors: the file cannot be opened or migrated.
pub fn migrate(at: &BudgetsAt) -> anyhow::Result<()> {
    if let BudgetsAt::Sqlite(path) = at {
        crate::sqlite::open_budget(path)
            .with_context(|| format!("opening and migrating {}", path.display()))?;
    }
    Ok(())
}
