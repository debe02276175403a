//! Page domain types that parse instead of validate: once a value exists, it obeys
//! SPEC §3's rules, so the database layer and the routes never re-check them.

use std::fmt;

use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

/// Longest slug, in ASCII chars (SPEC §3: `[a-z0-9][a-z0-9.+-]{0,79}`).
pub const SLUG_MAX: usize = 80;
/// Longest title in Unicode scalar values, after trimming.
pub const TITLE_MAX: usize = 200;
/// Largest body in bytes (256 KiB).
pub const BODY_MAX_BYTES: usize = 256 * 1024;

/// Why a page field was refused. The message names the field and is safe to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageFieldError {
    #[error("slug must match [a-z0-9][a-z0-9.+-]{{0,79}}")]
    Slug,
    #[error("title must not be empty")]
    TitleEmpty,
    #[error("title must be at most 200 characters (has {0})")]
    TitleTooLong(usize),
    #[error("title must hold at least one visible letter, digit, punctuation mark or symbol")]
    TitleInvisible,
    #[error("body must be at most 262144 bytes (has {0})")]
    BodyTooLarge(usize),
}

impl PageFieldError {
    /// The JSON field this error is about: `slug`, `title` or `body`.
    pub fn field(&self) -> &'static str {
        match self {
            PageFieldError::Slug => "slug",
            PageFieldError::TitleEmpty
            | PageFieldError::TitleTooLong(_)
            | PageFieldError::TitleInvisible => "title",
            PageFieldError::BodyTooLarge(_) => "body",
        }
    }
}

/// The fields of a page to be written, parsed. Import and the API both build it here,
/// so the two cannot disagree on what a valid page is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPage {
    /// `None` when the writer gave no slug: the caller derives one from the title
    /// (import upserts by [`PageSlug::from_title`]; the API takes the first free one).
    pub slug: Option<PageSlug>,
    pub title: PageTitle,
    /// Empty when absent.
    pub body: PageBody,
}

impl NewPage {
    /// Errors: the first field that breaks its rule, checked in the order slug,
    /// title, body.
    pub fn parse(
        slug: Option<&str>,
        title: &str,
        body: Option<String>,
    ) -> Result<Self, PageFieldError> {
        let slug = slug.map(PageSlug::parse).transpose()?;
        let title = PageTitle::parse(title)?;
        let body = PageBody::parse(body.unwrap_or_default())?;
        Ok(Self { slug, title, body })
    }
}

/// A page's URL name: 1–80 chars of `[a-z0-9.+-]`, starting with `[a-z0-9]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageSlug(String);

