//! HTTP preconditions on pages (RFC 9110 sections 8.8.3 and 13; issue 32 §2, §4): a page's
//! entity tag is its version, `"v{version}"`, strong (two answers with the same
//! version have the same title and body). `If-Match` on a write becomes the
//! write's expected version ([`crate::operations::pages::Conditions`]), which the
//! page store checks inside the write's transaction.

use actix_web::http::header::{self, HeaderMap};
use actix_web::HttpRequest;

use crate::operations::error::ApiError;
use crate::operations::pages::Conditions;

/// The entity tag of version `version` of a page: `"v7"`.
pub fn etag(version: i64) -> String {
    format!("\"v{version}\"")
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

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
