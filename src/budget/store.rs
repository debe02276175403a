//! Where the budget counters live: one interface, chosen once at start-up
//! ([`super::open`]). The gates and the outcome matrix call [`BudgetStore`] and never
//! learn which store is behind it. A backend is one type implementing
//! [`BudgetBackend`], as a page store's is one implementing
//! `crate::page_store::PageBackend`; adding one is a module beside
//! [`super::redis`] and the line in [`super::open`] that builds it (a backend whose
//! server decides a request in one call implements [`super::server::ServerCounters`]
//! instead, and is one).
//!
//! - SQLite (the default): the RateLimiter actor's transaction on the budget
//!   database (a file of its own beside the page database); processes on one host
//!   sharing the file share the budget.
//! - Redis or Valkey (`AGENT_PAGES_REDIS_URL`): one server-side script per call
//!   ([`super::redis`]); replicas on any number of hosts share the budget.
//! - PostgreSQL, when the pages are there and no Redis is set: one server-side
//!   function per batch of calls ([`super::postgres`]), which also reads the corpus
//!   generation.
//!
//! Whichever it is, the store's health is tracked here: the event log says once
//! when it stops answering and once when it answers again, not once per request.
//!
//! **One clock per decision: the store's.** A backend decides in its own time and
//! answers in it: the counts, each window's seconds left, a refusal's `Retry-After`
//! and how long its window has left ([`Decided`]). It says which clock that is
//! ([`StoreClock`]): the `now` the caller passed (SQLite: the process's [`Clock`],
//! which is then the store's clock), or its own (Redis `TIME`; a server database's
//! `now()`), in which case the caller's `now` is ignored. A backend added later
//! (PostgreSQL) answers the same way.
//!
//! In front of the store sits a memo of full windows: a counter never goes down
//! inside its window (other processes only add, sweeps only delete ended windows),
//! so once a spend was refused for a key, every spend on that key is refused until
//! its window ends, and the memo answers it without the store. This is what keeps
//! a flood of 429s cheap. The memo keeps each refusal's end in the store's time:
//! for a caller-clock store the window's end in that clock's seconds; for an
//! own-clock store a deadline on this process's monotonic clock, the moment the
//! call was sent plus the time the store said the window had left, less a
//! thousandth of it (more than any quartz clock's rate error). The call was sent
//! before the store read its clock, so the memo ends no later than the store's
//! window: a replica whose wall clock is off by any amount refuses no longer than
//! the store would, and its `Retry-After` never exceeds the store's seconds left.
//!
//! [`Clock`]: crate::clock::Clock

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use hashlink::LruCache;

use super::error::BudgetStoreError;
use super::{BucketKeys, Budget, Decided, Decision, FixedWindow, StoreClock, WindowCount};
use crate::metrics::CallResult;

/// What every budget-backend call returns: a boxed future (so [`BudgetBackend`] is
/// object-safe) of the answer or a [`BudgetStoreError`].
pub type BudgetFuture<'a, T> = BoxFuture<'a, Result<T, BudgetStoreError>>;

/// What [`BudgetBackend::counts`] does with the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountMode {
    /// Read them, changing nothing.
    Peek,
    /// Count one event in every window, whatever the limits.
    Record,
}

/// One call on the counters: which budget, the client's bucket keys in it (one per
/// window, in the budget's order), and the caller's unix seconds (the windows' time
/// only for a backend keeping [`StoreClock::Caller`]).
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    pub budget: &'a Arc<Budget>,
    pub keys: &'a BucketKeys,
    pub now: i64,
}

