//! What the cache holds and is found by: [`CacheKey`] (match copy, corpus
//! fingerprint) and [`CachedResult`] (one immutable scored result, cut into pages).
//! Both the Cache actor ([`super`]) and the view hits read ([`super::view`]) import
//! them from here.

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
