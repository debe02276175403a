//! What the cache holds and is found by: [`CacheKey`] (match copy, corpus
//! fingerprint) and [`Entry`]: one immutable scored result ([`CachedResult`], cut
//! into pages) and the one attachment the layer that answers from it keeps beside
//! it (the routes' renderings). Both the Cache actor ([`super`]) and the view hits
//! read ([`super::view`]) import them from here, with [`CacheBytes`], the running
//! total of what the cache holds against its byte bound.
//!
//! The cache holds results only: it never renders, and it does not know what an
//! attachment is. It only guarantees that an attachment lives exactly as long as
//! its entry (dropped with it once evicted and no answer holds it any more), and it
//! counts what each entry keeps alive: the result's rows and marks, the key, and
//! every byte the attachment reports as it grows ([`Entry::grew`]). Growth happens
//! outside the actor (an answer renders a page it had not rendered), so each
//! entry's count is one atomic word, and the cache's total is updated by the same
//! atomic steps: no lock, no message, unless the total passes the bound.

use std::any::Any;
use std::mem::size_of;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::search::corpus::Fingerprint;
use crate::search::rank::{self, Marks, ScoredRow, SearchResult};

/// A cache key: the normalized query and the fingerprint of the corpus it was scored
/// over. A change to any candidate's id set or version changes the fingerprint, so a
/// stale result can never be found.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    pub match_copy: String,
    pub fingerprint: Fingerprint,
}

impl CacheKey {
    /// Bytes one copy of the key takes: its struct and its text.
    pub fn bytes(&self) -> usize {
        size_of::<Self>() + self.match_copy.capacity()
    }
}

/// Pages of results one scoring keeps: it ranks `SEARCH_RESULT_LIMIT × MAX_PAGES`
/// rows, so every page of a cached query is a hit and never scores again. Matches
/// past those rows are counted (`total`) but cannot be paged to; the answer says
/// so (the result is `truncated`).
pub const MAX_PAGES: usize = 10;

/// The result of one LRU entry: an immutable scored result, cut into pages of
/// `page_size` rows, and per page what matched in its titles (made once, by the
/// first answer that shows the page). The key's fingerprint pins every row's id
/// and version, hence its slug, title and time, so the marks, and anything made
/// from them, stay right for as long as the entry can be found.
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
    /// What the entry of this result keeps alive, in bytes (see [`Footprint`]).
    footprint: Footprint,
}

impl CachedResult {
    /// The result of a scoring of `query` (a match copy), shown `page_size` rows a
    /// page (at least 1). The marks the scorer made for the first page are kept
    /// when they cover it.
    pub fn new(mut result: Arc<SearchResult>, query: String, page_size: usize) -> Self {
        // The ranking allocates for every row it might keep; the cache keeps what
        // it found (a result nobody else holds yet, as the scorer's is).
        if let Some(kept) = Arc::get_mut(&mut result) {
            kept.rows.shrink_to_fit();
            kept.highlights.shrink_to_fit();
        }
        let page_size = page_size.max(1);
        let pages = result.rows.len().div_ceil(page_size).max(1);
        let first = result.rows.len().min(page_size);
        let marks: Vec<_> = (0..pages)
            .map(|p| {
                if p == 0 && result.highlights.len() >= first {
                    OnceLock::from(result.highlights[..first].to_vec())
                } else {
                    OnceLock::new()
                }
            })
            .collect();
        // The scored result (rows and the scorer's marks, behind their Arc), the
        // query, the page cells and the marks already in them.
        let bytes = 2 * size_of::<usize>()
            + size_of::<SearchResult>()
            + result.rows.capacity() * size_of::<ScoredRow>()
            + marks_bytes(&result.highlights, result.highlights.capacity())
            + query.capacity()
            + marks.capacity() * size_of::<OnceLock<Vec<Marks>>>()
            + marks
                .iter()
                .filter_map(OnceLock::get)
                .map(|m| marks_bytes(m, m.capacity()))
                .sum::<usize>();
        Self {
            result,
            query,
            page_size,
            marks,
            footprint: Footprint::new(bytes),
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
    /// first use with the titles `title_of` gives (and counted in the entry's
    /// bytes); empty past the last page.
    pub fn marks<'a>(&self, page: usize, title_of: impl Fn(i64) -> Option<&'a str>) -> &[Marks] {
        let Some(cell) = page.checked_sub(1).and_then(|p| self.marks.get(p)) else {
            return &[];
        };
        cell.get_or_init(|| {
            let marks: Vec<Marks> = self
                .rows(page)
                .iter()
                .map(|row| {
                    title_of(row.page_id)
                        .map(|t| rank::marks(t, &self.query))
                        .unwrap_or_default()
                })
                .collect();
            self.footprint.grow(marks_bytes(&marks, marks.capacity()));
            marks
        })
    }
}

/// Heap bytes of a vector of `capacity` marks holding `marks`.
fn marks_bytes(marks: &[Marks], capacity: usize) -> usize {
    capacity * size_of::<Marks>()
        + marks
            .iter()
            .map(|m| m.ranges.capacity() * size_of::<Range<usize>>())
            .sum::<usize>()
}

/// One LRU entry: the [`CachedResult`] and the attachment of the layer that
/// answers from it, if one was made.
pub struct Entry {
    pub result: CachedResult,
    /// Made on first use, dropped with the entry; the cache never looks inside.
    attached: OnceLock<Box<dyn Any + Send + Sync>>,
}

impl Entry {
    /// An entry of `result` with nothing attached yet.
    pub fn new(result: CachedResult) -> Self {
        // The entry itself, in its Arc.
        result
            .footprint
            .grow(2 * size_of::<usize>() + size_of::<Self>());
        Self {
            result,
            attached: OnceLock::new(),
        }
    }

