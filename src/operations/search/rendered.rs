//! What the search answers rendered from one cache entry, kept for the next
//! answer from it: per page the HTML result table and the JSON `results` array
//! (each made once, by the first answer that needs it), and the few most recent
//! whole bodies by what else they depend on (page, query as typed, theme, cache
//! status…), so a repeated hit copies bytes.
//!
//! The search answers own this (the JSON one here, the HTML one in the routes);
//! the cache only carries it: it is the entry's attachment
//! ([`Entry::attachment`]), so it lives exactly as long as the entry (dropped once
//! the entry is evicted and no answer holds it), and every rendering kept is
//! counted in the entry's bytes when it is added and when it is dropped
//! ([`Entry::grew`], [`Entry::shrank`]), so the cache's byte bound
//! (`SEARCH_CACHE_MAX_BYTES`) counts it. Kept text is shrunk to its length first,
//! so what is counted is what is allocated. The key's fingerprint pins every row's
//! id and version, hence its slug, title and time, so a rendering stays right for
//! as long as the entry can be found.

use std::mem::size_of;
use std::sync::{Mutex, OnceLock};

use actix_web::web::Bytes;

use crate::search::cache::Entry;
use crate::templates::PageKey;

/// Whole answers kept per entry (a few pages in a few variants).
const PAGES_PER_ENTRY: usize = 12;

/// The renderings of one entry; see the module docs.
#[derive(Debug)]
struct Kept {
    html_rows: Vec<OnceLock<String>>,
    json_rows: Vec<OnceLock<String>>,
    /// Whole answers already rendered from this entry, by what else they depend on;
    /// the few most recent.
    pages: Mutex<Vec<(PageKey, Bytes)>>,
}

/// The renderings of one entry, as answers use them: what is kept, and the entry
/// its bytes are counted in.
#[derive(Clone, Copy)]
pub struct Rendered<'a> {
    kept: &'a Kept,
    entry: &'a Entry,
}

impl<'a> Rendered<'a> {
    /// The renderings of `entry`, made empty on first use.
    pub fn of(entry: &'a Entry) -> Self {
        let kept = entry.attachment(|| {
            let kept = Kept::new(entry.result.pages());
            entry.grew(kept.bytes());
            kept
        });
        Self { kept, entry }
    }

    /// The answer body rendered for `variant`, rendered by `render` (and kept) on
    /// first use; an `Err` of `render` is returned as is and nothing is kept.
    pub fn page<E>(
        &self,
        variant: PageKey,
        render: impl FnOnce() -> Result<String, E>,
    ) -> Result<Bytes, E> {
        if let Ok(pages) = self.kept.pages.lock() {
            if let Some((_, body)) = pages.iter().find(|(v, _)| *v == variant) {
                return Ok(body.clone());
            }
        }
        let mut body = render()?;
        body.shrink_to_fit();
        let body = Bytes::from(body);
        if let Ok(mut pages) = self.kept.pages.lock() {
            // Counted under the lock, so a body is counted before another answer
            // can drop it.
            if pages.len() >= PAGES_PER_ENTRY {
                let (key, old) = pages.remove(0);
                self.entry.shrank(page_bytes(&key, &old));
            }
            self.entry.grew(page_bytes(&variant, &body));
            pages.push((variant, body.clone()));
        }
        Ok(body)
    }

    /// The HTML rows of page `page`, rendered by `render` on first use; empty past
    /// the last page.
    pub fn html_rows(&self, page: usize, render: impl FnOnce() -> String) -> &'a str {
        match page.checked_sub(1).and_then(|p| self.kept.html_rows.get(p)) {
            Some(cell) => cell.get_or_init(|| self.counted(render())),
            None => "",
        }
    }

    /// The JSON `results` array of page `page`, rendered by `render` on first use;
    /// `[]` past the last page.
    pub fn json_rows(&self, page: usize, render: impl FnOnce() -> String) -> &'a str {
        match page.checked_sub(1).and_then(|p| self.kept.json_rows.get(p)) {
            Some(cell) => cell.get_or_init(|| self.counted(render())),
            None => "[]",
        }
    }

    /// `text`, shrunk to fit and counted in the entry (it is about to be kept).
    fn counted(&self, mut text: String) -> String {
        text.shrink_to_fit();
        self.entry.grew(text.capacity());
        text
    }
}

