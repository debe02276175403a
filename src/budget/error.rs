//! [`BudgetStoreError`]: why a budget operation has no answer, whichever backend is
//! behind [`super::store::BudgetStore`]. Every backend returns it, classed where
//! the failure happened into the one fault vocabulary ([`Fault`]).

use crate::faults::Fault;
use crate::sqlite::DbError;

/// Why a budget operation has no answer. Callers answer by [`BudgetStoreError::fault`]
/// (`crate::faults` says how); the cause is for logs only.
#[derive(Debug, thiserror::Error)]
pub enum BudgetStoreError {
    /// The store failed, classed by `fault`: [`Fault::Unavailable`] when it cannot
    /// answer now (Redis down or slow; SQLite locked by another writer past its busy
    /// timeout, its disk full, its file not writable, its I/O failing; PostgreSQL
    /// down or busy): answer 503, never admit. [`Fault::Bug`] for a reason of ours
    /// (bad SQL, misuse, an answer the backend's script never gives, a schema not
    /// migrated): answer 500.
    #[error("budget store{}: {cause}", if *.fault == Fault::Unavailable { " unavailable" } else { "" })]
    Failed { fault: Fault, cause: String },
    /// The store was shut down (the process is stopping): answered as unavailable,
    /// and not an outage to log.
    #[error("budget store closed: {0}")]
    Closed(String),
}

impl BudgetStoreError {
    /// The store cannot answer now.
    pub fn unavailable(cause: impl Into<String>) -> Self {
        BudgetStoreError::Failed {
            fault: Fault::Unavailable,
            cause: cause.into(),
        }
    }

    /// The store failed for a reason of ours.
    pub fn bug(cause: impl Into<String>) -> Self {
        BudgetStoreError::Failed {
            fault: Fault::Bug,
            cause: cause.into(),
        }
    }

    /// How it is answered: its class ([`BudgetStoreError::Closed`] is unavailable).
    pub fn fault(&self) -> Fault {
        match self {
            BudgetStoreError::Failed { fault, .. } => *fault,
            BudgetStoreError::Closed(_) => Fault::Unavailable,
        }
    }

    /// The store cannot answer now (and is not shut down): what the outage log and
    /// readiness report.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            BudgetStoreError::Failed {
                fault: Fault::Unavailable,
                ..
            }
        )
    }
}

impl From<DbError> for BudgetStoreError {
    /// Storage that cannot answer now (a lock held past the busy timeout, a full
    /// disk, I/O: `crate::sqlite::fault`) is unavailability (503), a bug a failure.
    fn from(e: DbError) -> Self {
        if e.fault().is_bug() {
            BudgetStoreError::bug(e.to_string())
        } else {
            BudgetStoreError::unavailable(e.to_string())
        }
    }
}

impl From<actix::MailboxError> for BudgetStoreError {
    /// The RateLimiter actor is gone: the process is shutting down.
    fn from(e: actix::MailboxError) -> Self {
        BudgetStoreError::Closed(format!("rate limiter: {e}"))
    }
}
