//! Where the budget counters live: one interface, chosen once at start-up. The
//! gates and the outcome matrix call [`BudgetStore`] and never learn which store is
//! behind it.
//!
//! - SQLite (the default): the RateLimiter actor's transaction on the service's own
//!   database file; processes on one host sharing the file share the budget.
//! - Redis or Valkey (`AGENT_PAGES_REDIS_URL`): one server-side script per call
//!   ([`super::redis`]); replicas on any number of hosts share the budget.
//! - PostgreSQL, when the pages are there and no Redis is set: one server-side
//!   function per batch of calls ([`super::postgres`]), which also reads the corpus
//!   generation.
//!
//! Whichever it is, the store's health is tracked here: the event log says once
//! when it stops answering and once when it answers again, not once per request.
//!
//! In front of the store sits a memo of full windows: a counter never goes down
//! inside its window (other processes only add, sweeps only delete ended windows),
//! so once a spend was refused for a key, every spend on that key is refused until
//! its window ends, and the memo answers it without the store. This is what keeps
//! a flood of 429s cheap. The memo counts windows with this process's clock; with
//! Redis, whose windows follow the Redis server's clock, a replica whose clock is
//! `s` seconds off may answer a full window's 429 from the memo for up to `s`
//! seconds around the window's end.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use actix::Addr;
use hashlink::LruCache;

use super::error::StoreError;
use super::postgres::PgCounters;
pub use super::rate_limiter::CountMode;
use super::rate_limiter::{self, RateLimiter};
use super::redis::RedisCounters;
use super::{BucketKeys, Budget, Decision};

/// A cheap, cloneable handle on the budget counters.
#[derive(Clone)]
pub struct BudgetStore {
    backend: Backend,
    /// Full windows seen: bucket key → start (unix seconds) of the window in which
    /// it was refused. Bounded; an evicted entry only costs one store round trip.
    full: Arc<Mutex<LruCache<String, i64>>>,
    /// `true` while the store answers (or has not failed yet); shared by clones.
    up: Arc<AtomicBool>,
}

/// Keys remembered as full at most; beyond it the least recently refused go.
const FULL_MEMO_ENTRIES: usize = 65_536;

#[derive(Clone)]
enum Backend {
    Sqlite(Addr<RateLimiter>),
    Redis(RedisCounters),
    Postgres(PgCounters, crate::pg::Pg),
}

impl BudgetStore {
    /// The counters in SQLite, written by `rate_limiter`.
    pub fn sqlite(rate_limiter: Addr<RateLimiter>) -> Self {
        Self::with(Backend::Sqlite(rate_limiter))
    }

    /// The counters in Redis (or Valkey), shared by every replica using it.
    pub fn redis(counters: RedisCounters) -> Self {
        Self::with(Backend::Redis(counters))
    }

    /// The counters in PostgreSQL (the pages' database), shared by every replica;
    /// `pg` is the pool the sweep runs on.
    pub fn postgres(counters: PgCounters, pg: crate::pg::Pg) -> Self {
        Self::with(Backend::Postgres(counters, pg))
    }

