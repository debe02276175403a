//! The tera templates, compiled into the binary so a deployed server needs no files
//! beside it. Autoescaping is on for every template (their names end in `.html`).
//! The `thousands` filter writes a whole number with comma separators (`1,274`).
//! Rendered pages are kept by one typed key, [`PageKey`].

use std::borrow::Cow;
use std::collections::HashMap;

use tera::{Tera, Value};

const TEMPLATES: &[(&str, &str)] = &[
    ("layout.html", include_str!("../templates/layout.html")),
    ("ledger.html", include_str!("../templates/ledger.html")),
    ("page.html", include_str!("../templates/page.html")),
    ("search.html", include_str!("../templates/search.html")),
    (
        "search_rows.html",
        include_str!("../templates/search_rows.html"),
    ),
    ("error.html", include_str!("../templates/error.html")),
    ("history.html", include_str!("../templates/history.html")),
    ("version.html", include_str!("../templates/version.html")),
];

/// A page rendered once with placeholders where the query and the return path
/// go, filled per request: the notice pages of `/search` (429, 503s, too short…)
/// differ between requests only by those two, and rendering the template was most
/// of a 503's time under load.
#[derive(Debug)]
pub struct Stencil {
    parts: Vec<Part>,
}

#[derive(Debug)]
enum Part {
    Text(String),
    Query,
    Back,
}

impl Stencil {
    /// What to render in place of the query (the template's `q`): text no
    /// template filter or HTML escaping changes.
    pub const QUERY: &'static str = "\u{E000}agent-pages:q\u{E000}";
    /// What to render in place of the return path (the template's `back`).
    pub const BACK: &'static str = "\u{E000}agent-pages:back\u{E000}";

    /// Cuts a page rendered with [`Self::QUERY`] and [`Self::BACK`] at them.
    /// `None` when the query never appears or a placeholder came out changed (a
    /// filter touched it): such a page must be rendered per request.
    pub fn cut(rendered: &str) -> Option<Self> {
        let mut parts = Vec::new();
        let mut rest = rendered;
        let mut queries = 0;
        while let Some(at) = rest.find('\u{E000}') {
            let (text, marked) = rest.split_at(at);
            parts.push(Part::Text(text.to_owned()));
            if let Some(after) = marked.strip_prefix(Self::QUERY) {
                parts.push(Part::Query);
                queries += 1;
                rest = after;
            } else if let Some(after) = marked.strip_prefix(Self::BACK) {
                parts.push(Part::Back);
                rest = after;
            } else {
                return None;
            }
        }
        parts.push(Part::Text(rest.to_owned()));
        (queries > 0).then_some(Self { parts })
    }

    /// The page for `query` and `back`, each HTML-escaped as the template would.
    pub fn fill(&self, query: &str, back: &str) -> String {
        let query = tera::escape_html(query);
        let back = tera::escape_html(back);
        let len = self
            .parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.len(),
                Part::Query => query.len(),
                Part::Back => back.len(),
            })
            .sum();
        let mut out = String::with_capacity(len);
        for part in &self.parts {
            out.push_str(match part {
                Part::Text(t) => t,
                Part::Query => &query,
                Part::Back => &back,
            });
        }
        out
    }
}

/// What a rendered search page depends on besides the data it is rendered from:
/// the one key of every store of rendered pages ([`StencilCache`], and the answers
/// the routes keep with a cache entry).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PageKey {
    /// An HTML page of results: its theme, the path and query it was asked at (its
    /// theme switch returns there), the page shown, the query as typed and the
    /// cache status it reports.
    Html {
        theme: &'static str,
        here: String,
        page: usize,
        display: String,
        cache: &'static str,
    },
    /// A JSON page of results: the page, the query as typed, the cache status.
    Json {
        page: usize,
        display: String,
        cache: &'static str,
    },
    /// A notice page's stencil: its theme and everything it shows besides the query
    /// and the return path (two outcomes may share a status but not their words).
    Notice {
        theme: &'static str,
        notice: &'static str,
        title: &'static str,
        message: Cow<'static, str>,
        retry_after: Option<i64>,
    },
}

