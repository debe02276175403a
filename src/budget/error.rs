//! [`StoreError`]: why a budget operation has no answer, whichever store is behind
//! [`super::store::BudgetStore`]. Both backends return it, so it lives beside them,
//! not in the façade that imports them.

use super::rate_limiter;
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
    /// A batch of SQLite spends failed (not for a lock held too long).
    #[error("{0}")]
    Batch(rate_limiter::SpendFailed),
    /// The RateLimiter actor is gone (shutting down).
    #[error("rate limiter: {0}")]
    Mailbox(#[from] actix::MailboxError),
    /// Redis answered something the budget script never returns (a bug, or a key
    /// of ours overwritten by someone else): answer 500.
    #[error("budget store answer: {0}")]
    Redis(String),
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