    fn with(backend: Backend) -> Self {
        Self {
            backend,
            full: Arc::new(Mutex::new(LruCache::new(FULL_MEMO_ENTRIES))),
            up: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Which store this is, for logs and docs: `sqlite`, `redis` or `postgres`.
    pub fn kind(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite(_) => "sqlite",
            Backend::Redis(_) => "redis",
            Backend::Postgres(..) => "postgres",
        }
    }

    /// Notes the result of a call: the first [`StoreError::Unavailable`] after an
    /// answer logs a warning, the first answer after one logs the recovery.
    fn observe<T>(&self, result: Result<T, StoreError>) -> Result<T, StoreError> {
        match &result {
            Err(StoreError::Unavailable(e)) => {
                if self.up.swap(false, Ordering::SeqCst) {
                    tracing::warn!(
                        store = self.kind(),
                        error = %e,
                        "budget store unavailable: budgeted requests are refused with 503 until it answers"
                    );
                }
            }
            Ok(_) => {
                if !self.up.swap(true, Ordering::SeqCst) {
                    tracing::info!(store = self.kind(), "budget store answers again");
                }
            }
            Err(_) => {}
        }
        result
    }

    /// The refusal the memo already knows for `keys` at `now`, if any.
    fn known_full(&self, budget: &Budget, keys: &BucketKeys, now: i64) -> Option<Decision> {
        let mut full = self.full.lock().ok()?;
        budget
            .windows
            .iter()
            .zip(&keys.0)
            .enumerate()
            .find(|(_, (window, key))| full.get(*key) == Some(&window.start(now)))
            .map(|(i, (window, _))| Decision::Refused {
                window: i,
                retry_after: window.seconds_left(now),
            })
    }

    /// Remembers the window a refusal named as full until it ends.
    fn remember(&self, budget: &Budget, keys: &BucketKeys, now: i64, decision: &Decision) {
        if let (Decision::Refused { window, .. }, Ok(mut full)) = (decision, self.full.lock()) {
            full.insert(keys.0[*window].clone(), budget.windows[*window].start(now));
        }
    }

    /// Counts one request in every window of `budget` for `keys` at `now` (unix
    /// seconds; Redis aligns windows with its own clock instead) if all are under
    /// their limits; otherwise changes nothing.
    ///
    /// Errors: [`StoreError::Unavailable`] when the store did not answer in time.
    pub async fn spend(
        &self,
        budget: &Arc<Budget>,
        keys: BucketKeys,
        now: i64,
    ) -> Result<Decision, StoreError> {
        let (decision, _) = self.spend_with_generation(budget, keys, now).await?;
        Ok(decision)
    }

    /// [`BudgetStore::spend`], plus the corpus generation when the store read it in
    /// the same transaction (SQLite, PostgreSQL: the pages' own database), so the
    /// search needs no second read for it.
    pub async fn spend_with_generation(
        &self,
        budget: &Arc<Budget>,
        keys: BucketKeys,
        now: i64,
    ) -> Result<(Decision, Option<i64>), StoreError> {
        if let Some(refused) = self.known_full(budget, &keys, now) {
            return Ok((refused, None));
        }
        let spent = self.spend_inner(budget, &keys, now).await?;
        self.remember(budget, &keys, now, &spent.0);
        Ok(spent)
    }

    async fn spend_inner(
        &self,
        budget: &Arc<Budget>,
        keys: &BucketKeys,
        now: i64,
    ) -> Result<(Decision, Option<i64>), StoreError> {
        let result = match &self.backend {
            Backend::Sqlite(addr) => {
                let answer = addr
                    .send(rate_limiter::Spend {
                        budget: budget.clone(),
                        keys: keys.clone(),
                        now,
                    })
                    .await?;
                match answer.await {
                    Ok(Ok((decision, generation))) => Ok((decision, Some(generation))),
                    Ok(Err(failed)) if failed.busy => Err(StoreError::Unavailable(failed.cause)),
                    Ok(Err(failed)) => Err(StoreError::Batch(failed)),
                    Err(_) => Err(StoreError::Mailbox(actix::MailboxError::Closed)),
                }
            }
            // Redis knows nothing of the corpus: the search reads the generation.
            Backend::Redis(redis) => redis.spend(budget, keys, now).await.map(|d| (d, None)),
            Backend::Postgres(counters, _) => counters
                .spend(budget, keys, now)
                .await
                .map(|(d, generation)| (d, Some(generation))),
        };
        self.observe(result)
    }

    /// Reads the counts of `keys` in the windows containing `now` ([`CountMode::Peek`]),
    /// or first counts one event in each whatever the limits ([`CountMode::Record`],
    /// for failures counted after they happened); returns the counts.
    pub async fn counts(
        &self,
        budget: &Arc<Budget>,
        keys: BucketKeys,
        now: i64,
        mode: CountMode,
    ) -> Result<Vec<i64>, StoreError> {
        let result = match &self.backend {
            Backend::Sqlite(addr) => addr
                .send(rate_limiter::Counts {
                    budget: budget.clone(),
                    keys,
                    now,
                    mode,
                })
                .await
                .map_err(StoreError::from)
                .and_then(|r| r.map_err(StoreError::from)),
            Backend::Redis(redis) => match mode {
                CountMode::Peek => redis.peek(budget, &keys, now).await,
                CountMode::Record => redis.record(budget, &keys, now).await,
            },
            Backend::Postgres(counters, _) => match mode {
                CountMode::Peek => counters.peek(budget, &keys, now).await,
                CountMode::Record => counters.record(budget, &keys, now).await,
            },
        };
        self.observe(result)
    }

    /// Does the store answer now? A read that changes nothing (for `/readyz`).
    pub async fn ping(&self) -> Result<(), StoreError> {
        let probe = Arc::new(Budget::pin_failures(1));
        self.counts(&probe, BucketKeys(vec!["0".repeat(64)]), 0, CountMode::Peek)
            .await
            .map(drop)
    }

    /// Deletes counters whose window started at least `horizon` seconds before `now`
    /// (a store whose keys expire by themselves does nothing). Returns how many.
    pub async fn sweep(&self, now: i64, horizon: i64) -> Result<usize, StoreError> {
        match &self.backend {
            Backend::Sqlite(addr) => Ok(addr.send(rate_limiter::Sweep { now, horizon }).await??),
            // Every Redis key expires at the end of its window.
            Backend::Redis(_) => Ok(0),
            Backend::Postgres(_, pg) => PgCounters::sweep(pg, now, horizon).await,
        }
    }
}