impl PageKey {
    /// Bytes of text the key holds beyond its own size (for counting what a store
    /// of rendered pages keeps).
    pub fn heap_bytes(&self) -> usize {
        match self {
            PageKey::Html { here, display, .. } => here.len() + display.len(),
            PageKey::Json { display, .. } => display.len(),
            PageKey::Notice { message, .. } => match message {
                Cow::Owned(m) => m.len(),
                Cow::Borrowed(_) => 0,
            },
        }
    }
}

/// Stencils by what else their page depends on (a [`PageKey::Notice`]: theme,
/// outcome, seconds left); the least recently used go first.
pub struct StencilCache {
    stencils: std::sync::Mutex<hashlink::LruCache<PageKey, std::sync::Arc<Stencil>>>,
}

impl StencilCache {
    /// A cache of at most `capacity` stencils (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            stencils: std::sync::Mutex::new(hashlink::LruCache::new(capacity.max(1))),
        }
    }

    /// The stencil kept for `key`, or the one cut from what `render` makes (kept
    /// when it succeeds). `Ok(None)`: the page cannot be a stencil (see
    /// [`Stencil::cut`]); render it per request.
    pub fn get_or_cut<E>(
        &self,
        key: &PageKey,
        render: impl FnOnce() -> Result<String, E>,
    ) -> Result<Option<std::sync::Arc<Stencil>>, E> {
        if let Some(stencil) = self.lock().get(key).cloned() {
            return Ok(Some(stencil));
        }
        let Some(stencil) = Stencil::cut(&render()?).map(std::sync::Arc::new) else {
            return Ok(None);
        };
        self.lock().insert(key.clone(), stencil.clone());
        Ok(Some(stencil))
    }

    // An insert or a lookup cannot leave the LRU half-changed: a poisoned lock is
    // used as is.
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, hashlink::LruCache<PageKey, std::sync::Arc<Stencil>>> {
        self.stencils.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Parses every template. Errors: a template does not parse (a build defect).
pub fn load() -> Result<Tera, tera::Error> {
    let mut tera = Tera::default();
    tera.add_raw_templates(TEMPLATES.iter().copied())?;
    tera.register_filter("thousands", thousands_filter);
    Ok(tera)
}

/// `n` with a comma between each group of three digits: `1274` → `1,274`.
pub fn thousands(n: i64) -> String {
    grouped(n < 0, n.unsigned_abs())
}

/// `magnitude` with comma separators, after a `-` when `negative`.
fn grouped(negative: bool, magnitude: u64) -> String {
    let digits = magnitude.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if negative {
        out.push('-');
    }
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(d);
    }
    out
}

fn thousands_filter(value: &Value, _: &HashMap<String, Value>) -> tera::Result<Value> {
    // A page number past any last page can be larger than `i64::MAX`.
    match (value.as_i64(), value.as_u64()) {
        (Some(n), _) => Ok(Value::String(thousands(n))),
        (None, Some(n)) => Ok(Value::String(grouped(false, n))),
        (None, None) => Err(tera::Error::msg(format!(
            "thousands: {value} is not a whole number"
        ))),
    }
}

/// `unix` seconds as `2026-11-29 19:48 UTC`.
pub fn format_time(unix: i64) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
    time::OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| unix.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses() {
        load().unwrap();
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_274), "1,274");
        assert_eq!(thousands(63_672), "63,672");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(thousands(-12_345), "-12,345");
        assert_eq!(grouped(false, u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn times_render_in_utc_to_the_minute() {
        assert_eq!(format_time(0), "1970-01-01 00:00 UTC");
        assert_eq!(format_time(1_800_000_059), "2027-01-15 08:00 UTC");
    }
}
