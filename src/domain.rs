//! Page domain types that parse instead of validate: once a value exists, it obeys
//! SPEC §3's rules, so the database layer and the routes never re-check them.

use std::fmt;

use unicode_normalization::UnicodeNormalization;

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
    #[error("body must be at most 262144 bytes (has {0})")]
    BodyTooLarge(usize),
}

impl PageFieldError {
    /// The JSON field this error is about: `slug`, `title` or `body`.
    pub fn field(&self) -> &'static str {
        match self {
            PageFieldError::Slug => "slug",
            PageFieldError::TitleEmpty | PageFieldError::TitleTooLong(_) => "title",
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

    /// Derives a slug from a title: accents stripped (NFKD), ASCII letters and digits
    /// lowercased, every other run of chars one `-`, at most 80 chars. A title with no
    /// ASCII letter or digit gives `page`.
    pub fn from_title(title: &str) -> Self {
        let mut out = String::with_capacity(title.len().min(SLUG_MAX));
        let mut dash = false;
        for c in title.nfkd() {
            if c.is_ascii_alphanumeric() {
                if dash && !out.is_empty() {
                    out.push('-');
                }
                dash = false;
                out.push(c.to_ascii_lowercase());
            } else if !unicode_normalization::char::is_combining_mark(c) {
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

/// A trimmed title of 1–200 Unicode scalar values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageTitle(String);

impl PageTitle {
    /// Errors: empty after trimming, or over [`TITLE_MAX`] chars.
    pub fn parse(s: &str) -> Result<Self, PageFieldError> {
        let t = s.trim();
        let n = t.chars().count();
        if n == 0 {
            Err(PageFieldError::TitleEmpty)
        } else if n > TITLE_MAX {
            Err(PageFieldError::TitleTooLong(n))
        } else {
            Ok(Self(t.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
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
        assert_eq!(PageSlug::from_title("日本語").as_str(), "page");
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
    fn bodies_over_256_kib_are_refused() {
        assert!(PageBody::parse("x".repeat(BODY_MAX_BYTES)).is_ok());
        assert!(PageBody::parse("x".repeat(BODY_MAX_BYTES + 1)).is_err());
    }
}
