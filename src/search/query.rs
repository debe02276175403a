//! Gate 1: validation of `q`, which spends nothing (SPEC §5).
//!
//! The raw query string is parsed here rather than by a generic extractor, because
//! the contract distinguishes cases such extractors blur: `q` given twice, percent
//! escapes that do not decode to UTF-8, and a missing `q` versus a blank one.
//!
//! `page` (which page of results, from 1) is read here too: a `page` that is not a
//! whole number from 1 is a 400 with the form kept, and `page` given twice is a 400
//! like `q` given twice. Neither spends anything.

use percent_encoding::percent_decode;

use super::normalize::{char_len, normalize};

/// Longest raw or normalized query, in Unicode scalar values.
pub const QUERY_MAX: usize = 64;
/// Shortest normalized query worth a scan.
pub const QUERY_MIN: usize = 2;

/// A query that passed gate 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    display: String,
    match_copy: String,
    page: usize,
}

impl SearchQuery {
    /// The decoded `q`, trimmed; escape it wherever it is shown.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// The normalized copy that is scored and keyed in the cache (2–64 chars).
    pub fn match_copy(&self) -> &str {
        &self.match_copy
    }

    /// The page of results asked for, from 1 (1 when `page` is absent or empty);
    /// it may lie past the last page, which only the answer knows.
    pub fn page(&self) -> usize {
        self.page
    }
}

/// Every way gate 1 can end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate1 {
    /// Valid: go on to gate 2.
    Valid(SearchQuery),
    /// `q` missing, empty or whitespace only: 303 to `/`.
    Missing,
    /// `q` is not valid percent-encoded UTF-8, or given twice: 400, form empty.
    Malformed(&'static str),
    /// Raw `q` over 64 chars: 400 with the form kept (display copy given).
    TooLong { display: String },
    /// Normalized under 2 chars: 200 "enter at least 2 characters", no scan.
    TooShort { display: String },
    /// Normalized over 64 chars (NFKC can expand): 400 with the form kept.
    NormalizedTooLong { display: String },
    /// A valid `q` with a `page` that is not a whole number from 1: 400 with the
    /// form kept.
    BadPage { display: String },
}

impl SearchQuery {
    /// Runs gate 1 on a raw URL query string (the part after `?`, still encoded).
    pub fn parse(raw_query_string: &str) -> Gate1 {
        let mut found: Option<&str> = None;
        let mut page: Option<&str> = None;
        for pair in raw_query_string.split('&') {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            match decode(name).as_deref() {
                Some("q") => {
                    if found.is_some() {
                        return Gate1::Malformed("q was given more than once");
                    }
                    found = Some(value);
                }
                Some("page") => {
                    if page.is_some() {
                        return Gate1::Malformed("page was given more than once");
                    }
                    page = Some(value);
                }
                _ => {}
            }
        }
        let Some(encoded) = found else {
            return Gate1::Missing;
        };
        let Some(raw) = decode(encoded) else {
            return Gate1::Malformed("q is not valid percent-encoded UTF-8");
        };
        let display = raw.trim().to_owned();
        if display.is_empty() {
            return Gate1::Missing;
        }
        if char_len(&raw) > QUERY_MAX {
            return Gate1::TooLong { display };
        }
        let match_copy = normalize(&display);
        let n = char_len(&match_copy);
        if n < QUERY_MIN {
            Gate1::TooShort { display }
        } else if n > QUERY_MAX {
            Gate1::NormalizedTooLong { display }
        } else {
            match page.map_or(Some(1), parse_page) {
                Some(page) => Gate1::Valid(SearchQuery {
                    display,
                    match_copy,
                    page,
                }),
                None => Gate1::BadPage { display },
            }
        }
    }
}

