//! HTTP preconditions on pages (RFC 9110 sections 8.8.3 and 13; issue 32 §2, §4): a page's
//! entity tag is its version, `"v{version}"`, strong (two answers with the same
//! version have the same title and body). `If-Match` on a write becomes the
//! write's expected version ([`crate::operations::pages::Conditions`]), which the
//! page store checks inside the write's transaction. `If-None-Match` and
//! `If-Modified-Since` on a read are [`Validators::respond`]'s: every conditional
//! read route builds its validators once it knows it would answer 200, and lets it
//! answer 304 or 200.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix_web::http::header::{self, HeaderMap, HeaderValue, HttpDate};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};

use crate::operations::error::ApiError;
use crate::operations::pages::Conditions;

/// One member of an `If-Match` / `If-None-Match` list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tag {
    Any,
    /// `weak` and the opaque text between the quotes.
    Entity {
        weak: bool,
        opaque: String,
    },
    /// Not an entity tag: matches nothing.
    Unreadable,
}

/// The members of every `name` header of `headers`, in order; `None` when there is
/// no such header.
fn tags(headers: &HeaderMap, name: header::HeaderName) -> Option<Vec<Tag>> {
    let mut values = headers.get_all(name).peekable();
    values.peek()?;
    let mut out = Vec::new();
    for value in values {
        let Ok(text) = value.to_str() else {
            out.push(Tag::Unreadable);
            continue;
        };
        let mut rest = text.trim();
        while !rest.is_empty() {
            rest = rest.trim_start_matches([',', ' ', '\t']);
            if rest.is_empty() {
                break;
            }
            if let Some(after) = rest.strip_prefix('*') {
                out.push(Tag::Any);
                rest = after;
                continue;
            }
            let (weak, quoted) = match rest.strip_prefix("W/") {
                Some(after) => (true, after),
                None => (false, rest),
            };
            let Some(inner) = quoted.strip_prefix('"') else {
                out.push(Tag::Unreadable);
                break;
            };
            let Some(end) = inner.find('"') else {
                out.push(Tag::Unreadable);
                break;
            };
            out.push(Tag::Entity {
                weak,
                opaque: inner[..end].to_owned(),
            });
            rest = &inner[end + 1..];
        }
    }
    Some(out)
}

/// The version an opaque tag names: `v7` → 7.
fn version_of(opaque: &str) -> Option<i64> {
    let digits = opaque.strip_prefix('v')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|v| *v >= 1)
}

/// The version `If-Match` asks a write to find: `None` without the header or
/// with `*`; the version of its one strong `"v{n}"` tag; `Some(0)`, which no page
/// is at, when no member can match (weak tags never match under the strong
/// comparison `If-Match` uses, nor do tags of another shape).
///
/// Errors: several different versions (one write checks one version), as a
/// validation error on `If-Match`.
pub fn expected_version(headers: &HeaderMap) -> Result<Option<i64>, ApiError> {
    let Some(tags) = tags(headers, header::IF_MATCH) else {
        return Ok(None);
    };
    if tags.contains(&Tag::Any) {
        return Ok(None);
    }
    let mut versions: Vec<i64> = tags
        .iter()
        .filter_map(|t| match t {
            Tag::Entity {
                weak: false,
                opaque,
            } => version_of(opaque),
            _ => None,
        })
        .collect();
    versions.sort_unstable();
    versions.dedup();
    match versions[..] {
        [] => Ok(Some(0)),
        [one] => Ok(Some(one)),
        _ => Err(ApiError::validation(
            "If-Match",
            "If-Match may name one version of the page (\"v7\") or *",
        )),
    }
}

/// The [`Conditions`] of the write `req` asks for: its `If-Match`.
pub fn conditions(req: &HttpRequest) -> Result<Conditions, ApiError> {
    Ok(Conditions {
        expected_version: expected_version(req.headers())?,
        ..Conditions::default()
    })
}