impl PageSlug {
    /// Errors: [`PageFieldError::Slug`] when `s` breaks the pattern.
    pub fn parse(s: &str) -> Result<Self, PageFieldError> {
        let bytes = s.as_bytes();
        let valid = !bytes.is_empty()
            && bytes.len() <= SLUG_MAX
            && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
            && bytes
                .iter()
                .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b".+-".contains(&b));
        if valid {
            Ok(Self(s.to_owned()))
        } else {
            Err(PageFieldError::Slug)
        }
    }

    /// Derives a slug from a title: transliterated to ASCII ([`deunicode`]: `Straße`
    /// → `strasse`, `Café` → `cafe`, `日本語` → `ri ben yu`), ASCII letters and digits
    /// lowercased, every other run of chars one `-`, at most 80 chars. A title with
    /// nothing left gives `page`.
    pub fn from_title(title: &str) -> Self {
        let ascii = deunicode::deunicode(title);
        let mut out = String::with_capacity(ascii.len().min(SLUG_MAX));
        let mut dash = false;
        for c in ascii.chars() {
            if c.is_ascii_alphanumeric() {
                if dash && !out.is_empty() {
                    out.push('-');
                }
                dash = false;
                out.push(c.to_ascii_lowercase());
            } else {
                dash = true;
            }
            if out.len() >= SLUG_MAX {
                break;
            }
        }
        out.truncate(SLUG_MAX);
        while out.ends_with('-') {
            out.pop();
        }
        if out.is_empty() {
            out.push_str("page");
        }
        Self(out)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PageSlug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A trimmed title of 1–200 Unicode scalar values, with at least one visible
/// character and no invisible ones ([`crate::invisible`]: no tag characters, bidi
/// controls or zero-width characters, joiners and variation selectors only where a
/// script needs them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageTitle(String);

impl PageTitle {
    /// The chars [`crate::invisible::is_dropped`] names (bidi controls, tag
    /// characters, zero-width spaces…) are removed first: they could make a title
    /// display as something else or carry words no reader sees. Then the title is
    /// trimmed and counted; then the joiners and variation selectors that no script
    /// needs there are removed ([`crate::invisible::strip`]) and it is trimmed again.
    /// The count comes before that last step so that it is what the OpenAPI
    /// pattern counts (`types::PATTERNS.title_length`).
    ///
    /// Errors: [`PageFieldError::TitleEmpty`] when nothing is left;
    /// [`PageFieldError::TitleTooLong`] over [`TITLE_MAX`] chars;
    /// [`PageFieldError::TitleInvisible`] when no char is visible (only zero-width
    /// joiners, controls, fillers, combining marks…; see [`is_visible`]).
    pub fn parse(s: &str) -> Result<Self, PageFieldError> {
        let kept: String = s
            .chars()
            .filter(|&c| !crate::invisible::is_dropped(c))
            .collect();
        let t = kept.trim();
        let n = t.chars().count();
        if n == 0 {
            Err(PageFieldError::TitleEmpty)
        } else if n > TITLE_MAX {
            Err(PageFieldError::TitleTooLong(n))
        } else if !t.chars().any(is_visible) {
            Err(PageFieldError::TitleInvisible)
        } else {
            Ok(Self(crate::invisible::strip(t).trim().to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The bidi embedding, override and isolate controls: U+202A–U+202E and
/// U+2066–U+2069.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Whether `c` shows as something: a letter, number, punctuation mark or symbol
/// (Unicode general categories L, N, P, S), except the few of those that render as
/// nothing (Hangul fillers, the blank Braille pattern). Separators (`Zs`…), controls
/// (`Cc`), format chars (`Cf`: zero-width space, soft hyphen, bidi marks), marks
/// alone (`M`), private-use and unassigned chars are not.
pub fn is_visible(c: char) -> bool {
    let shows = matches!(
        c.general_category_group(),
        GeneralCategoryGroup::Letter
            | GeneralCategoryGroup::Number
            | GeneralCategoryGroup::Punctuation
            | GeneralCategoryGroup::Symbol
    );
    shows
        && !matches!(
            c,
            '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' | '\u{2800}'
        )
}

/// A body of at most [`BODY_MAX_BYTES`] bytes, kept exactly as given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PageBody(String);

impl PageBody {
    /// Errors: over [`BODY_MAX_BYTES`] bytes.
    pub fn parse(s: String) -> Result<Self, PageFieldError> {
        if s.len() > BODY_MAX_BYTES {
            Err(PageFieldError::BodyTooLarge(s.len()))
        } else {
            Ok(Self(s))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The one rule for a page number or page size in a URL (`page` on `/`,
/// `/api/pages` and `/search`, `per_page` on `/api/pages`), applied to the decoded
/// value: absent or empty (a form's blank field) is `Ok(None)`, "not given";
/// otherwise ASCII digits only (leading zeros allowed), at least 1. A sign, a space
/// (which a form-encoded `+` becomes), a decimal point or anything else is refused.
/// A number too large for `u64` saturates to `u64::MAX`: it lies past any last page,
/// and the caller applies its own maximum.
///
/// Errors: [`NotAWholeNumber`] for anything but digits, and for 0.
pub fn parse_whole_number(text: Option<&str>) -> Result<Option<u64>, NotAWholeNumber> {
    let text = match text {
        None | Some("") => return Ok(None),
        Some(t) => t,
    };
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(NotAWholeNumber);
    }
    let n = text
        .bytes()
        .try_fold(0u64, |n, b| {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        })
        .unwrap_or(u64::MAX);
    if n == 0 {
        return Err(NotAWholeNumber);
    }
    Ok(Some(n))
}

/// A page number (or size) that is not a whole number from 1 ([`parse_whole_number`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a whole number from 1")]
pub struct NotAWholeNumber;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_the_spec_pattern() {
        for ok in ["0ad", "libc6-dev", "g++", "a.b", &"a".repeat(80)] {
            assert!(PageSlug::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", ".a", "A", "a b", "a_b", "é", &"a".repeat(81)] {
            assert!(PageSlug::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_slug_derived_from_a_title_is_itself_valid() {
        assert_eq!(
            PageSlug::from_title("Kubernetes Deployment Guide").as_str(),
            "kubernetes-deployment-guide"
        );
        assert_eq!(
            PageSlug::from_title("  Café — crème brûlée!  ").as_str(),
            "cafe-creme-brulee"
        );
        assert_eq!(PageSlug::from_title("日本語").as_str(), "ri-ben-yu");
        assert_eq!(
            PageSlug::from_title("Straße planning").as_str(),
            "strasse-planning"
        );
        assert_eq!(PageSlug::from_title("ﬁle ﬂow").as_str(), "file-flow");
        assert_eq!(PageSlug::from_title("!!! ---").as_str(), "page");
        let long = PageSlug::from_title(&"word ".repeat(40));
        assert!(PageSlug::parse(long.as_str()).is_ok());
    }

    #[test]
    fn titles_are_trimmed_and_counted_in_chars() {
        assert_eq!(PageTitle::parse("  hi  ").unwrap().as_str(), "hi");
        assert_eq!(PageTitle::parse("   "), Err(PageFieldError::TitleEmpty));
        assert!(PageTitle::parse(&"é".repeat(200)).is_ok());
        assert_eq!(
            PageTitle::parse(&"é".repeat(201)),
            Err(PageFieldError::TitleTooLong(201))
        );
    }

    #[test]
    fn a_title_needs_a_visible_char_and_loses_its_bidi_controls() {
        for invisible in [
            "\u{200B}\u{200B}",
            "\u{00AD}",
            "\u{0000}",
            "\u{0000}\u{0001}\u{200D}",
            "\u{3164}\u{3164}",
            "\u{2800}",
            "\u{0301}\u{0301}",
            "\u{FEFF}\u{2060}",
            "\u{200E}\u{200F}",
        ] {
            // Ignorable chars are removed (nothing is left), the others are kept
            // but show nothing.
            assert!(
                matches!(
                    PageTitle::parse(invisible),
                    Err(PageFieldError::TitleInvisible | PageFieldError::TitleEmpty)
                ),
                "{invisible:?}"
            );
        }
        assert_eq!(
            PageTitle::parse("\u{202E}\u{2066}  \u{2069}"),
            Err(PageFieldError::TitleEmpty)
        );
        assert_eq!(
            PageTitle::parse(" \u{202E}evil\u{202C}.exe \u{2067}")
                .unwrap()
                .as_str(),
            "evil.exe"
        );
        for ok in ["a", "7", "?", "€", "日本", "\u{200B}x", "é"] {
            assert!(PageTitle::parse(ok).is_ok(), "{ok:?}");
        }
    }

    #[test]
    fn a_title_loses_its_invisible_chars_and_is_counted_as_the_pattern_counts() {
        let tagged = "Guide\u{E0049}\u{E0067}\u{E006E}\u{200B} to\u{2060} \u{200E}pods";
        assert_eq!(PageTitle::parse(tagged).unwrap().as_str(), "Guide to pods");
        assert_eq!(
            PageTitle::parse("👩\u{200D}🚀 crew").unwrap().as_str(),
            "👩\u{200D}🚀 crew"
        );
        // A stray joiner at the end goes after trimming, and the space before it too.
        assert_eq!(PageTitle::parse("crew \u{200D}").unwrap().as_str(), "crew");
        // Joiners count until they are found stray (the pattern cannot see context).
        let long = format!("{}\u{200D}", "a".repeat(TITLE_MAX));
        assert_eq!(
            PageTitle::parse(&long),
            Err(PageFieldError::TitleTooLong(201))
        );
        let dropped = format!("{}\u{200B}", "a".repeat(TITLE_MAX));
        assert!(PageTitle::parse(&dropped).is_ok());
    }

    #[test]
    fn bodies_over_256_kib_are_refused() {
        assert!(PageBody::parse("x".repeat(BODY_MAX_BYTES)).is_ok());
        assert!(PageBody::parse("x".repeat(BODY_MAX_BYTES + 1)).is_err());
    }

    #[test]
    fn a_page_number_is_ascii_digits_from_1_and_blank_is_not_given() {
        assert_eq!(parse_whole_number(None), Ok(None));
        assert_eq!(parse_whole_number(Some("")), Ok(None));
        assert_eq!(parse_whole_number(Some("1")), Ok(Some(1)));
        assert_eq!(parse_whole_number(Some("007")), Ok(Some(7)));
        assert_eq!(
            parse_whole_number(Some("99999999999999999999999")),
            Ok(Some(u64::MAX))
        );
        for bad in [
            "+1", " 1", "1 ", "-1", "0", "00", "1.0", "1e3", "x", "١", "１",
        ] {
            assert_eq!(
                parse_whole_number(Some(bad)),
                Err(NotAWholeNumber),
                "{bad:?}"
            );
        }
    }
}
