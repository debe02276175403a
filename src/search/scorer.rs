//! The Scorer pool: `SEARCH_CONCURRENCY` actors on a `SyncArbiter`, one per scoring
//! slot, behind a semaphore of as many permits.
//!
//! actix mailboxes are not a strict bound (a `SyncArbiter` mailbox is unbounded), so
//! the bound is the semaphore: a request must hold an owned permit *before* it may
//! send [`Score`], [`ScorerPool::try_acquire`] never waits, and the permit travels
//! inside the message and is dropped when the handler returns, however scoring ended
//! (result, panic, or a client that went away while it ran). Hence never more than
//! `SEARCH_CONCURRENCY` scorings at once, and no slot is ever leaked.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use actix::{Actor, Addr, Handler, Message, SyncArbiter, SyncContext};
use prometheus::IntCounter;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::search::corpus::Snapshot;
use crate::search::rank::{self, SearchResult};

/// Test-only hook run with the match copy at the start of each scoring.
#[cfg(feature = "fault-injection")]
pub type ScoringHook = Arc<dyn Fn(&str) + Send + Sync>;

/// A held scoring slot.
#[derive(Debug)]
pub struct ScoringSlot {
    _permit: OwnedSemaphorePermit,
}

/// Every slot is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

/// Why a scoring produced no result.
#[derive(Debug, thiserror::Error)]
pub enum ScoreError {
    #[error("scoring panicked")]
    Panicked,
    #[error("scorer mailbox: {0}")]
    Mailbox(#[from] actix::MailboxError),
}

/// Rank `query` (a match copy) over `snapshot`, keeping `limit` rows, and mark
/// the titles of the first `highlight` of them (the first page).
#[derive(Message)]
#[rtype(result = "Result<Arc<SearchResult>, ScoreError>")]
pub struct Score {
    pub slot: ScoringSlot,
    pub query: String,
    pub snapshot: Arc<Snapshot>,
    pub limit: usize,
    pub highlight: usize,
}

struct Scorer {
    #[cfg(feature = "fault-injection")]
    hook: Option<ScoringHook>,
}

impl Actor for Scorer {
    type Context = SyncContext<Self>;
}

impl Handler<Score> for Scorer {
    type Result = Result<Arc<SearchResult>, ScoreError>;

    fn handle(&mut self, msg: Score, _: &mut Self::Context) -> Self::Result {
        let Score {
            slot,
            query,
            snapshot,
            limit,
            highlight,
        } = msg;
        // A panic must neither kill this thread (a SyncArbiter never replaces it)
        // nor keep the slot: catch it, and let `slot` drop on the way out.
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            #[cfg(feature = "fault-injection")]
            if let Some(hook) = &self.hook {
                hook(&query);
            }
            let mut result = rank::rank(&snapshot.index, &query, limit);
            // Highlighting the first page here, once per scoring, keeps it off the
            // cache-hit path; later pages are marked when first shown, since most
            // of the kept rows are never paged to.
            result.highlight_titles(&query, highlight, |id| snapshot.page(id).map(|p| p.title));
            result
        }));
        drop(slot);
        outcome.map(Arc::new).map_err(|_| ScoreError::Panicked)
    }
}

/// Readies one scorer thread's ranking buffers for `slots` title slots, then
/// waits at `all` until every scorer thread has taken one of these.
#[derive(Message)]
#[rtype(result = "()")]
struct Warm {
    slots: usize,
    all: Arc<std::sync::Barrier>,
}

impl Handler<Warm> for Scorer {
    type Result = ();

    fn handle(&mut self, msg: Warm, _: &mut Self::Context) {
        rank::warm_scratch(msg.slots);
        msg.all.wait();
    }
}

/// The slots and the actors that use them.
#[derive(Clone)]
pub struct ScorerPool {
    addr: Addr<Scorer>,
    permits: Arc<Semaphore>,
    size: usize,
    /// Counts slots taken (`acquired`) and misses that found none (`refused`).
    acquired: IntCounter,
    refused: IntCounter,
}

