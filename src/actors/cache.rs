//! The Cache actor: owns the LRU of immutable search results, keyed by
//! (match copy, corpus fingerprint), and the single flight of each search being
//! scored now.
//!
//! [`Lookup`] decides, in one message, what a search that reached gate 5 does: use a
//! cached result ([`Answer::Hit`]), wait for the scoring already running for its key
//! ([`Answer::Wait`], a join), start a new scoring in a free scorer slot (also
//! [`Answer::Wait`], as its leader), or be refused because no slot is free
//! ([`Answer::Busy`]). Doing all of it inside one actor message makes "at most one
//! scoring per key" and "a join never takes a slot" hold without locks.
//!
//! The actor owns each flight from start to end, like moka's `get_with` or Go's
//! `singleflight.Do`: the handler that records a flight also starts its scoring as a
//! future of this actor's own context, and that future (not any request) stores the
//! result and tells the waiters. A caller can vanish at any point (before its message
//! is handled, while it waits, or never polled again) without leaving a key in flight.
//!
//! Admission: the request's admission permit travels in [`Lookup`]. A hit, a join or
//! a busy answer drops it at once (the ceiling counts computations, not cheap
//! waiters); a leader's permit moves into the flight and is dropped when the scoring
//! ends, however it ends.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use actix::{
    Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, MessageResult, WrapFuture,
};
use hashlink::LruCache;
use prometheus::Histogram;
use tokio::sync::{oneshot, OwnedSemaphorePermit};

use crate::actors::scorer::ScorerPool;
use crate::search::corpus::{Fingerprint, Snapshot};
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
pub type FlightOutcome = Result<Arc<CachedResult>, ScoringFailed>;

/// One LRU entry: an immutable scored result and the renderings of its rows (HTML
/// table, JSON array), each made once, by the first answer that needs it. The key's
/// fingerprint pins every row's id and version, hence its slug, title and time, so
/// a rendering stays right for as long as the entry can be found.
#[derive(Debug)]
pub struct CachedResult {
    pub result: Arc<SearchResult>,
    html_rows: OnceLock<String>,
    json_rows: OnceLock<String>,
    /// Whole answers already rendered from this entry, by what else they depend on
    /// (query as typed, theme, cache status…); the few most recent.
    pages: std::sync::Mutex<Vec<(String, actix_web::web::Bytes)>>,
}

/// Whole pages kept per entry.
const PAGES_PER_ENTRY: usize = 8;

