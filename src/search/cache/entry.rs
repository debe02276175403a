//! What the cache holds and is found by: [`CacheKey`] (match copy, corpus
//! fingerprint) and [`Entry`]: one immutable scored result ([`CachedResult`], cut
//! into pages) and the one [`Attachment`] the layer that answers from it keeps
//! beside it (the routes' renderings). Both the Cache actor ([`super`]) and the
//! view hits read ([`super::view`]) import them from here.
//!
//! The cache holds results only: it never renders, and it does not know what an
//! attachment is. It only guarantees that an attachment lives exactly as long as
//! its entry (dropped with it once evicted and no answer holds it any more) and
//! that its size can be asked ([`Entry::attached_bytes`]), so a byte bound on the
//! cache can count what each entry keeps alive, rendered variants included.

use std::any::Any;
use std::sync::{Arc, OnceLock};

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
}

impl CachedResult {
    /// The result of a scoring of `query` (a match copy), shown `page_size` rows a
    /// page (at least 1). The marks the scorer made for the first page are kept
    /// when they cover it.
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
}

/// What the layer answering from entries keeps beside one (for the routes: what
/// they rendered from it). Made on first use, dropped with the entry, and able to
/// say how many bytes it holds; the cache never looks inside.
pub trait Attachment: Any + Send + Sync {
    /// Bytes it holds now (the text and bodies it keeps, not its own small
    /// struct): what a byte bound on the cache counts for it.
    fn bytes(&self) -> usize;
}

/// One LRU entry: the [`CachedResult`] and its [`Attachment`], if one was made.
pub struct Entry {
    pub result: CachedResult,
    attached: OnceLock<Attached>,
}

/// An attachment, its type erased so that the cache need not know it, with the
/// function that sizes it (made where the type was known).
struct Attached {
    value: Box<dyn Any + Send + Sync>,
    bytes: fn(&(dyn Any + Send + Sync)) -> usize,
}

impl Entry {
    /// An entry of `result` with nothing attached yet.
    pub fn new(result: CachedResult) -> Self {
        Self {
            result,
            attached: OnceLock::new(),
        }
    }

    /// The attachment of this entry, made by `init` on first use (once, however
    /// many answers ask at the same time).
    ///
    /// Panics when the entry already carries an attachment of another type: one
    /// layer answers from a cache, so that is a programming error.
    pub fn attachment<T: Attachment>(&self, init: impl FnOnce() -> T) -> &T {
        let attached = self.attached.get_or_init(|| Attached {
            value: Box::new(init()),
            bytes: |value| value.downcast_ref::<T>().map_or(0, T::bytes),
        });
        attached
            .value
            .downcast_ref::<T>()
            .expect("an entry carries attachments of one type")
    }

    /// Bytes the attachment holds now; 0 before one is made.
    pub fn attached_bytes(&self) -> usize {
        self.attached
            .get()
            .map_or(0, |attached| (attached.bytes)(&*attached.value))
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("result", &self.result)
            .field("attached_bytes", &self.attached_bytes())
            .finish()
    }
}
