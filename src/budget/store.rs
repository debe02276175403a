//! Where the budget counters live: one interface, chosen once at start-up. The
//! gates and the outcome matrix call [`BudgetStore`] and never learn which store is
//! behind it.
//!
//! - SQLite (the default): the RateLimiter actor's transaction on the service's own
//!   database file; processes on one host sharing the file share the budget.

use std::sync::Arc;

use actix::Addr;

use super::{BucketKeys, Budget, Decision};
use crate::actors::rate_limiter::{self, RateLimiter};
use crate::db::DbError;

/// Why a budget operation has no answer. Callers answer 503 or 500 by kind; the
/// cause is for logs only.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The SQLite counters failed (I/O, lock timeout, corruption).
    #[error("budget database: {0}")]
    Db(DbError),
    /// The store did not answer in time (Redis down or slow, SQLite locked by
    /// another writer past its busy timeout): answer 503, never admit.
    #[error("budget store unavailable: {0}")]
    Unavailable(String),
    /// The RateLimiter actor is gone (shutting down).
    #[error("rate limiter: {0}")]
    Mailbox(#[from] actix::MailboxError),
}

impl From<DbError> for StoreError {
    /// A lock held by another writer past the busy timeout is unavailability (503),
    /// anything else a failure (500).
    fn from(e: DbError) -> Self {
        if e.is_busy() {
            StoreError::Unavailable(e.to_string())
        } else {
            StoreError::Db(e)
        }
    }
}

/// A cheap, cloneable handle on the budget counters.
#[derive(Clone)]
pub struct BudgetStore {
    backend: Backend,
}

#[derive(Clone)]
enum Backend {
    Sqlite(Addr<RateLimiter>),
}

impl BudgetStore {
    /// The counters in SQLite, written by `rate_limiter`.
    pub fn sqlite(rate_limiter: Addr<RateLimiter>) -> Self {
        Self {
            backend: Backend::Sqlite(rate_limiter),
        }
    }

    /// Counts one request in every window of `budget` for `keys` at `now` (unix
    /// seconds) if all are under their limits; otherwise changes nothing.
    pub async fn spend(
        &self,
        budget: &Arc<Budget>,
        keys: BucketKeys,
        now: i64,
    ) -> Result<Decision, StoreError> {
        match &self.backend {
            Backend::Sqlite(addr) => Ok(addr
                .send(rate_limiter::Spend {
                    budget: budget.clone(),
                    keys,
                    now,
                })
                .await??),
        }
    }

    /// The counts of `keys` in the windows containing `now`, unchanged.
    pub async fn peek(
        &self,
        budget: &Arc<Budget>,
        keys: BucketKeys,
        now: i64,
    ) -> Result<Vec<i64>, StoreError> {
        match &self.backend {
            Backend::Sqlite(addr) => Ok(addr
                .send(rate_limiter::Peek {
                    budget: budget.clone(),
                    keys,
                    now,
                })
                .await??),
        }
    }

    /// Counts one event in every window of `keys` at `now` whatever the limits;
    /// returns the new counts.
    pub async fn record(
        &self,
        budget: &Arc<Budget>,
        keys: BucketKeys,
        now: i64,
    ) -> Result<Vec<i64>, StoreError> {
        match &self.backend {
            Backend::Sqlite(addr) => Ok(addr
                .send(rate_limiter::Record {
                    budget: budget.clone(),
                    keys,
                    now,
                })
                .await??),
        }
    }

    /// Does the store answer now? A read that changes nothing (for `/readyz`).
    pub async fn ping(&self) -> Result<(), StoreError> {
        let probe = Arc::new(Budget::pin_failures(1));
        self.peek(&probe, BucketKeys(vec!["0".repeat(64)]), 0)
            .await
            .map(drop)
    }

    /// Deletes counters whose window started at least `horizon` seconds before `now`
    /// (a store whose keys expire by themselves does nothing). Returns how many.
    pub async fn sweep(&self, now: i64, horizon: i64) -> Result<usize, StoreError> {
        match &self.backend {
            Backend::Sqlite(addr) => Ok(addr.send(rate_limiter::Sweep { now, horizon }).await??),
        }
    }
}
