//! The one fault vocabulary of the stores: what a storage error means for the
//! request that met it ([`Fault`]), and how it is answered, whichever store met it
//! (the page store, the budget store) and whichever face or route (the API, MCP,
//! `/search`, the ledger pages). A fault is classed once where it happens (each
//! store maps its database's errors into a [`Fault`]: SQLite's codes, PostgreSQL's
//! SQLSTATEs, the Redis client's kinds); [`TABLE`] picks the answer; each family of
//! routes renders that answer in its own format (a problem document, a search
//! outcome, an HTML page) and nothing else decides. A leaf: it imports nothing of
//! the service.
//!
//! Storage faults never answer 500 (SPEC §10): only a bug of ours does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How a storage error is to be answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Another writer held the lock past the busy timeout, or no pooled connection
    /// was free in time: nothing is wrong with the storage; retry in a second.
    Busy,
    /// The storage cannot keep a write (or serve a read) now: the disk or a quota
    /// is full, the file is not writable or its WAL index cannot be touched, its
    /// I/O failed, it is damaged, its server is down or ran out of memory. Nothing
    /// was written; retry in a few seconds, and readiness fails meanwhile.
    Unavailable,
    /// Our own mistake (bad SQL, a constraint we should have checked, a type
    /// mismatch, API misuse, a panic): 500, and the cause goes to the log.
    Bug,
}

impl Fault {
    /// Whether it is [`Fault::Bug`].
    pub fn is_bug(self) -> bool {
        self == Fault::Bug
    }
}

/// Which store a fault came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// Pages (SQLite file or another page store).
    Pages,
    /// Budget counters (SQLite budget file or Redis).
    Budget,
}

/// What a request that met a fault is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageAnswer {
    /// 503 `/problems/database-busy`, `Retry-After: 1`: another writer held the
    /// page store's lock; nothing was written.
    DatabaseBusy,
    /// 503 `/problems/storage-unavailable`, `Retry-After: 5`: the page store can
    /// keep no write (or serve no read) now; nothing was written; `/readyz` fails.
    StorageUnavailable,
    /// 503 `/problems/budget-unavailable`, `Retry-After: 1`: the budget could not
    /// be read or written, so the request is refused, never admitted unbudgeted.
    BudgetUnavailable,
    /// 500 `/problems/internal`: a bug of ours; the cause goes to the log.
    Internal,
}

/// Every (store, fault) and its answer.
pub const TABLE: [(Store, Fault, StorageAnswer); 6] = [
    (Store::Pages, Fault::Busy, StorageAnswer::DatabaseBusy),
    (
        Store::Pages,
        Fault::Unavailable,
        StorageAnswer::StorageUnavailable,
    ),
    (Store::Pages, Fault::Bug, StorageAnswer::Internal),
    (Store::Budget, Fault::Busy, StorageAnswer::BudgetUnavailable),
    (
        Store::Budget,
        Fault::Unavailable,
        StorageAnswer::BudgetUnavailable,
    ),
    (Store::Budget, Fault::Bug, StorageAnswer::Internal),
];

/// `Retry-After` of [`StorageAnswer::StorageUnavailable`]: long enough for an operator's
/// fix or a freed disk to land, short enough for an agent to wait for.
pub const STORAGE_RETRY_AFTER: Duration = Duration::from_secs(5);

/// The answer to `fault` met in `store`, from [`TABLE`].
pub fn answer(store: Store, fault: Fault) -> StorageAnswer {
    TABLE
        .iter()
        .find(|(s, f, _)| *s == store && *f == fault)
        .map(|(_, _, a)| *a)
        .expect("TABLE has a row for every store and fault")
}

impl StorageAnswer {
    /// Seconds for `Retry-After`; `None` for a bug.
    pub fn retry_after(self) -> Option<i64> {
        match self {
            StorageAnswer::DatabaseBusy | StorageAnswer::BudgetUnavailable => Some(1),
            StorageAnswer::StorageUnavailable => Some(STORAGE_RETRY_AFTER.as_secs() as i64),
            StorageAnswer::Internal => None,
        }
    }
}

/// Whether one store answers, shared by the clones of its handle: the event log
/// says once when it stops answering (its first unavailable answer after an
/// answer) and once when it answers again, not once per request. The page store
/// and the budget store each keep one.
#[derive(Debug, Clone)]
pub struct StoreHealth {
    store: Store,
    /// `true` while the store answers (or has not failed yet).
    up: Arc<AtomicBool>,
}

impl StoreHealth {
    /// The health of `store`, answering until told otherwise.
    pub fn new(store: Store) -> Self {
        Self {
            store,
            up: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Notes that backend `kind` (`sqlite`, `redis`, …) could not answer, with
    /// `error` for the log: a warning when it answered until now.
    pub fn unavailable(&self, kind: &'static str, error: &dyn std::fmt::Display) {
        if self.up.swap(false, Ordering::SeqCst) {
            match self.store {
                Store::Pages => tracing::warn!(
                    store = kind,
                    error = %error,
                    "page store unavailable: writes and searches are answered 503 until it answers"
                ),
                Store::Budget => tracing::warn!(
                    store = kind,
                    error = %error,
                    "budget store unavailable: budgeted requests are refused with 503 until it answers"
                ),
            }
        }
    }

    /// Notes that backend `kind` answered: the recovery is logged when it did not
    /// answer until now (a read only while it answers, so the shared flag is not
    /// written on every call).
    pub fn answered(&self, kind: &'static str) {
        if !self.up.load(Ordering::Relaxed) && !self.up.swap(true, Ordering::SeqCst) {
            match self.store {
                Store::Pages => tracing::info!(store = kind, "page store answers again"),
                Store::Budget => tracing::info!(store = kind, "budget store answers again"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_store_and_fault_has_one_answer_and_only_bugs_are_internal() {
        for store in [Store::Pages, Store::Budget] {
            for fault in [Fault::Busy, Fault::Unavailable, Fault::Bug] {
                let rows = TABLE
                    .iter()
                    .filter(|(s, f, _)| *s == store && *f == fault)
                    .count();
                assert_eq!(rows, 1, "{store:?} {fault:?}");
                let a = answer(store, fault);
                assert_eq!(
                    a == StorageAnswer::Internal,
                    fault.is_bug(),
                    "{store:?} {fault:?}"
                );
                assert_eq!(a.retry_after().is_some(), !fault.is_bug());
            }
        }
    }
}
