//! [`StoreError`]: why a budget operation has no answer, whichever store is behind
//! [`super::store::BudgetStore`]. Both backends return it, so it lives beside them,
//! not in the façade that imports them.

use super::rate_limiter;
use crate::faults::Fault;
use crate::sqlite::DbError;

/// Why a budget operation has no answer. Callers answer by [`StoreError::fault`]
/// (`crate::faults` says how); the cause is for logs only.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The SQLite counters failed for a reason of ours (bad SQL, misuse).
    #[error("budget database: {0}")]
    Db(DbError),
    /// The store cannot answer now (Redis down or slow; SQLite locked by another
    /// writer past its busy timeout, its disk full, its file not writable, its I/O
    /// failing): answer 503, never admit.
    #[error("budget store unavailable: {0}")]
    Unavailable(String),
    /// A batch of SQLite spends failed for a reason of ours.
    #[error("{0}")]
    Batch(rate_limiter::SpendFailed),
    /// The RateLimiter actor is gone (shutting down).
    #[error("rate limiter: {0}")]
    Mailbox(#[from] actix::MailboxError),
    /// Redis answered something the budget script never returns (a bug, or a key
    /// of ours overwritten by someone else): answer 500.
    #[error("budget store answer: {0}")]
    Redis(String),
    /// PostgreSQL refused the budget call itself (a bug, a schema not migrated):
    /// answer 500.
    #[error("budget store: {0}")]
    Postgres(String),
}

impl StoreError {
    /// How it is answered: a bug of ours ([`StoreError::Db`], [`StoreError::Batch`],
    /// [`StoreError::Redis`], [`StoreError::Postgres`]) or a store that cannot answer now (the rest; the
    /// RateLimiter gone means the process is shutting down).
    pub fn fault(&self) -> Fault {
        match self {
            StoreError::Unavailable(_) | StoreError::Mailbox(_) => Fault::Unavailable,
            StoreError::Db(_)
            | StoreError::Batch(_)
            | StoreError::Redis(_)
            | StoreError::Postgres(_) => Fault::Bug,
        }
    }
}

impl From<DbError> for StoreError {
    /// Storage that cannot answer now (a lock held past the busy timeout, a full
    /// disk, I/O: `crate::sqlite::fault`) is unavailability (503), a bug a failure.
    fn from(e: DbError) -> Self {
        if e.fault().is_bug() {
            StoreError::Db(e)
        } else {
            StoreError::Unavailable(e.to_string())
        }
    }
}
