//! The Cache actor: owns the LRU of immutable search results, keyed by
//! (match copy, corpus fingerprint), and the single flight of each search being
//! scored now. The key and the entry are in [`entry`], which this actor and the
//! view that hits read ([`view`]) both import.
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
//! (see [`view`]). It stays the only writer of both. Nor does a miss that finds
//! every slot taken: the view also holds the keys being scored, so a handler
//! answers 503 when the actor would have ([`CacheView::busy`]).
//!
//! Two bounds, both kept by evicting the least recently used entry: at most
//! `SEARCH_CACHE_ENTRIES` entries, and at most `SEARCH_CACHE_MAX_BYTES` bytes kept
//! alive by them ([`CacheBytes`]: rows, marks, keys and what the routes rendered
//! from each). An entry alone larger than the byte bound is answered from but not
//! kept. Entries grow after they are stored, as answers render pages from them;
//! a growth that takes the total past the bound sends the actor one [`Trim`],
//! which evicts (in exact LRU order, touches applied first) until it is under.
//!
//! Admission: the request's admission permit travels in [`Lookup`]. A hit, a join or
//! a busy answer drops it at once (the ceiling counts computations, not cheap
//! waiters); a leader's permit moves into the flight and is dropped when the scoring
//! ends, however it ends.

pub mod carry;
mod entry;
pub mod view;

use std::collections::HashMap;
use std::sync::Arc;

use actix::{
    Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, MessageResult, WrapFuture,
};
use hashlink::LruCache;
use prometheus::Histogram;
use tokio::sync::{oneshot, OwnedSemaphorePermit};

use crate::search::corpus::{Move, Snapshot};
use crate::search::scorer::ScorerPool;
use view::{CacheView, Published};

pub use entry::{CacheBytes, CacheKey, CachedResult, Entry, MAX_PAGES};

/// How a scoring ended, as its waiters see it: the entry, or `Err` when it
/// panicked or could not run (every waiter answers 500).
pub type FlightOutcome = Result<Arc<Entry>, ScoringFailed>;

/// The scoring of a flight produced no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the scoring of this search failed")]
pub struct ScoringFailed;

/// What gate 5 decided for one search.
#[derive(Debug)]
pub enum Answer {
    /// The LRU had it.
    Hit(Arc<Entry>),
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
#[derive(Message)]
#[rtype(result = "Answer")]
pub struct Lookup {
    pub key: CacheKey,
    pub snapshot: Arc<Snapshot>,
    pub admission: OwnedSemaphorePermit,
}

/// (LRU entries, bytes they keep alive, keys being scored, requests waiting on
/// them), for metrics and tests.
#[derive(Message)]
#[rtype(result = "CacheStats")]
pub struct Stats;

/// See [`Stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    pub entries: usize,
    /// What the entries keep alive ([`CacheBytes::held`]), after every trim asked
    /// for before this message.
    pub bytes: usize,
    pub flights: usize,
    pub waiters: usize,
}

/// Apply the uses logged by hits to the LRU order now (sent by the hit that fills
/// the log to [`view::TOUCH_LOG_FLUSH`]).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ApplyTouches;

/// The corpus moved by a known set of changed pages (sent by the corpus before it
/// publishes the new snapshot, so every lookup of the new fingerprint comes
/// after it): the entries of the old fingerprint that the move cannot affect
/// are carried to the new one, those it affects in a way the changed titles
/// alone tell are patched, the others checked are dropped (see [`carry`]).
#[derive(Message)]
#[rtype(result = "Carried")]
pub struct Carry(pub Move);

/// What one [`Carry`] did, in entries of the old fingerprint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Carried {
    /// Checked and moved to the new fingerprint.
    pub carried: usize,
    /// Checked, affected, and replaced by its result patched from the changed
    /// titles ([`carry::Verdict::Patched`]).
    pub patched: usize,
    /// Checked and found affected: evicted.
    pub dropped: usize,
    /// Seen past the check budget ([`carry::CARRY_CHECKS`]): left under the old
    /// fingerprint, unreachable, to leave by the LRU order.
    pub unchecked: usize,
}

/// Evict least recently used entries until the bytes held are under the bound
/// (sent by the growth of an entry that took them past it).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Trim;

/// The actor. Build it with [`Cache::new`] and start it on an actix arbiter.
pub struct Cache {
    /// The LRU order: entry ids, least recently used first, with their keys. The
    /// entries themselves are in `view`.
    lru: LruCache<u64, CacheKey>,
    /// At most this many entries (`SEARCH_CACHE_ENTRIES`).
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
    /// Counts what each corpus move did to the entries ([`Carry`]).
    carry_metrics: crate::metrics::CarryMetrics,
}

