//! What the search answers rendered from one cache entry, kept for the next
//! answer from it: per page the HTML result table and the JSON `results` array
//! (each made once, by the first answer that needs it), and the few most recent
//! whole bodies by what else they depend on (page, query as typed, theme, cache
//! status…), so a repeated hit copies bytes.
//!
//! The routes own this; the cache only carries it: it is the entry's
//! [`Attachment`], so it lives exactly as long as the entry (dropped once the entry
//! is evicted and no answer holds it), and [`Attachment::bytes`] says what it
//! holds, for a byte bound on the cache to count. The key's fingerprint pins every
//! row's id and version, hence its slug, title and time, so a rendering stays right
//! for as long as the entry can be found.

use std::sync::{Mutex, OnceLock};

use actix_web::web::Bytes;

use crate::search::cache::{Attachment, Entry};
use crate::templates::PageKey;

/// Whole answers kept per entry (a few pages in a few variants).
const PAGES_PER_ENTRY: usize = 12;

/// The renderings of one entry; see the module docs.
#[derive(Debug)]
pub(super) struct Rendered {
    html_rows: Vec<OnceLock<String>>,
    json_rows: Vec<OnceLock<String>>,
    /// Whole answers already rendered from this entry, by what else they depend on;
    /// the few most recent.
    pages: Mutex<Vec<(PageKey, Bytes)>>,
}

impl Rendered {
    /// The renderings of `entry`, made empty on first use.
    pub(super) fn of(entry: &Entry) -> &Self {
        entry.attachment(|| Self::new(entry.result.pages()))
    }

    /// Nothing rendered yet for an entry of `pages` pages.
    fn new(pages: usize) -> Self {
        Self {
            html_rows: (0..pages).map(|_| OnceLock::new()).collect(),
            json_rows: (0..pages).map(|_| OnceLock::new()).collect(),
            pages: Mutex::new(Vec::new()),
        }
    }

    /// The answer body rendered for `variant`, rendered by `render` (and kept) on
    /// first use; an `Err` of `render` is returned as is and nothing is kept.
    pub(super) fn page<E>(
        &self,
        variant: PageKey,
        render: impl FnOnce() -> Result<String, E>,
    ) -> Result<Bytes, E> {
        if let Ok(pages) = self.pages.lock() {
            if let Some((_, body)) = pages.iter().find(|(v, _)| *v == variant) {
                return Ok(body.clone());
            }
        }
        let body = Bytes::from(render()?);
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
    pub(super) fn html_rows(&self, page: usize, render: impl FnOnce() -> String) -> &str {
        match page.checked_sub(1).and_then(|p| self.html_rows.get(p)) {
            Some(cell) => cell.get_or_init(render),
            None => "",
        }
    }

    /// The JSON `results` array of page `page`, rendered by `render` on first use;
    /// `[]` past the last page.
    pub(super) fn json_rows(&self, page: usize, render: impl FnOnce() -> String) -> &str {
        match page.checked_sub(1).and_then(|p| self.json_rows.get(p)) {
            Some(cell) => cell.get_or_init(render),
            None => "[]",
        }
    }
}

impl Attachment for Rendered {
    /// The rendered rows and whole answers, with the keys of the answers.
    fn bytes(&self) -> usize {
        let rows: usize = self
            .html_rows
            .iter()
            .chain(&self.json_rows)
            .filter_map(OnceLock::get)
            .map(String::len)
            .sum();
        let pages: usize = self
            .pages
            .lock()
            .map(|pages| {
                pages
                    .iter()
                    .map(|(key, body)| key.heap_bytes() + body.len())
                    .sum()
            })
            .unwrap_or(0);
        rows + pages
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
                })
                .collect(),
            total: rows,
            truncated: false,
            highlights: Vec::new(),
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
        assert_eq!(entry.attached_bytes(), 0, "nothing rendered yet");
        let rendered = Rendered::of(&entry);
        let body = rendered
            .page(key(1), || Ok::<_, ()>("<p>answer</p>".into()))
            .unwrap();
        let again = rendered
            .page::<()>(key(1), || panic!("rendered twice"))
            .unwrap();
        assert_eq!(body, again);
        let page = "Kube".len() + "<p>answer</p>".len();
        assert_eq!(entry.attached_bytes(), page);

        assert_eq!(rendered.html_rows(1, || "<tr/>".into()), "<tr/>");
        assert_eq!(rendered.html_rows(1, || panic!("rendered twice")), "<tr/>");
        assert_eq!(rendered.json_rows(2, || "[{}]".into()), "[{}]");
        assert_eq!(rendered.html_rows(3, || panic!("past the last page")), "");
        assert_eq!(rendered.json_rows(3, || panic!("past the last page")), "[]");
        assert_eq!(entry.attached_bytes(), page + "<tr/>".len() + "[{}]".len());
        assert!(
            std::ptr::eq(Rendered::of(&entry), rendered),
            "one per entry"
        );
    }

    #[test]
    fn an_entry_keeps_the_most_recent_answers_only() {
        let entry = entry(1, 1);
        let rendered = Rendered::of(&entry);
        for n in 0..=PAGES_PER_ENTRY {
            rendered.page(key(n), || Ok::<_, ()>("x".into())).unwrap();
        }
        assert_eq!(entry.attached_bytes(), PAGES_PER_ENTRY * ("Kube".len() + 1));
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