impl ScorerPool {
    /// Starts `size` scorer threads (call inside a running actix System); counts
    /// each slot taken in `acquired` and each refusal in `refused`.
    pub fn start(
        size: usize,
        acquired: IntCounter,
        refused: IntCounter,
        #[cfg(feature = "fault-injection")] hook: Option<ScoringHook>,
    ) -> Self {
        // The factory runs on each scorer thread as it starts.
        let addr = SyncArbiter::start(size, move || {
            crate::thread_priority::lower_this_thread(SCORER_NICE, "scorer");
            Scorer {
                #[cfg(feature = "fault-injection")]
                hook: hook.clone(),
            }
        });
        Self {
            addr,
            permits: Arc::new(Semaphore::new(size)),
            size,
            acquired,
            refused,
        }
    }

    /// Readies every scorer thread's ranking buffers for a snapshot of
    /// `slots` title slots, so that the first scorings after start-up cost
    /// what later ones do (at 1.1M pages a thread's buffers are about 14 MB,
    /// faulted in page by page on first use). Holds every slot meanwhile;
    /// waits for scorings in progress. Not counted as slots taken.
    pub async fn warm(&self, slots: usize) {
        let Ok(_all_slots) = self.permits.acquire_many(self.size as u32).await else {
            return;
        };
        // Each thread waits at the barrier after its message, so each of the
        // `size` messages is taken by a different thread.
        let all = Arc::new(std::sync::Barrier::new(self.size));
        let sent: Vec<_> = (0..self.size)
            .map(|_| {
                self.addr.send(Warm {
                    slots,
                    all: all.clone(),
                })
            })
            .collect();
        for warmed in sent {
            if let Err(e) = warmed.await {
                tracing::warn!(error = %e, "warming a scorer thread failed");
            }
        }
    }

    /// What a reader of the cache view needs to see that every slot is taken
    /// (see [`SlotGauge`]).
    pub fn gauge(&self) -> SlotGauge {
        SlotGauge::new(self.permits.clone(), self.refused.clone())
    }

    /// Takes a free slot now, or answers [`Busy`]; never waits.
    pub fn try_acquire(&self) -> Result<ScoringSlot, Busy> {
        let acquired = self.permits.clone().try_acquire_owned();
        match acquired {
            Ok(_) => self.acquired.inc(),
            Err(_) => self.refused.inc(),
        }
        acquired
            .map(|p| ScoringSlot { _permit: p })
            .map_err(|_| Busy)
    }

    /// Scores in the slot's actor (see [`Score`]). The slot is released when scoring ends, even if
    /// the returned future is dropped first. The future borrows nothing from the pool.
    pub fn score(
        &self,
        slot: ScoringSlot,
        query: String,
        snapshot: Arc<Snapshot>,
        limit: usize,
        highlight: usize,
    ) -> impl std::future::Future<Output = Result<Arc<SearchResult>, ScoreError>> + 'static {
        let sent = self.addr.send(Score {
            slot,
            query,
            snapshot,
            limit,
            highlight,
        });
        async move { sent.await? }
    }

    /// Slots in use now.
    pub fn busy(&self) -> usize {
        self.size - self.permits.available_permits()
    }

    /// Slots in all.
    pub fn size(&self) -> usize {
        self.size
    }
}

/// Whether a scoring slot is free, read without taking one: how the cache view
/// answers a busy 503 without asking the Cache actor (`crate::search::cache::view`).
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct SlotGauge {
    permits: Arc<Semaphore>,
    refused: IntCounter,
}

impl SlotGauge {
    /// The gauge of the slots `permits` counts, counting refusals in `refused`
    /// ([`ScorerPool::gauge`] makes the pool's).
    pub fn new(permits: Arc<Semaphore>, refused: IntCounter) -> Self {
        Self { permits, refused }
    }

    /// Every slot is taken at this instant.
    pub fn all_taken(&self) -> bool {
        self.permits.available_permits() == 0
    }

    /// Counts a miss refused for want of a slot, as [`ScorerPool::try_acquire`]
    /// counts its own refusals.
    pub fn count_refusal(&self) {
        self.refused.inc();
    }
}

/// Nice value of scorer threads: below every other thread of the process.
///
/// A scoring is throughput work (milliseconds of CPU), while the gates' answers —
/// a hit, a 429, the 503 of a busy slot — must be immediate. At nice 10 a scorer
/// gets about a tenth of a core that a gate thread also wants (CFS weights 110
/// against 1024), and all of an idle one; and it asks for a long scheduler slice
/// (`thread_priority::BACKGROUND_SLICE_NS`), so that on Linux 6.12+ a gate thread
/// that wakes takes the core at once instead of after the scorer's slice.
pub const SCORER_NICE: i32 = 10;