/// Bytes a kept whole answer takes beyond its place in the list (counted with
/// [`Kept`]): its key's text and its body.
fn page_bytes(key: &PageKey, body: &Bytes) -> usize {
    key.heap_bytes() + body.len()
}

impl Kept {
    /// Nothing rendered yet for an entry of `pages` pages.
    fn new(pages: usize) -> Self {
        Self {
            html_rows: (0..pages).map(|_| OnceLock::new()).collect(),
            json_rows: (0..pages).map(|_| OnceLock::new()).collect(),
            pages: Mutex::new(Vec::with_capacity(PAGES_PER_ENTRY)),
        }
    }

    /// Bytes it takes before anything is rendered: itself, the row cells and the
    /// list of whole answers (allocated for all it keeps, so it never grows).
    fn bytes(&self) -> usize {
        size_of::<Self>()
            + (self.html_rows.capacity() + self.json_rows.capacity())
                * size_of::<OnceLock<String>>()
            + PAGES_PER_ENTRY * size_of::<(PageKey, Bytes)>()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::search::cache::CachedResult;
    use crate::search::rank::{ScoredRow, SearchResult};

    fn entry(rows: usize, page_size: usize) -> Entry {
        let result = SearchResult {
            rows: (0..rows as i64)
                .map(|page_id| ScoredRow {
                    page_id,
                    score: 90.0,
                    raw: 1.0,
                    title_words: 1,
                })
                .collect(),
            total: rows,
            ..SearchResult::default()
        };
        Entry::new(CachedResult::new(
            Arc::new(result),
            "kube".into(),
            page_size,
        ))
    }

    fn key(page: usize) -> PageKey {
        PageKey::Json {
            page,
            display: "Kube".into(),
            cache: "hit",
        }
    }

    #[test]
    fn a_rendered_answer_is_reused_and_counted_with_its_entry() {
        let entry = entry(3, 2);
        let bare = entry.bytes();
        let rendered = Rendered::of(&entry);
        let empty = entry.bytes();
        assert!(empty > bare, "the cells and the answer list are counted");
        let body = rendered
            .page(key(1), || Ok::<_, ()>("<p>answer</p>".into()))
            .unwrap();
        let again = rendered
            .page::<()>(key(1), || panic!("rendered twice"))
            .unwrap();
        assert_eq!(body, again);
        let page = "Kube".len() + "<p>answer</p>".len();
        assert_eq!(entry.bytes(), empty + page);

        assert_eq!(rendered.html_rows(1, || "<tr/>".into()), "<tr/>");
        assert_eq!(rendered.html_rows(1, || panic!("rendered twice")), "<tr/>");
        let mut wide = String::with_capacity(1000);
        wide.push_str("[{}]");
        assert_eq!(rendered.json_rows(2, || wide), "[{}]");
        assert_eq!(rendered.html_rows(3, || panic!("past the last page")), "");
        assert_eq!(rendered.json_rows(3, || panic!("past the last page")), "[]");
        assert_eq!(
            entry.bytes(),
            empty + page + "<tr/>".len() + "[{}]".len(),
            "kept text is shrunk to its length and counted as that"
        );
        assert!(
            std::ptr::eq(Rendered::of(&entry).kept, rendered.kept),
            "one per entry"
        );
    }

    #[test]
    fn an_entry_keeps_the_most_recent_answers_only() {
        let entry = entry(1, 1);
        let rendered = Rendered::of(&entry);
        let empty = entry.bytes();
        for n in 0..=PAGES_PER_ENTRY {
            rendered.page(key(n), || Ok::<_, ()>("x".into())).unwrap();
        }
        assert_eq!(
            entry.bytes(),
            empty + PAGES_PER_ENTRY * ("Kube".len() + 1),
            "the dropped answer is no longer counted"
        );
        let rendered_again = std::cell::Cell::new(false);
        rendered
            .page::<()>(key(0), || {
                rendered_again.set(true);
                Ok("x".into())
            })
            .unwrap();
        assert!(rendered_again.get(), "the oldest answer was dropped");
    }
}