impl Cache {
    /// An empty cache of at most `capacity` entries (at least 1) keeping at most
    /// `max_bytes` alive, that scores misses in `scorers`, showing `result_limit`
    /// rows a page (and keeping [`MAX_PAGES`] pages).
    pub fn new(
        capacity: usize,
        max_bytes: usize,
        scorers: ScorerPool,
        result_limit: usize,
        scoring_seconds: Histogram,
    ) -> Self {
        Self {
            lru: LruCache::new_unbounded(),
            capacity: capacity.max(1),
            next_id: 0,
            view: CacheView::new(max_bytes, Some(scorers.gauge())),
            flights: HashMap::new(),
            scorers,
            result_limit,
            scoring_seconds,
            carry_metrics: crate::metrics::CarryMetrics::new(),
        }
    }

    /// This cache, counting its carries in `metrics` (registered by the caller).
    pub fn with_carry_metrics(mut self, metrics: crate::metrics::CarryMetrics) -> Self {
        self.carry_metrics = metrics;
        self
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

    /// Ends the scoring of `key` in the view and stores its `entry` (a success),
    /// in one update; then evicts least recently used entries while there are
    /// more than `capacity` or they hold more than the byte bound (after applying
    /// every logged use, so the choice is exact). An entry larger than the bound
    /// on its own is not stored: its waiters are answered from it, and the next
    /// search for its key scores again.
    fn store(&mut self, key: &CacheKey, entry: Option<Arc<Entry>>) {
        let bytes = self.view.bytes().clone();
        let entry = entry.filter(|entry| {
            let fits = entry.bytes_stored_as(key) <= bytes.bound();
            if !fits {
                tracing::debug!(bytes = entry.bytes(), "search result larger than the cache");
            }
            fits
        });
        let id = self.next_id;
        self.next_id += 1;
        let (lru, capacity) = (&mut self.lru, self.capacity);
        self.view.end_scoring(key, |entries, touches| {
            for used in touches {
                lru.get(&used);
            }
            let Some(entry) = entry else {
                return;
            };
            if let Some(old) = entries.remove(key) {
                lru.remove(&old.id);
                old.entry.release();
            }
            entry.hold(key, id, &bytes);
            lru.insert(id, key.clone());
            entries.insert(key.clone(), Published { id, entry });
            evict(lru, entries, |lru| lru.len() > capacity || bytes.over());
        });
    }

    /// Evicts the entries that grew larger than the byte bound on their own, then
    /// least recently used entries until the bytes held are under the bound
    /// (uses logged so far applied first).
    fn trim(&mut self) {
        let bytes = self.view.bytes().clone();
        let too_big = bytes.trim_started();
        let lru = &mut self.lru;
        self.view.update(|entries, touches| {
            for used in touches {
                lru.get(&used);
            }
            for id in too_big {
                // Not there: evicted already (or replaced, which evicted it).
                remove(lru, entries, id);
            }
            evict(lru, entries, |_| bytes.over());
        });
    }

    /// Carries the entries of `moved.from` that the move cannot affect to
    /// `moved.to`, replaces those it can patch by their patched result under
    /// `moved.to`, and evicts the others checked (most recently used first, at
    /// most [`carry::CARRY_CHECKS`], among at most [`carry::CARRY_SCAN`] entries
    /// looked at). The checks run outside the view's lock; only the re-keying
    /// takes it, once. A carried entry keeps its id, its place in the LRU order
    /// and its bytes (the key's text is moved, not copied); a patched one keeps
    /// its id and place, and starts without renderings (its rows' display fields
    /// may have changed).
    fn carry(&mut self, moved: &Move) -> Carried {
        let mut done = Carried::default();
        if moved.from == moved.to {
            return done;
        }
        let started = std::time::Instant::now();
        // Uses logged so far count: the most recently used are checked first.
        self.apply_touches();
        let probe = carry::Probe::new(moved);
        let limit = self.result_limit.saturating_mul(MAX_PAGES);
        let mut keep = Vec::new();
        let mut patched = Vec::new();
        let mut drop = Vec::new();
        for (&id, key) in self.lru.iter().rev().take(carry::CARRY_SCAN) {
            if key.fingerprint != moved.from {
                continue;
            }
            if keep.len() + patched.len() + drop.len() == carry::CARRY_CHECKS {
                done.unchecked += 1;
                continue;
            }
            let Some(published) = self.view.get(key) else {
                drop.push(id);
                continue;
            };
            match probe.verdict(&key.match_copy, &published.entry.result.result, limit) {
                carry::Verdict::Unaffected => keep.push(id),
                carry::Verdict::Patched(result) => {
                    let result = CachedResult::new(
                        Arc::new(result),
                        key.match_copy.clone(),
                        self.result_limit,
                    );
                    patched.push((id, Arc::new(Entry::new(result))));
                }
                carry::Verdict::Affected => drop.push(id),
            }
        }
        let lru = &mut self.lru;
        let bytes = self.view.bytes().clone();
        self.view.update(|entries, touches| {
            // Order does not matter here: nothing is evicted by recency until
            // the end.
            for used in touches {
                lru.get(&used);
            }
            for id in drop {
                if remove(lru, entries, id) {
                    done.dropped += 1;
                }
            }
            let moves = keep
                .into_iter()
                .map(|id| (id, None))
                .chain(patched.into_iter().map(|(id, e)| (id, Some(e))));
            for (id, replacement) in moves {
                let Some(key) = lru.peek_mut(&id) else {
                    continue;
                };
                let Some((mut published_key, published)) = entries.remove_entry(&*key) else {
                    continue;
                };
                key.fingerprint = moved.to;
                published_key.fingerprint = moved.to;
                let fits = replacement
                    .as_ref()
                    .is_none_or(|e| e.bytes_stored_as(&published_key) <= bytes.bound());
                if entries.contains_key(&published_key) || !fits {
                    // Scored over the new snapshot already (that one stays), or
                    // a patched result larger than the cache.
                    lru.remove(&id);
                    published.entry.release();
                    done.dropped += 1;
                    continue;
                }
                let published = match replacement {
                    None => {
                        done.carried += 1;
                        published
                    }
                    Some(entry) => {
                        published.entry.release();
                        entry.hold(&published_key, id, &bytes);
                        done.patched += 1;
                        view::Published { id, entry }
                    }
                };
                entries.insert(published_key, published);
            }
            evict(lru, entries, |_| bytes.over());
        });
        self.carry_metrics.observe(
            done.carried,
            done.patched,
            done.dropped,
            done.unchecked,
            started.elapsed().as_secs_f64(),
        );
        done
    }

    /// A flight ended: store a success in the LRU, tell every waiter, forget the key.
    fn finish(&mut self, key: CacheKey, outcome: FlightOutcome) {
        self.store(&key, outcome.as_ref().ok().cloned());
        for waiter in self.flights.remove(&key).unwrap_or_default() {
            // A waiter whose client went away dropped its receiver; nothing to do.
            let _ = waiter.send(outcome.clone());
        }
    }
}

/// Evicts the least recently used entry from `lru` and `entries` while `over`
/// holds (or nothing is left).
fn evict(
    lru: &mut LruCache<u64, CacheKey>,
    entries: &mut view::Entries,
    over: impl Fn(&LruCache<u64, CacheKey>) -> bool,
) {
    while over(lru) {
        let Some((_, evicted)) = lru.remove_lru() else {
            break;
        };
        release(entries, &evicted);
    }
}

/// Removes entry `id` from `lru` and `entries`, releasing its bytes; false when
/// `lru` no longer had it.
fn remove(lru: &mut LruCache<u64, CacheKey>, entries: &mut view::Entries, id: u64) -> bool {
    let Some(key) = lru.remove(&id) else {
        return false;
    };
    release(entries, &key);
    true
}

/// Takes `key`'s published entry out of `entries` and releases its bytes.
fn release(entries: &mut view::Entries, key: &CacheKey) {
    if let Some(gone) = entries.remove(key) {
        gone.entry.release();
    }
}

impl Actor for Cache {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Weak: the view (which entries reach) must not keep its own actor alive.
        let me = ctx.address().downgrade();
        self.view.bytes().on_over(move || {
            if let Some(cache) = me.upgrade() {
                cache.do_send(Trim);
            }
        });
    }
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
        if let Some(published) = self.view.get(&key) {
            self.lru.get(&published.id);
            return MessageResult(Answer::Hit(published.entry));
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
        let scorers = &self.scorers;
        let Ok(slot) = self.view.start_scoring(&key, || scorers.try_acquire()) else {
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
                .map(|result| Arc::new(Entry::new(CachedResult::new(result, query, page_size))))
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

/// Handlers of the messages the cache answers with one call each, as
/// `Message => |cache, message| answer;`.
macro_rules! answered_by_one_call {
    ($($message:ident => |$cache:ident, $msg:pat_param| $answer:expr;)*) => {$(
        impl Handler<$message> for Cache {
            type Result = MessageResult<$message>;

            fn handle(&mut self, $msg: $message, _: &mut Self::Context) -> Self::Result {
                let $cache = self;
                MessageResult($answer)
            }
        }
    )*};
}

answered_by_one_call! {
    ApplyTouches => |cache, _| cache.apply_touches();
    Carry => |cache, Carry(moved)| {
        let done = cache.carry(&moved);
        cache.view.carry_applied();
        done
    };
    Trim => |cache, _| cache.trim();
    Stats => |cache, _| CacheStats {
        entries: cache.lru.len(),
        bytes: cache.view.bytes().held(),
        flights: cache.flights.len(),
        waiters: cache.flights.values().map(Vec::len).sum(),
    };
}