/// A `page` value, still encoded: decoded, then [`crate::domain::parse_whole_number`],
/// the one rule every paged route shares (empty is page 1). A number too large for
/// `usize` is past any last page, so it saturates rather than being refused.
fn parse_page(encoded: &str) -> Option<usize> {
    let raw = decode(encoded)?;
    match crate::domain::parse_whole_number(Some(&raw)).ok()? {
        None => Some(1),
        Some(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
    }
}

/// Decodes one `application/x-www-form-urlencoded` component: `+` is a space, `%XX`
/// a byte. `None` when a `%` is not followed by two hex digits or the bytes are not
/// UTF-8.
fn decode(component: &str) -> Option<String> {
    let bytes = component.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
        }
    }
    let plus_as_space = component.replace('+', " ");
    percent_decode(plus_as_space.as_bytes())
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The query string `q=<text>`, `text` percent-encoded.
    fn query_string(text: &str) -> String {
        let encoded =
            percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC);
        format!("q={encoded}")
    }

    fn valid(raw: &str) -> SearchQuery {
        match SearchQuery::parse(raw) {
            Gate1::Valid(q) => q,
            other => panic!("{raw}: {other:?}"),
        }
    }

    #[test]
    fn the_gate_1_table_holds() {
        assert_eq!(SearchQuery::parse(""), Gate1::Missing);
        assert_eq!(SearchQuery::parse("page=2"), Gate1::Missing);
        assert_eq!(SearchQuery::parse("q="), Gate1::Missing);
        assert_eq!(SearchQuery::parse("q"), Gate1::Missing);
        assert_eq!(SearchQuery::parse("q=+%20%09"), Gate1::Missing);
        assert!(matches!(SearchQuery::parse("q=a&q=b"), Gate1::Malformed(_)));
        assert!(matches!(
            SearchQuery::parse("q=%FF%FE"),
            Gate1::Malformed(_)
        ));
        assert!(matches!(SearchQuery::parse("q=%zz"), Gate1::Malformed(_)));
        assert!(matches!(SearchQuery::parse("q=abc%2"), Gate1::Malformed(_)));
        for short in ["q=k", "q=!!", "q=-a-"] {
            assert!(
                matches!(SearchQuery::parse(short), Gate1::TooShort { .. }),
                "{short}"
            );
        }
        let long = format!("q={}", "a".repeat(65));
        assert!(matches!(SearchQuery::parse(&long), Gate1::TooLong { .. }));
        let max = format!("q={}", "a".repeat(64));
        assert_eq!(valid(&max).match_copy().len(), 64);
    }

    #[test]
    fn page_is_a_whole_number_from_1_given_at_most_once() {
        assert_eq!(valid("q=ab").page(), 1);
        assert_eq!(valid("q=ab&page=").page(), 1);
        assert_eq!(valid("page=3&q=ab").page(), 3);
        assert_eq!(valid("q=ab&page=%32").page(), 2);
        assert_eq!(valid("q=ab&page=007").page(), 7);
        assert_eq!(
            valid("q=ab&page=99999999999999999999999").page(),
            usize::MAX
        );
        for bad in ["0", "-1", "+2", "1.5", "two", "2%20", "%FF", " 2"] {
            assert!(
                matches!(
                    SearchQuery::parse(&format!("q=ab&page={bad}")),
                    Gate1::BadPage { .. }
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            SearchQuery::parse("q=ab&page=1&page=2"),
            Gate1::Malformed(_)
        ));
        // Page twice is refused even with q missing; a bad page does not hide a
        // missing or too short q.
        assert!(matches!(
            SearchQuery::parse("page=1&page=1"),
            Gate1::Malformed(_)
        ));
        assert_eq!(SearchQuery::parse("page=x"), Gate1::Missing);
        assert!(matches!(
            SearchQuery::parse("q=k&page=x"),
            Gate1::TooShort { .. }
        ));
    }

    #[test]
    fn a_query_that_nfkc_expands_past_64_chars_is_refused() {
        // U+FDFA is one char raw and 18 after NFKC; four of them make 75 (with spaces).
        assert!(matches!(
            SearchQuery::parse(&query_string(&"\u{FDFA}".repeat(4))),
            Gate1::NormalizedTooLong { .. }
        ));
    }

    #[test]
    fn the_display_copy_is_trimmed_and_the_match_copy_normalized() {
        let q = valid("q=+Kubrenetes%21++Guide+&page=3");
        assert_eq!(q.display(), "Kubrenetes!  Guide");
        assert_eq!(q.match_copy(), "kubrenetes guide");
    }

    #[test]
    fn multibyte_queries_count_chars_not_bytes() {
        assert!(matches!(
            SearchQuery::parse(&query_string(&"é".repeat(64))),
            Gate1::Valid(_)
        ));
    }
}