/// What a conditional read compares (RFC 9110 section 8.8) and the caching headers that go
/// with it, the same on its 200 and its 304: `ETag`, `Last-Modified` (when the answer
/// has a modification time), `Cache-Control` and `Vary`.
///
/// Build them only where the route would answer 200 (after the same visibility
/// checks, PIN checks and budgets), so a 304 says nothing a 200 would not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validators {
    /// The entity tag's opaque text, without quotes: `v7`.
    opaque: String,
    /// Unix seconds; `None` when the answer has no modification time to offer.
    last_modified: Option<i64>,
    cache_control: &'static str,
    vary: Option<&'static str>,
}

/// Every conditional read may be stored, but only reused after asking again
/// (RFC 9111 section 5.2.2.4): a page may change any second, and a 304 is cheap.
const REVALIDATE: &str = "no-cache";
/// [`REVALIDATE`] for an answer that needed the page's PIN: no shared cache keeps it.
const REVALIDATE_PRIVATE: &str = "private, no-cache";

impl Validators {
    /// The validators of an answer whose content is determined by `opaque` (the
    /// entity tag without its quotes, `v7`) and last changed at `last_modified`
    /// (unix seconds, if known), as the app's clock says now (`now`, unix seconds):
    /// a `Last-Modified` after `now` (another replica's clock ahead of this one's)
    /// is sent as `now`, never later than the answer's `Date` (RFC 9110 section 8.8.2.1).
    pub fn new(opaque: impl Into<String>, last_modified: Option<i64>, now: i64) -> Self {
        Self {
            opaque: opaque.into(),
            last_modified: last_modified.map(|t| t.min(now)),
            cache_control: REVALIDATE,
            vary: None,
        }
    }

    /// [`Self::new`] for version `version` of a page: `"v{version}"`.
    pub fn version(version: i64, last_modified: Option<i64>, now: i64) -> Self {
        Self::new(format!("v{version}"), last_modified, now)
    }

    /// [`Self::new`] for one page of a page's history, `per_page` rows a page, whose
    /// newest kept version is `newest` (`(version, created_at)`):
    /// `"v{newest}-p{page}-n{per_page}"` (`v0` when none is kept), `Last-Modified`
    /// the newest version's time. Every write adds a newest version and only a write
    /// prunes, so the newest version names the whole kept history, and with it every
    /// page of the list; the paging in the tag keeps one page's tag from matching
    /// another page's.
    pub fn history(newest: Option<(i64, i64)>, page: i64, per_page: i64, now: i64) -> Self {
        let (version, at) = newest.map_or((0, None), |(v, at)| (v, Some(at)));
        Self::new(format!("v{version}-p{page}-n{per_page}"), at, now)
    }

    /// [`Self::new`] for version `version` of a page shown with a diff to `previous`,
    /// the kept version before it: `"v{version}-after-v{previous}"`, or `"v{version}"`
    /// with nothing before it. A version never changes, but its diff does when the
    /// version before it is pruned: the tag changes then, and `Last-Modified` (the
    /// version's time, `created_at`) is left out once a version after the first has
    /// nothing before it, since when that happened is not kept.
    pub fn version_with_diff(
        version: i64,
        previous: Option<i64>,
        created_at: i64,
        now: i64,
    ) -> Self {
        match previous {
            Some(p) => Self::new(format!("v{version}-after-v{p}"), Some(created_at), now),
            None if version == 1 => Self::version(version, Some(created_at), now),
            None => Self::version(version, None, now),
        }
    }

    /// For an HTML answer: it differs by the visitor's `theme` (the `theme` cookie
    /// as the route read it: `"dark"`, `"light"` or `"auto"`), so the tag names a
    /// chosen theme (`"v7-dark"`; `"v7"` without a choice) and `Vary: Cookie` tells
    /// caches.
    pub fn html(mut self, theme: &str) -> Self {
        if theme != "auto" {
            self.opaque = format!("{}-{theme}", self.opaque);
        }
        self.vary = Some(match self.vary {
            Some(_) => "Cookie, X-Page-Pin",
            None => "Cookie",
        });
        self
    }