    /// The attachment of this entry, made by `init` on first use (once, however
    /// many answers ask at the same time). Whoever adds to it says how many bytes
    /// it added with [`Entry::grew`] (its first size included).
    ///
    /// Panics when the entry already carries an attachment of another type: one
    /// layer answers from a cache, so that is a programming error.
    pub fn attachment<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> &T {
        self.attached
            .get_or_init(|| Box::new(init()))
            .downcast_ref::<T>()
            .expect("an entry carries attachments of one type")
    }

    /// The attachment now holds `bytes` more (a rendering was added to it). While
    /// the cache holds the entry, its total grows by as much, and a total past the
    /// bound asks the Cache actor to evict (one message, however many grow).
    pub fn grew(&self, bytes: usize) {
        self.result.footprint.grow(bytes);
    }

    /// The attachment let `bytes` go (a rendering it had counted with
    /// [`Entry::grew`] was dropped).
    pub fn shrank(&self, bytes: usize) {
        self.result.footprint.shrink(bytes);
    }

    /// Bytes the entry keeps alive: its result, rows and marks, the two copies of
    /// its key once stored, and its attachment as reported.
    pub fn bytes(&self) -> usize {
        self.result.footprint.bytes()
    }

    /// Bytes the entry would keep alive once stored under `key` (see
    /// [`Entry::hold`]).
    pub(super) fn bytes_stored_as(&self, key: &CacheKey) -> usize {
        self.bytes() + Self::place_bytes(key)
    }

    /// The cache stored the entry under `key` as its entry `id`: counts the key's
    /// two copies (the LRU order and the view) and its places in them, then
    /// counts the entry in `cache` until [`Entry::release`]. Returns the bytes now
    /// counted.
    pub(super) fn hold(&self, key: &CacheKey, id: u64, cache: &Arc<CacheBytes>) -> usize {
        self.result.footprint.grow(Self::place_bytes(key));
        self.result.footprint.hold(id, cache)
    }

    /// What storing an entry under `key` takes beside the entry: the key in the
    /// LRU order and in the view, the id in both, and the view's pointer.
    fn place_bytes(key: &CacheKey) -> usize {
        2 * key.bytes() + 2 * size_of::<u64>() + size_of::<Arc<Self>>()
    }

