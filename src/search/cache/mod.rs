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
//! Hits need no message: the actor publishes its entries in a [`CacheView`] that
//! handlers read, and applies the uses they log to its LRU order before it evicts
//! (see [`view`]). It stays the only writer of both.
//!
//! Admission: the request's admission permit travels in [`Lookup`]. A hit, a join or
//! a busy answer drops it at once (the ceiling counts computations, not cheap
//! waiters); a leader's permit moves into the flight and is dropped when the scoring
//! ends, however it ends.

pub mod view;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use actix::{
    Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, MessageResult, WrapFuture,
};
use hashlink::LruCache;
use prometheus::Histogram;
use tokio::sync::{oneshot, OwnedSemaphorePermit};

use crate::search::corpus::{Fingerprint, Snapshot};
use crate::search::rank::{self, Marks, ScoredRow, SearchResult};
use crate::search::scorer::ScorerPool;
use view::{CacheView, Published};

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

/// Pages of results one scoring keeps: it ranks `SEARCH_RESULT_LIMIT × MAX_PAGES`
/// rows, so every page of a cached query is a hit and never scores again. Matches
/// past those rows are counted (`total`) but cannot be paged to; the answer says
/// so (the result is `truncated`).
pub const MAX_PAGES: usize = 10;

/// One LRU entry: an immutable scored result, cut into pages of `page_size` rows,
/// and per page the marks of its titles and the renderings of its rows (HTML
/// table, JSON array), each made once, by the first answer that needs it. The
/// key's fingerprint pins every row's id and version, hence its slug, title and
/// time, so a rendering stays right for as long as the entry can be found.
#[derive(Debug)]
pub struct CachedResult {
    pub result: Arc<SearchResult>,
    /// The match copy that was scored (what the marks are computed for).
    query: String,
    /// Rows a page shows (`SEARCH_RESULT_LIMIT`).
    page_size: usize,
    /// Per page, what matched in each row's title (the first page comes from the
    /// scorer; the others are computed when first shown).
    marks: Vec<OnceLock<Vec<Marks>>>,
    html_rows: Vec<OnceLock<String>>,
    json_rows: Vec<OnceLock<String>>,
    /// Whole answers already rendered from this entry, by what else they depend on
    /// (page, query as typed, theme, cache status…); the few most recent.
    pages: std::sync::Mutex<Vec<(String, actix_web::web::Bytes)>>,
}

/// Whole answers kept per entry (a few pages in a few variants).
const PAGES_PER_ENTRY: usize = 12;