/// One place the budget counters live. Implementations hold their own connections
/// and run their own statements, deciding in their own time (see the module docs);
/// [`BudgetStore`] is the handle everything else uses.
pub trait BudgetBackend: Send + Sync + 'static {
    /// Which store this is, for logs and docs: `sqlite`, `redis`, `postgres`, …
    fn kind(&self) -> &'static str;

    /// Whose clock the windows follow.
    fn clock(&self) -> StoreClock;

    /// Counts one request in every window of the budget for the keys of `ask` if
    /// all are under their limits, else nothing (both-or-neither), decided at its
    /// `now` when the backend keeps [`StoreClock::Caller`], else in its own time;
    /// with the corpus generation when the backend read it after the spend (`None`
    /// otherwise).
    fn spend<'a>(&'a self, ask: Ask<'a>) -> BudgetFuture<'a, (Decided, Option<i64>)>;

    /// The counts of the keys of `ask` in the windows containing its `now`
    /// ([`CountMode::Peek`]), or first one event counted in each whatever the
    /// limits ([`CountMode::Record`]): each window's count, what it has left, and
    /// its seconds left by the store's clock.
    fn counts<'a>(&'a self, ask: Ask<'a>, mode: CountMode) -> BudgetFuture<'a, Vec<WindowCount>>;

    /// Deletes counters whose window started at least `horizon` seconds before
    /// `now`; how many (a store whose keys expire by themselves answers 0).
    fn sweep(&self, now: i64, horizon: i64) -> BudgetFuture<'_, usize>;

    /// What readiness checks besides a write, for the store's own files (SQLite:
    /// the budget file is the one opened, writable, with room on its disk): `Err`
    /// with a few words for `/readyz` (the details go to the log). None by default.
    fn check_files(&self) -> Result<(), String> {
        Ok(())
    }
}

/// A cheap, cloneable handle on the budget counters.
#[derive(Clone)]
pub struct BudgetStore {
    backend: Arc<dyn BudgetBackend>,
    /// Full windows seen: bucket key → when the refusal ends, in the store's time.
    /// Bounded; an evicted entry only costs one store round trip.
    full: Arc<Mutex<LruCache<String, Until>>>,
    /// Whether it answers, for the log; shared by clones.
    health: crate::faults::StoreHealth,
    /// Where each call to the backend is counted and timed, once start-up has set it
    /// (`agent_pages_budget_store_calls_total`); shared by clones.
    calls: crate::metrics::StoreCallsSlot,
}

/// Keys remembered as full at most; beyond it the least recently refused go.
const FULL_MEMO_ENTRIES: usize = 65_536;

/// When a remembered refusal ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
    /// At this unix second of the caller's clock ([`StoreClock::Caller`]).
    Second(i64),
    /// At this moment of the process's monotonic clock ([`StoreClock::Own`]).
    Deadline(Instant),
}

impl Until {
    /// The end of a refusal decided at `now` (caller's seconds) by a store keeping
    /// `clock`, from a call sent at `sent`.
    fn of(clock: StoreClock, decided: &Decided, now: i64, sent: Instant) -> Option<Self> {
        let Decision::Refused { retry_after, .. } = decided.decision else {
            return None;
        };
        Some(match clock {
            StoreClock::Caller => Until::Second(now + retry_after),
            StoreClock::Own => {
                let left = decided
                    .window_left
                    .unwrap_or(Duration::from_secs(retry_after.saturating_sub(1) as u64));
                Until::Deadline(sent + left - left / 1000)
            }
        })
    }

    /// Whole seconds left (at least 1) at `now` (caller's seconds) and `instant`,
    /// or `None` once it ended.
    fn left(self, now: i64, instant: Instant) -> Option<i64> {
        match self {
            Until::Second(end) => (now < end).then_some(end - now),
            Until::Deadline(deadline) => {
                let left = deadline.checked_duration_since(instant)?;
                (!left.is_zero())
                    .then(|| left.as_secs() as i64 + i64::from(left.subsec_nanos() > 0))
            }
        }
    }
}

impl BudgetStore {
    /// The handle on `backend`.
    pub fn new(backend: impl BudgetBackend) -> Self {
        Self {
            backend: Arc::new(backend),
            full: Arc::new(Mutex::new(LruCache::new(FULL_MEMO_ENTRIES))),
            health: crate::faults::StoreHealth::new(crate::faults::Store::Budget),
            calls: Default::default(),
        }
    }

    /// Counts and times every backend call (its clones' too) in `calls` from now on.
    pub fn count_calls_in(&self, calls: crate::metrics::StoreCalls) {
        self.calls.set(calls);
    }