    /// The cache evicted the entry: its bytes leave the cache's total (it lives on
    /// only while an answer still holds it).
    pub(super) fn release(&self) {
        self.result.footprint.release();
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("result", &self.result)
            .field("bytes", &self.bytes())
            .finish()
    }
}

/// Bit of [`Footprint::state`] set while the cache holds (counts) the entry.
const HELD: usize = 1 << (usize::BITS - 1);

/// What one entry keeps alive, in bytes, and whether the cache counts it.
///
/// Both are one atomic word, so a growth racing the entry's eviction is counted
/// in the cache's total exactly when it happened while the entry was held: the
/// growth's `fetch_add` sees the held bit (and adds to the total) if and only if it
/// came before the eviction's `fetch_and` (which takes what it saw off the total).
#[derive(Debug)]
struct Footprint {
    state: AtomicUsize,
    /// The cache's total and the entry's id in it, once the entry was stored.
    cache: OnceLock<(Arc<CacheBytes>, u64)>,
}

impl Footprint {
    fn new(bytes: usize) -> Self {
        Self {
            state: AtomicUsize::new(bytes),
            cache: OnceLock::new(),
        }
    }

    fn bytes(&self) -> usize {
        self.state.load(Ordering::Acquire) & !HELD
    }

    fn grow(&self, bytes: usize) {
        let before = self.state.fetch_add(bytes, Ordering::AcqRel);
        if before & HELD != 0 {
            if let Some((cache, id)) = self.cache.get() {
                cache.grew(bytes, (before & !HELD) + bytes, *id);
            }
        }
    }

    fn shrink(&self, bytes: usize) {
        let before = self.state.fetch_sub(bytes, Ordering::AcqRel);
        if before & HELD != 0 {
            if let Some((cache, _)) = self.cache.get() {
                cache.shrank(bytes);
            }
        }
    }

    /// Counted in `cache`, as its entry `id`, from now on; the bytes counted.
    fn hold(&self, id: u64, cache: &Arc<CacheBytes>) -> usize {
        // An entry is stored once; `cache` is set before the bit that makes growth
        // read it.
        let _ = self.cache.set((cache.clone(), id));
        let before = self.state.fetch_or(HELD, Ordering::AcqRel);
        let bytes = before & !HELD;
        if before & HELD == 0 {
            cache.add(bytes as isize);
        }
        bytes
    }

    fn release(&self) {
        let before = self.state.fetch_and(!HELD, Ordering::AcqRel);
        if before & HELD != 0 {
            if let Some((cache, _)) = self.cache.get() {
                cache.add(-((before & !HELD) as isize));
            }
        }
    }
}

/// The bytes the cache holds (`SEARCH_CACHE_MAX_BYTES` bounds them): the sum of
/// [`Entry::bytes`] over the entries it holds, kept as they are stored, grow and
/// are evicted. Shared by the Cache actor, its view and every entry it holds.
pub struct CacheBytes {
    /// Signed: an eviction may take an entry's bytes off the total before a
    /// growth it raced with adds its part; the sum is exact once both are done.
    held: AtomicIsize,
    bound: usize,
    /// A trim was asked for and has not started yet (so a burst of growth sends
    /// one message).
    trim_asked: AtomicBool,
    /// Ids of held entries that grew larger than the bound on their own: the
    /// next trim evicts them first (evicting others would not make them fit).
    too_big: Mutex<Vec<u64>>,
    /// Asks the Cache actor to trim; set when it starts.
    ask_trim: OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl CacheBytes {
    /// Nothing held yet, at most `bound` bytes to hold.
    pub fn new(bound: usize) -> Self {
        Self {
            held: AtomicIsize::new(0),
            bound,
            trim_asked: AtomicBool::new(false),
            too_big: Mutex::new(Vec::new()),
            ask_trim: OnceLock::new(),
        }
    }

    /// Bytes the cache holds now (see the type).
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire).max(0) as usize
    }

    /// The bound (`SEARCH_CACHE_MAX_BYTES`).
    pub fn bound(&self) -> usize {
        self.bound
    }

    /// Whether the cache holds more than its bound.
    pub fn over(&self) -> bool {
        self.held() > self.bound
    }

    /// Sets what a growth past the bound calls to have the actor trim.
    pub(super) fn on_over(&self, ask_trim: impl Fn() + Send + Sync + 'static) {
        let _ = self.ask_trim.set(Box::new(ask_trim));
    }