impl CachedResult {
    /// An entry for `result` with nothing rendered yet.
    pub fn new(result: Arc<SearchResult>) -> Self {
        Self {
            result,
            html_rows: OnceLock::new(),
            json_rows: OnceLock::new(),
            pages: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The answer body rendered for `variant`, rendered by `render` (and kept) on
    /// first use; an `Err` of `render` is returned as is and nothing is kept.
    pub fn page<E>(
        &self,
        variant: String,
        render: impl FnOnce() -> Result<String, E>,
    ) -> Result<actix_web::web::Bytes, E> {
        if let Ok(pages) = self.pages.lock() {
            if let Some((_, body)) = pages.iter().find(|(v, _)| *v == variant) {
                return Ok(body.clone());
            }
        }
        let body = actix_web::web::Bytes::from(render()?);
        if let Ok(mut pages) = self.pages.lock() {
            if pages.len() >= PAGES_PER_ENTRY {
                pages.remove(0);
            }
            pages.push((variant, body.clone()));
        }
        Ok(body)
    }

    /// The HTML rows, rendered by `render` on first use.
    pub fn html_rows(&self, render: impl FnOnce() -> String) -> &str {
        self.html_rows.get_or_init(render)
    }

    /// The JSON `results` array, rendered by `render` on first use.
    pub fn json_rows(&self, render: impl FnOnce() -> String) -> &str {
        self.json_rows.get_or_init(render)
    }
}

/// The scoring of a flight produced no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the scoring of this search failed")]
pub struct ScoringFailed;

/// What gate 5 decided for one search.
#[derive(Debug)]
pub enum Answer {
    /// The LRU had it.
    Hit(Arc<CachedResult>),
    /// A scoring for this key runs (owned by the Cache actor); its outcome arrives
    /// on `outcome`. `led` is true when this request's lookup started it (a miss),
    /// false when it joined one already running.
    Wait {
        led: bool,
        outcome: oneshot::Receiver<FlightOutcome>,
    },
    /// A miss with every scorer slot taken: 503.
    Busy,
}

/// Decide a search's path at gate 5 (see [`Answer`]): `snapshot` is what a leader
/// scores over (its fingerprint is `key.fingerprint`); `admission` is the request's
/// admission permit, released at once unless this lookup leads a scoring.
pub struct Lookup {
    pub key: CacheKey,
    pub snapshot: Arc<Snapshot>,
    pub admission: OwnedSemaphorePermit,
}

impl Message for Lookup {
    type Result = Answer;
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

/// The actor. Build it with [`Cache::new`] and start it on an actix arbiter.
pub struct Cache {
    lru: LruCache<CacheKey, Arc<CachedResult>>,
    /// The waiters of each key being scored now; an entry exists exactly while its
    /// scoring future runs in this actor's context.
    flights: HashMap<CacheKey, Vec<oneshot::Sender<FlightOutcome>>>,
    scorers: ScorerPool,
    /// Rows a scoring keeps (`SEARCH_RESULT_LIMIT`).
    result_limit: usize,
    /// Observes each scoring's duration, in seconds.
    scoring_seconds: Histogram,
}

impl Cache {
    /// An empty cache of `capacity` entries (at least 1) that scores misses in
    /// `scorers`, keeping `result_limit` rows each.
    pub fn new(
        capacity: usize,
        scorers: ScorerPool,
        result_limit: usize,
        scoring_seconds: Histogram,
    ) -> Self {
        Self {
            lru: LruCache::new(capacity.max(1)),
            flights: HashMap::new(),
            scorers,
            result_limit,
            scoring_seconds,
        }
    }

    /// A flight ended: store a success in the LRU, tell every waiter, forget the key.
    fn finish(&mut self, key: CacheKey, outcome: FlightOutcome) {
        if let Ok(result) = &outcome {
            self.lru.insert(key.clone(), result.clone());
        }
        for waiter in self.flights.remove(&key).unwrap_or_default() {
            // A waiter whose client went away dropped its receiver; nothing to do.
            let _ = waiter.send(outcome.clone());
        }
    }
}

impl Actor for Cache {
    type Context = Context<Self>;
}

impl Handler<Lookup> for Cache {
    type Result = MessageResult<Lookup>;

    fn handle(&mut self, msg: Lookup, ctx: &mut Self::Context) -> Self::Result {
        let Lookup {
            key,
            snapshot,
            admission,
        } = msg;
        if let Some(result) = self.lru.get(&key) {
            return MessageResult(Answer::Hit(result.clone()));
        }
        if let Some(waiters) = self.flights.get_mut(&key) {
            // Forget joiners whose clients went away, so a long scoring under a
            // stream of joins holds only live waiters.
            waiters.retain(|w| !w.is_closed());
            let (tx, rx) = oneshot::channel();
            waiters.push(tx);
            return MessageResult(Answer::Wait {
                led: false,
                outcome: rx,
            });
        }
        let Ok(slot) = self.scorers.try_acquire() else {
            return MessageResult(Answer::Busy);
        };
        let (tx, rx) = oneshot::channel();
        self.flights.insert(key.clone(), vec![tx]);
        let scoring = self
            .scorers
            .score(slot, key.match_copy.clone(), snapshot, self.result_limit);
        let timer = self.scoring_seconds.start_timer();
        let flight = async move {
            let scored = scoring.await;
            timer.observe_duration();
            drop(admission);
            scored
                .map(|result| Arc::new(CachedResult::new(result)))
                .map_err(|e| {
                    tracing::error!(error = %e, "scoring failed");
                    ScoringFailed
                })
        };
        ctx.spawn(
            flight
                .into_actor(self)
                .map(move |outcome, cache, _| cache.finish(key, outcome)),
        );
        MessageResult(Answer::Wait {
            led: true,
            outcome: rx,
        })
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