    /// Which store this is, for logs and docs: `sqlite`, `redis` or `postgres`.
    pub fn kind(&self) -> &'static str {
        self.backend.kind()
    }

    /// Whose clock the store's windows follow.
    pub fn clock(&self) -> StoreClock {
        self.backend.clock()
    }

    /// Notes the result of a call: the first unavailability
    /// ([`BudgetStoreError::is_unavailable`]) after an answer logs a warning, the first
    /// answer after one logs the recovery.
    fn observe<T>(&self, result: Result<T, BudgetStoreError>) -> Result<T, BudgetStoreError> {
        match &result {
            Err(e) if e.is_unavailable() => self.health.unavailable(self.kind(), e),
            Ok(_) => self.health.answered(self.kind()),
            Err(_) => {}
        }
        result
    }

    /// The refusal the memo already knows for `keys` at `now`, if any.
    fn known_full(&self, budget: &Budget, keys: &BucketKeys, now: i64) -> Option<Decision> {
        let mut full = self.full.lock().ok()?;
        let instant = Instant::now();
        for (i, key) in keys.0.iter().enumerate().take(budget.windows.len()) {
            let Some(until) = full.get(key).copied() else {
                continue;
            };
            match until.left(now, instant) {
                Some(retry_after) => {
                    return Some(Decision::Refused {
                        window: i,
                        retry_after,
                    })
                }
                None => {
                    full.remove(key);
                }
            }
        }
        None
    }

    /// Remembers the window a refusal named as full until it ends, in the store's
    /// time (see the module docs).
    fn remember(&self, keys: &BucketKeys, now: i64, sent: Instant, decided: &Decided) {
        let Decision::Refused { window, .. } = decided.decision else {
            return;
        };
        if let (Some(until), Ok(mut full)) = (
            Until::of(self.clock(), decided, now, sent),
            self.full.lock(),
        ) {
            full.insert(keys.0[window].clone(), until);
        }
    }

    /// Counts one request in every window of `budget` for `keys` if all are under
    /// their limits; otherwise changes nothing. `now` is the caller's unix seconds,
    /// the windows' time when the store keeps [`StoreClock::Caller`]; a store with
    /// its own clock decides, and answers `Retry-After` and seconds left, in that.
    ///
    /// Errors: an unavailable [`BudgetStoreError`] when the store did not answer in time.
    pub async fn spend(
        &self,
        budget: &Arc<Budget>,
        keys: BucketKeys,
        now: i64,
    ) -> Result<Decision, BudgetStoreError> {
        let (decision, _) = self.spend_with_generation(budget, keys, now).await?;
        Ok(decision)
    }

    /// [`BudgetStore::spend`], plus the corpus generation when the store read it
    /// after the spend: PostgreSQL, whose budget function runs in the pages' own
    /// database (no second round trip), and SQLite, whose RateLimiter reads the
    /// page file once per committed batch (no read on the HTTP worker per search).
    /// `None` from Redis, from a SQLite probe that could not read, and for
    /// refusals known without a call: the caller then reads it itself.
    pub async fn spend_with_generation(
        &self,
        budget: &Arc<Budget>,
        keys: BucketKeys,
        now: i64,
    ) -> Result<(Decision, Option<i64>), BudgetStoreError> {
        if let Some(refused) = self.known_full(budget, &keys, now) {
            return Ok((refused, None));
        }
        // Before the store reads its clock: a memo counted from here ends no later
        // than the store's window.
        let sent = Instant::now();
        let (decided, generation) = self.spend_inner(budget, &keys, now).await?;
        self.remember(&keys, now, sent, &decided);
        Ok((decided.decision, generation))
    }

    async fn spend_inner(
        &self,
        budget: &Arc<Budget>,
        keys: &BucketKeys,
        now: i64,
    ) -> Result<(Decided, Option<i64>), BudgetStoreError> {
        let started = Instant::now();
        let result = self.backend.spend(Ask { budget, keys, now }).await;
        let outcome = match &result {
            Ok((decided, _)) if matches!(decided.decision, Decision::Refused { .. }) => {
                CallResult::Refused
            }
            Ok(_) => CallResult::Ok,
            Err(_) => CallResult::Failed,
        };
        self.calls.record(outcome, Some(started.elapsed()));
        self.observe(result)
    }

    /// Reads the counts of `keys` in the windows containing `now` ([`CountMode::Peek`]),
    /// or first counts one event in each whatever the limits ([`CountMode::Record`],
    /// for failures counted after they happened). Returns each window's count with
    /// what it has left, its seconds left by the store's clock (as for
    /// [`BudgetStore::spend`]).
    pub async fn counts(
        &self,
        budget: &Arc<Budget>,
        keys: BucketKeys,
        now: i64,
        mode: CountMode,
    ) -> Result<Vec<WindowCount>, BudgetStoreError> {
        let started = Instant::now();
        let ask = Ask {
            budget,
            keys: &keys,
            now,
        };
        let result = self.backend.counts(ask, mode).await;
        let outcome = if result.is_ok() {
            CallResult::Ok
        } else {
            CallResult::Failed
        };
        self.calls.record(outcome, Some(started.elapsed()));
        self.observe(result)
    }

    /// [`BudgetBackend::check_files`].
    pub fn check_files(&self) -> Result<(), String> {
        self.backend.check_files()
    }

    /// Can the store count requests now? What every budgeted request needs: one
    /// write through the same path, counting a probe in a one-second window of a
    /// key of ours (`ready-second:probe`, hashed; in Redis it expires within a
    /// second). A replica that can read but not write, a refused password, a store
    /// that does not answer: all are errors here, so `/readyz` fails with them.
    pub async fn check_ready(&self, now: i64) -> Result<(), BudgetStoreError> {
        let probe = Arc::new(Budget {
            prefix: "ready",
            windows: vec![FixedWindow::new("second", 1, 1)],
        });
        let keys = probe.keys_of("probe");
        self.counts(&probe, keys, now, CountMode::Record)
            .await
            .map(drop)
    }

    /// Deletes counters whose window started at least `horizon` seconds before `now`
    /// (a store whose keys expire by themselves does nothing). Returns how many.
    pub async fn sweep(&self, now: i64, horizon: i64) -> Result<usize, BudgetStoreError> {
        self.backend.sweep(now, horizon).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(retry_after: i64, window_left: Option<Duration>) -> Decided {
        Decided {
            decision: Decision::Refused {
                window: 0,
                retry_after,
            },
            window_left,
        }
    }

    #[test]
    fn a_caller_clock_refusal_ends_with_its_window_in_that_clock() {
        let until = Until::of(
            StoreClock::Caller,
            &refused(55, None),
            1_000,
            Instant::now(),
        );
        let until = until.unwrap();
        let instant = Instant::now();
        assert_eq!(until.left(1_000, instant), Some(55));
        assert_eq!(until.left(1_054, instant), Some(1));
        assert_eq!(until.left(1_055, instant), None);
    }

    #[test]
    fn an_own_clock_refusal_ends_before_the_stores_window_whatever_the_callers_clock() {
        let sent = Instant::now();
        let left = Duration::from_millis(7_250);
        let until = Until::of(StoreClock::Own, &refused(8, Some(left)), 0, sent).unwrap();
        // The caller's seconds play no part: a clock 8 s fast or 3 days slow agrees.
        for now in [0, 8, -259_200] {
            assert_eq!(until.left(now, sent), Some(8));
        }
        // Never past the store's window end (sent + 7.25 s), never above the store's
        // whole seconds left at any moment.
        let Until::Deadline(deadline) = until else {
            panic!("{until:?}")
        };
        assert!(deadline <= sent + left && deadline >= sent + left - left / 500);
        assert_eq!(until.left(0, sent + Duration::from_millis(7_000)), Some(1));
        assert_eq!(until.left(0, sent + left), None);
    }

    #[test]
    fn an_admission_is_not_remembered() {
        let admitted = Decided {
            decision: Decision::Admitted(vec![]),
            window_left: None,
        };
        for clock in [StoreClock::Caller, StoreClock::Own] {
            assert_eq!(Until::of(clock, &admitted, 0, Instant::now()), None);
        }
    }
}