    /// For a history answer, which a gone page gives only for its PIN
    /// (`X-Page-Pin`): `Vary: X-Page-Pin`, and `private` when the request sent one.
    pub fn pin_gated(mut self, req: &HttpRequest) -> Self {
        if req
            .headers()
            .contains_key(crate::operations::pin_check::PIN_HEADER)
        {
            self.cache_control = REVALIDATE_PRIVATE;
        }
        self.vary = Some(match self.vary {
            Some(_) => "Cookie, X-Page-Pin",
            None => "X-Page-Pin",
        });
        self
    }

    /// The `ETag` value: `"v7"`.
    pub fn etag(&self) -> String {
        format!("\"{}\"", self.opaque)
    }

    /// Whether `headers` say the client holds this answer already (RFC 9110 section 13.2.2
    /// steps 3 and 4 for a GET or HEAD): `If-None-Match` when present (weak
    /// comparison; `*` matches, since the answer exists), else `If-Modified-Since`
    /// when it is one valid HTTP-date at or after `Last-Modified` (one-second
    /// resolution), else no.
    pub fn fresh(&self, headers: &HeaderMap) -> bool {
        if let Some(tags) = tags(headers, header::IF_NONE_MATCH) {
            return tags.iter().any(|tag| match tag {
                Tag::Any => true,
                Tag::Entity { opaque, .. } => *opaque == self.opaque,
                Tag::Unreadable => false,
            });
        }
        let Some(last_modified) = self.last_modified else {
            return false;
        };
        if_modified_since(headers).is_some_and(|since| last_modified <= since)
    }

    /// `response` with these headers, when it is a 200 (an error page built on the
    /// way, a template failing, keeps its own).
    pub fn stamp(&self, mut response: HttpResponse) -> HttpResponse {
        if response.status() == StatusCode::OK {
            self.insert(response.headers_mut());
        }
        response
    }

    /// 304 with these headers and no body when `req` says the client holds this
    /// answer ([`Self::fresh`]), else the 200 `build` makes, with these headers.
    /// `build` runs only for the 200: a 304 renders nothing.
    pub async fn respond<F>(&self, req: &HttpRequest, build: impl FnOnce() -> F) -> HttpResponse
    where
        F: Future<Output = HttpResponse>,
    {
        if self.fresh(req.headers()) {
            let mut response = HttpResponse::NotModified().finish();
            self.insert(response.headers_mut());
            return response;
        }
        self.stamp(build().await)
    }

    /// [`Self::respond`] with `body` as the 200's JSON.
    pub async fn respond_json(
        &self,
        req: &HttpRequest,
        body: impl serde::Serialize,
    ) -> HttpResponse {
        self.respond(req, || async { HttpResponse::Ok().json(body) })
            .await
    }

    fn insert(&self, headers: &mut HeaderMap) {
        let value =
            |text: &str| HeaderValue::from_str(text).expect("a validator is a header value");
        headers.insert(header::ETAG, value(&self.etag()));
        if let Some(t) = self.last_modified {
            let at = UNIX_EPOCH + Duration::from_secs(u64::try_from(t).unwrap_or(0));
            headers.insert(
                header::LAST_MODIFIED,
                value(&HttpDate::from(at).to_string()),
            );
        }
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static(self.cache_control),
        );
        if let Some(vary) = self.vary {
            headers.insert(header::VARY, HeaderValue::from_static(vary));
        }
    }
}

/// The one `If-Modified-Since` date of `headers`, in unix seconds; `None` when there
/// is none, several, or one that is not an HTTP-date (any of the three forms of RFC
/// 9110 section 5.6.7), which RFC 9110 section 13.1.3 says to ignore.
fn if_modified_since(headers: &HeaderMap) -> Option<i64> {
    let mut values = headers.get_all(header::IF_MODIFIED_SINCE);
    let (Some(one), None) = (values.next(), values.next()) else {
        return None;
    };
    let date: HttpDate = one.to_str().ok()?.trim().parse().ok()?;
    let seconds = SystemTime::from(date)
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    i64::try_from(seconds).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expected(values: &[&str]) -> Result<Option<i64>, ApiError> {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::IF_MATCH, HeaderValue::from_str(v).unwrap());
        }
        expected_version(&headers)
    }

    #[test]
    fn if_match_names_one_strong_version_or_any() {
        assert_eq!(expected(&[]).unwrap(), None);
        assert_eq!(expected(&["*"]).unwrap(), None);
        assert_eq!(expected(&["\"v7\""]).unwrap(), Some(7));
        assert_eq!(expected(&["\"v7\", \"v7\""]).unwrap(), Some(7));
        assert_eq!(expected(&["\"x\"", "\"v3\""]).unwrap(), Some(3));
        // Nothing that can match: weak, another shape, unreadable.
        for never in ["W/\"v7\"", "\"7\"", "v7", "\"v0\"", "\"v\"", "\"v-1\""] {
            assert_eq!(expected(&[never]).unwrap(), Some(0), "{never}");
        }
        assert!(expected(&["\"v1\", \"v2\""]).is_err());
    }
}