impl CachedResult {
    /// An entry for `result`, a scoring of `query` (a match copy), shown
    /// `page_size` rows a page (at least 1), with nothing rendered yet. The marks
    /// the scorer made for the first page are kept when they cover it.
    pub fn new(result: Arc<SearchResult>, query: String, page_size: usize) -> Self {
        let page_size = page_size.max(1);
        let pages = result.rows.len().div_ceil(page_size).max(1);
        let first = result.rows.len().min(page_size);
        let marks = (0..pages)
            .map(|p| {
                if p == 0 && result.highlights.len() >= first {
                    OnceLock::from(result.highlights[..first].to_vec())
                } else {
                    OnceLock::new()
                }
            })
            .collect();
        Self {
            result,
            query,
            page_size,
            marks,
            html_rows: (0..pages).map(|_| OnceLock::new()).collect(),
            json_rows: (0..pages).map(|_| OnceLock::new()).collect(),
            pages: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Rows a page shows.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Pages there are to show: at least 1 (an empty result is one empty page), at
    /// most [`MAX_PAGES`].
    pub fn pages(&self) -> usize {
        self.marks.len()
    }

    /// The rows of page `page` (from 1); empty past the last page.
    pub fn rows(&self, page: usize) -> &[ScoredRow] {
        let rows = &self.result.rows;
        let Some(before) = page.checked_sub(1) else {
            return &[];
        };
        let start = before.saturating_mul(self.page_size).min(rows.len());
        let end = start.saturating_add(self.page_size).min(rows.len());
        &rows[start..end]
    }

    /// What matched in the titles of page `page`'s rows, in row order, computed on
    /// first use with the titles `title_of` gives; empty past the last page.
    pub fn marks<'a>(&self, page: usize, title_of: impl Fn(i64) -> Option<&'a str>) -> &[Marks] {
        let Some(cell) = page.checked_sub(1).and_then(|p| self.marks.get(p)) else {
            return &[];
        };
        cell.get_or_init(|| {
            self.rows(page)
                .iter()
                .map(|row| {
                    title_of(row.page_id)
                        .map(|t| rank::marks(t, &self.query))
                        .unwrap_or_default()
                })
                .collect()
        })
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

    /// The HTML rows of page `page`, rendered by `render` on first use; empty past
    /// the last page.
    pub fn html_rows(&self, page: usize, render: impl FnOnce() -> String) -> &str {
        match page.checked_sub(1).and_then(|p| self.html_rows.get(p)) {
            Some(cell) => cell.get_or_init(render),
            None => "",
        }
    }

    /// The JSON `results` array of page `page`, rendered by `render` on first use;
    /// `[]` past the last page.
    pub fn json_rows(&self, page: usize, render: impl FnOnce() -> String) -> &str {
        match page.checked_sub(1).and_then(|p| self.json_rows.get(p)) {
            Some(cell) => cell.get_or_init(render),
            None => "[]",
        }
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

/// Apply the uses logged by hits to the LRU order now (sent by the hit that fills
/// the log to [`view::TOUCH_LOG_FLUSH`]).
pub struct ApplyTouches;

impl Message for ApplyTouches {
    type Result = ();
}

/// The actor. Build it with [`Cache::new`] and start it on an actix arbiter.
pub struct Cache {
    /// The LRU order: entry ids, least recently used first, with their keys. The
    /// entries themselves are in `view`.
    lru: LruCache<u64, CacheKey>,
    capacity: usize,
    next_id: u64,
    view: CacheView,
    /// The waiters of each key being scored now; an entry exists exactly while its
    /// scoring future runs in this actor's context.
    flights: HashMap<CacheKey, Vec<oneshot::Sender<FlightOutcome>>>,
    scorers: ScorerPool,
    /// Rows a page shows (`SEARCH_RESULT_LIMIT`); a scoring keeps [`MAX_PAGES`]
    /// times as many.
    result_limit: usize,
    /// Observes each scoring's duration, in seconds.
    scoring_seconds: Histogram,
}

impl Cache {
    /// An empty cache of `capacity` entries (at least 1) that scores misses in
    /// `scorers`, showing `result_limit` rows a page (and keeping [`MAX_PAGES`] pages).
    pub fn new(
        capacity: usize,
        scorers: ScorerPool,
        result_limit: usize,
        scoring_seconds: Histogram,
    ) -> Self {
        Self {
            lru: LruCache::new_unbounded(),
            capacity: capacity.max(1),
            next_id: 0,
            view: CacheView::default(),
            flights: HashMap::new(),
            scorers,
            result_limit,
            scoring_seconds,
        }
    }

    /// The view handlers find hits in (see [`view`]).
    pub fn view(&self) -> CacheView {
        self.view.clone()
    }

    /// Moves the entries hits used since last time to the recent end, in the order
    /// they were used; an id already evicted is skipped.
    fn apply_touches(&mut self) {
        for id in self.view.take_touches() {
            self.lru.get(&id);
        }
    }

    /// Stores `result` under `key`, evicting the least recently used entry when
    /// full (after applying every logged use, so the choice is exact).
    fn store(&mut self, key: CacheKey, result: Arc<CachedResult>) {
        let id = self.next_id;
        self.next_id += 1;
        let (lru, capacity) = (&mut self.lru, self.capacity);
        self.view.update(|entries, touches| {
            for used in touches {
                lru.get(&used);
            }
            if let Some(old) = entries.get(&key) {
                lru.remove(&old.id);
            }
            while lru.len() >= capacity {
                let Some((_, evicted)) = lru.remove_lru() else {
                    break;
                };
                entries.remove(&evicted);
            }
            lru.insert(id, key.clone());
            entries.insert(key, Published { id, result });
        });
    }

    /// A flight ended: store a success in the LRU, tell every waiter, forget the key.
    fn finish(&mut self, key: CacheKey, outcome: FlightOutcome) {
        if let Ok(result) = &outcome {
            self.store(key.clone(), result.clone());
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
        // Uses logged before this lookup come first in the LRU order.
        self.apply_touches();
        if let Some(entry) = self.view.get(&key) {
            self.lru.get(&entry.id);
            return MessageResult(Answer::Hit(entry.result));
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
        let page_size = self.result_limit;
        let scoring = self.scorers.score(
            slot,
            key.match_copy.clone(),
            snapshot,
            page_size.saturating_mul(MAX_PAGES),
            page_size,
        );
        let query = key.match_copy.clone();
        let timer = self.scoring_seconds.start_timer();
        let flight = async move {
            let scored = scoring.await;
            timer.observe_duration();
            drop(admission);
            scored
                .map(|result| Arc::new(CachedResult::new(result, query, page_size)))
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

impl Handler<ApplyTouches> for Cache {
    type Result = ();

    fn handle(&mut self, _: ApplyTouches, _: &mut Self::Context) {
        self.apply_touches();
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
