//! The Cache actor: owns the LRU of immutable search results, keyed by
//! (match copy, corpus fingerprint), and the table of searches being scored now.
//!
//! [`Admit`] decides, in one message, what a search that reached gate 5 does: use a
//! cached result, join the scoring already running for its key (single flight), lead
//! a new scoring in a free scorer slot, or be refused because no slot is free. Doing
//! all of it inside one actor message makes "at most one scoring per key" and "a join
//! never takes a slot" hold without locks: no other admission interleaves.

use std::collections::HashMap;
use std::sync::Arc;

use actix::{Actor, Context, Handler, Message, MessageResult};
use hashlink::LruCache;
use tokio::sync::oneshot;

use crate::actors::scorer::{ScorerPool, ScoringSlot};
use crate::search::corpus::Fingerprint;
use crate::search::rank::SearchResult;

/// A cache key: the normalized query and the fingerprint of the corpus it was scored
/// over. A change to any candidate's id set or version changes the fingerprint, so a
/// stale result can never be found.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    pub match_copy: String,
    pub fingerprint: Fingerprint,
}

/// How a scoring ended, as its waiters see it: the result, or `Err` when it
/// panicked or could not run (every waiter answers 500).
pub type FlightOutcome = Result<Arc<SearchResult>, ScoringFailed>;

/// The scoring of a flight produced no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the scoring of this search failed")]
pub struct ScoringFailed;

/// What gate 5 decided for one search.
#[derive(Debug)]
pub enum Admission {
    /// The LRU had it.
    Hit(Arc<SearchResult>),
    /// A scoring for this key is running; its outcome arrives here.
    Join(oneshot::Receiver<FlightOutcome>),
    /// This request starts the scoring: it holds the slot, must start it and report
    /// through [`Finish`] (see `FlightGuard` in `routes::search`); its own outcome
    /// arrives on the receiver like a joiner's.
    Lead(ScoringSlot, oneshot::Receiver<FlightOutcome>),
    /// A miss with every scorer slot taken: 503.
    Busy,
}

/// Decide a search's path at gate 5 (see [`Admission`]).
pub struct Admit(pub CacheKey);

impl Message for Admit {
    type Result = Admission;
}

/// A flight ended: store a success in the LRU, tell every waiter, forget the key.
pub struct Finish(pub CacheKey, pub FlightOutcome);

impl Message for Finish {
    type Result = ();
}

/// (LRU entries, keys being scored, requests waiting on them), for metrics and tests.
pub struct Stats;

/// See [`Stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    pub entries: usize,
    pub flights: usize,
    pub waiters: usize,
}

impl Message for Stats {
    type Result = CacheStats;
}

pub struct Cache {
    lru: LruCache<CacheKey, Arc<SearchResult>>,
    flights: HashMap<CacheKey, Vec<oneshot::Sender<FlightOutcome>>>,
    scorers: ScorerPool,
}

impl Cache {
    /// An empty cache of `capacity` entries (at least 1) admitting into `scorers`.
    pub fn new(capacity: usize, scorers: ScorerPool) -> Self {
        Self {
            lru: LruCache::new(capacity.max(1)),
            flights: HashMap::new(),
            scorers,
        }
    }
}

impl Actor for Cache {
    type Context = Context<Self>;
}

impl Handler<Admit> for Cache {
    type Result = MessageResult<Admit>;

    fn handle(&mut self, Admit(key): Admit, _: &mut Self::Context) -> Self::Result {
        if let Some(result) = self.lru.get(&key) {
            return MessageResult(Admission::Hit(result.clone()));
        }
        if let Some(waiters) = self.flights.get_mut(&key) {
            // Forget joiners whose clients went away, so a long scoring under a
            // stream of joins holds only live waiters.
            waiters.retain(|w| !w.is_closed());
            let (tx, rx) = oneshot::channel();
            waiters.push(tx);
            return MessageResult(Admission::Join(rx));
        }
        let Ok(slot) = self.scorers.try_acquire() else {
            return MessageResult(Admission::Busy);
        };
        let (tx, rx) = oneshot::channel();
        self.flights.insert(key, vec![tx]);
        MessageResult(Admission::Lead(slot, rx))
    }
}

impl Handler<Finish> for Cache {
    type Result = ();

    fn handle(&mut self, Finish(key, outcome): Finish, _: &mut Self::Context) {
        if let Ok(result) = &outcome {
            self.lru.insert(key.clone(), result.clone());
        }
        for waiter in self.flights.remove(&key).unwrap_or_default() {
            // A waiter whose client went away dropped its receiver; nothing to do.
            let _ = waiter.send(outcome.clone());
        }
    }
}

impl Handler<Stats> for Cache {
    type Result = MessageResult<Stats>;

    fn handle(&mut self, _: Stats, _: &mut Self::Context) -> Self::Result {
        MessageResult(CacheStats {
            entries: self.lru.len(),
            flights: self.flights.len(),
            waiters: self.flights.values().map(Vec::len).sum(),
        })
    }
}