#[cfg(test)]
mod read_tests {
    use super::*;
    use crate::http::origin::tests::headers;

    // 1994-11-06T08:49:37Z, the RFC's example date.
    const AT: i64 = 784_111_777;

    #[test]
    fn if_none_match_is_a_weak_comparison_and_wins_over_if_modified_since() {
        let v = Validators::new("v7", Some(AT), AT + 10);
        let fresh = |pairs: &[(&str, &str)]| v.fresh(&headers(pairs));
        assert!(fresh(&[("if-none-match", "\"v7\"")]));
        assert!(fresh(&[("if-none-match", "W/\"v7\"")]));
        assert!(fresh(&[("if-none-match", "\"v6\", \"v7\"")]));
        assert!(fresh(&[
            ("if-none-match", "\"v6\""),
            ("if-none-match", "\"v7\"")
        ]));
        assert!(fresh(&[("if-none-match", "*")]));
        assert!(!fresh(&[("if-none-match", "\"v6\"")]));
        assert!(!fresh(&[("if-none-match", "v7")]));
        assert!(!fresh(&[("if-none-match", "\"v70\"")]));
        // A present If-None-Match, matching or not, makes If-Modified-Since ignored.
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        assert!(!fresh(&[
            ("if-none-match", "\"v6\""),
            ("if-modified-since", date)
        ]));
        assert!(!fresh(&[
            ("if-none-match", "garbage"),
            ("if-modified-since", date)
        ]));
        assert!(fresh(&[("if-modified-since", date)]));
    }

    #[test]
    fn if_modified_since_compares_whole_seconds_and_ignores_what_is_no_date() {
        let v = Validators::new("v7", Some(AT), AT + 10);
        let fresh = |date: &str| v.fresh(&headers(&[("if-modified-since", date)]));
        assert!(fresh("Sun, 06 Nov 1994 08:49:37 GMT"));
        assert!(fresh("Sun, 06 Nov 1994 08:49:38 GMT"));
        assert!(!fresh("Sun, 06 Nov 1994 08:49:36 GMT"));
        // The obsolete forms a recipient must read.
        assert!(fresh("Sunday, 06-Nov-94 08:49:37 GMT"));
        assert!(fresh("Sun Nov  6 08:49:37 1994"));
        for no_date in ["yesterday", "", "Sun, 06 Nov 1994 08:49:37", "784111777"] {
            assert!(!fresh(no_date), "{no_date:?}");
        }
        // Two dates: ignored.
        assert!(!v.fresh(&headers(&[
            ("if-modified-since", "Sun, 06 Nov 1994 08:49:37 GMT"),
            ("if-modified-since", "Sun, 06 Nov 1994 08:49:38 GMT"),
        ])));
        // No modification time: If-Modified-Since cannot match.
        let untimed = Validators::new("v7", None, AT);
        assert!(!untimed.fresh(&headers(&[(
            "if-modified-since",
            "Sun, 06 Nov 1994 08:49:37 GMT"
        )])));
    }

    #[test]
    fn last_modified_is_never_after_now() {
        let v = Validators::new("v7", Some(AT + 5), AT);
        let mut h = HeaderMap::new();
        v.insert(&mut h);
        assert_eq!(
            h.get("last-modified").unwrap(),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(h.get("etag").unwrap(), "\"v7\"");
        assert_eq!(h.get("cache-control").unwrap(), "no-cache");
        assert!(h.get("vary").is_none());
    }
}