    /// The actor is about to trim: a growth from now on asks again. Returns the
    /// ids of the entries that grew larger than the bound on their own.
    pub(super) fn trim_started(&self) -> Vec<u64> {
        self.trim_asked.store(false, Ordering::Release);
        std::mem::take(&mut *self.too_big.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn add(&self, bytes: isize) {
        self.held.fetch_add(bytes, Ordering::AcqRel);
    }

    /// Held entry `id` grew by `bytes`, to `now`.
    fn grew(&self, bytes: usize, now: usize, id: u64) {
        self.add(bytes as isize);
        if now > self.bound {
            self.too_big
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(id);
        }
        if self.over() && !self.trim_asked.swap(true, Ordering::AcqRel) {
            if let Some(ask) = self.ask_trim.get() {
                ask();
            }
        }
    }

    fn shrank(&self, bytes: usize) {
        self.add(-(bytes as isize));
    }
}

impl std::fmt::Debug for CacheBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheBytes")
            .field("held", &self.held())
            .field("bound", &self.bound)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        let result = SearchResult {
            rows: vec![
                ScoredRow {
                    page_id: 1,
                    score: 90.0,
                    raw: 1.0,
                    title_words: 1,
                };
                4
            ],
            total: 4,
            ..SearchResult::default()
        };
        Entry::new(CachedResult::new(Arc::new(result), "kube".into(), 2))
    }

    fn key() -> CacheKey {
        CacheKey {
            match_copy: "kube".into(),
            fingerprint: Fingerprint([0; 32]),
        }
    }

    #[test]
    fn growth_counts_in_the_cache_only_while_it_holds_the_entry() {
        let cache = Arc::new(CacheBytes::new(1 << 20));
        let entry = entry();
        let base = entry.bytes();
        assert!(base > 4 * size_of::<ScoredRow>(), "rows counted: {base}");
        entry.grew(100);
        assert_eq!(cache.held(), 0, "not stored yet");
        let held = entry.hold(&key(), 0, &cache);
        assert_eq!(held, entry.bytes());
        assert!(held >= base + 100 + 2 * key().bytes(), "key counted twice");
        assert_eq!(cache.held(), held);
        entry.grew(50);
        entry.shrank(20);
        assert_eq!(cache.held(), held + 30);
        assert_eq!(entry.bytes(), held + 30);
        entry.release();
        assert_eq!(cache.held(), 0);
        entry.grew(1000);
        assert_eq!(cache.held(), 0, "an evicted entry no longer counts");
    }

    #[test]
    fn marks_made_on_first_view_are_counted_once() {
        let entry = entry();
        let before = entry.bytes();
        let marks = entry.result.marks(2, |_| Some("Kubernetes cluster"));
        assert_eq!(marks.len(), 2);
        let grown = entry.bytes() - before;
        assert!(grown >= 2 * size_of::<Marks>(), "{grown}");
        entry.result.marks(2, |_| panic!("marked twice"));
        assert_eq!(entry.bytes() - before, grown);
    }

    #[test]
    fn growth_past_the_bound_asks_for_one_trim_until_it_starts() {
        let cache = Arc::new(CacheBytes::new(10));
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = asked.clone();
        cache.on_over(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        let entry = entry();
        entry.hold(&key(), 0, &cache);
        assert_eq!(asked.load(Ordering::SeqCst), 0, "storing never asks");
        entry.grew(1);
        entry.grew(1);
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        assert_eq!(
            cache.trim_started(),
            [0, 0],
            "the entry is larger than the bound"
        );
        entry.grew(1);
        assert_eq!(asked.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn growth_racing_an_eviction_leaves_the_total_exact() {
        for _ in 0..200 {
            let cache = Arc::new(CacheBytes::new(usize::MAX >> 2));
            let entry = Arc::new(entry());
            entry.hold(&key(), 0, &cache);
            let grower = {
                let entry = entry.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        entry.grew(7);
                    }
                })
            };
            entry.release();
            grower.join().unwrap();
            assert_eq!(cache.held(), 0);
        }
    }
}
