//! The tera templates, compiled into the binary so a deployed server needs no files
//! beside it. Autoescaping is on for every template (their names end in `.html`).
//! The `thousands` filter writes a whole number with comma separators (`1,274`).

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
];

/// Rendered pages that many requests share (a refusal page, by its query, theme and
/// seconds left), keyed by what they depend on; the least recently used go first.
pub struct PageCache {
    pages: std::sync::Mutex<hashlink::LruCache<String, actix_web::web::Bytes>>,
}

impl PageCache {
    /// A cache of at most `capacity` pages (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            pages: std::sync::Mutex::new(hashlink::LruCache::new(capacity.max(1))),
        }
    }

    /// The page kept for `key`, or the one `render` makes (kept when it succeeds).
    pub fn get_or_render<E>(
        &self,
        key: String,
        render: impl FnOnce() -> Result<String, E>,
    ) -> Result<actix_web::web::Bytes, E> {
        if let Some(body) = self
            .pages
            .lock()
            .ok()
            .and_then(|mut p| p.get(&key).cloned())
        {
            return Ok(body);
        }
        let body = actix_web::web::Bytes::from(render()?);
        if let Ok(mut pages) = self.pages.lock() {
            pages.insert(key, body.clone());
        }
        Ok(body)
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
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
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
    match value.as_i64() {
        Some(n) => Ok(Value::String(thousands(n))),
        None => Err(tera::Error::msg(format!(
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
    }

    #[test]
    fn times_render_in_utc_to_the_minute() {
        assert_eq!(format_time(0), "1970-01-01 00:00 UTC");
        assert_eq!(format_time(1_800_000_059), "2027-01-15 08:00 UTC");
    }
}
