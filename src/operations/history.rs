//! Page history as operations both faces expose (issue 32 §1): the list of a
//! page's kept versions, one version, and restoring one. Visibility follows the
//! page: an active page's history is public; a gone (archived or claimed) page's is
//! 404 to everyone who does not send its PIN, checked (and a wrong one counted) as
//! for a write ([`pin_check::authorize`]). A restore is a write like an update:
//! the publish budget, then the PIN check, then the store, with the same
//! [`Conditions`](super::pages::Conditions).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::ApiError;
use super::pages::{counted, PageCall, Written};
use super::types::{ListQuery, Updated};
use super::{pin_check, Caller};
use crate::domain::PageSlug;
use crate::page_store::{PageVersion, Restored, VersionKind};

/// Rows of a history list unless `per_page` says otherwise, and the most it may say
/// (as the page list's).
pub use super::pages::{DEFAULT_PER_PAGE, MAX_PAGE, MAX_PER_PAGE};

/// `POST /api/pages/{slug}/restore`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, expecting = "a JSON object")]
pub struct RestorePage {
    /// The kept version whose title and body become the page's new version.
    #[schema(minimum = 1, example = 3)]
    #[serde(deserialize_with = "whole_number")]
    pub version: i64,
}

/// A JSON number that is a whole number: `3` or `3.0` (JSON Schema's `integer` counts
/// both, so the OpenAPI document's promise holds for either spelling); `3.5` is not.
/// The MCP tools' `version` arguments are read by it too.
pub fn whole_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    n.as_i64()
        .or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0)
                .map(|f| f as i64)
        })
        .ok_or_else(|| serde::de::Error::custom("a whole number"))
}

/// `POST /api/pages/{slug}/pin`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, expecting = "a JSON object")]
pub struct RotatePin {
    /// The page's PIN from now on: the PIN rules of publishing (6–64 characters, no
    /// control character, no whitespace at either end).
    #[schema(schema_with = super::types::new_pin_schema)]
    pub new_pin: String,
}

/// A page whose PIN was just replaced.
#[derive(Debug, Serialize, ToSchema)]
pub struct PinRotated {
    pub slug: String,
    /// The page's version: a new PIN is not a new version.
    pub version: i64,
}

/// Replaces the PIN of the page `call` names (with its current PIN in
/// `call.target.pin`) by `input.new_pin`: the slug, the new PIN's rules, then the
/// publish budget, then the PIN check (wrong PINs count as for any write), then the
/// new hash and the write. A PIN is not part of a version: `call.conditions` is not
/// checked. Errors as `POST /api/pages/{slug}/pin` answers them.
pub async fn rotate_pin(
    call: PageCall<'_>,
    input: RotatePin,
) -> Result<Written<PinRotated>, ApiError> {
    let state = call.state;
    let slug = call.slug()?;
    crate::pin::check(&input.new_pin)
        .map_err(|e| ApiError::validation("new_pin", e.to_string()))?;
    let (spent, id) = call.spend_and_authorize(&slug).await?;
    let hash = crate::pin::hash_off_thread(&state.api.hash_slots, input.new_pin).await?;
    call.store().set_pin_hash(id, hash).await?;
    let version = call
        .store()
        .versions(id, 0, 1)
        .await?
        .rows
        .first()
        .map_or(1, |v| v.version);
    let answer = PinRotated {
        slug: slug.to_string(),
        version,
    };
    Ok(Written::spent(answer, spent))
}

/// One kept version in a page's history list (no body). Times are unix seconds.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionItem {
    pub version: i64,
    pub title: String,
    /// What made this version.
    pub kind: VersionKind,
    /// When it was written.
    pub created_at: i64,
    /// Bytes of its body (UTF-8).
    pub body_bytes: i64,
    /// Where people read it (the HTML version page, with a diff to the one before).
    pub url: String,
}

/// One page of a page's history, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionList {
    pub slug: String,
    pub versions: Vec<VersionItem>,
    /// This page number, from 1.
    pub page: i64,
    pub per_page: i64,
    /// Versions kept in all (at most `PAGE_HISTORY_VERSIONS`).
    pub total: i64,
    /// The next page number, or null on the last page.
    pub next_page: Option<i64>,
}

/// One kept version of a page, with its Markdown body. Times are unix seconds.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionView {
    pub slug: String,
    pub version: i64,
    pub title: String,
    pub body: String,
    pub kind: VersionKind,
    pub created_at: i64,
    /// Where people read it (the HTML version page).
    pub url: String,
}

/// The page's id when the caller may read its history: any page that is a
/// candidate; a gone one only with its PIN in `call.target.pin` (else 404).
pub async fn readable(call: &PageCall<'_>) -> Result<(PageSlug, i64), ApiError> {
    let slug = call.slug()?;
    let record = pin_check::pin_record(call.state, &slug).await?;
    if !record.gone {
        return Ok((slug, record.id));
    }
    let id = call.authorize(&slug).await?;
    Ok((slug, id))
}

/// Where the HTML page of version `version` of `slug` is.
pub fn version_url(caller: &Caller, slug: &str, version: i64) -> String {
    caller.origin.url(&format!("/p/{slug}/v/{version}"))
}

/// One page of a page's history, and the newest version kept (on any page) with
/// its time: what a conditional read of the list compares, since every write adds a
/// newest version, and only a write prunes (in the same transaction).
#[derive(Debug)]
pub struct ListedVersions {
    pub list: VersionList,
    /// `(version, created_at)` of the newest kept version; `None` when none is kept.
    pub newest: Option<(i64, i64)>,
}

/// One page of the history of the page `call` names, newest first; `query`
/// holds `page` and `per_page` as sent, under the page list's rules.
pub async fn versions(call: PageCall<'_>, query: &ListQuery) -> Result<ListedVersions, ApiError> {
    let caller = call.caller;
    let (per_page, page) = super::pages::paging(query)?;
    let (slug, id) = readable(&call).await?;
    let offset = (page - 1) * per_page;
    // Past the first page the newest version comes from a query of its own, made
    // before the page's: a write between the two then leaves a tag older than the
    // rows (the next read answers 200 again), never newer (a 304 for rows the
    // client does not hold).
    let newest_first = if offset > 0 {
        let newest = call.store().versions(id, 0, 1).await?;
        Some(newest.rows.first().map(|v| (v.version, v.created_at)))
    } else {
        None
    };
    let listed = call.store().versions(id, offset, per_page).await?;
    let newest =
        newest_first.unwrap_or_else(|| listed.rows.first().map(|v| (v.version, v.created_at)));
    let total = listed.total;
    let list = VersionList {
        versions: listed
            .rows
            .into_iter()
            .map(|v| VersionItem {
                url: version_url(caller, slug.as_str(), v.version),
                version: v.version,
                title: v.title,
                kind: v.kind,
                created_at: v.created_at,
                body_bytes: v.body_bytes,
            })
            .collect(),
        slug: slug.to_string(),
        page,
        per_page,
        total,
        next_page: (offset + per_page < total).then_some(page + 1),
    };
    Ok(ListedVersions { list, newest })
}

/// `version` as sent in a path: a whole number from 1, else no such version (404).
pub fn path_version(slug: &str, version: &str) -> Result<i64, ApiError> {
    match crate::domain::parse_whole_number(Some(version)) {
        Ok(Some(n)) => i64::try_from(n).map_err(|_| no_version(slug, version)),
        _ => Err(no_version(slug, version)),
    }
}

fn no_version(slug: &str, version: impl std::fmt::Display) -> ApiError {
    ApiError::NotFound(format!(
        "the page `{slug}` keeps no version {version} (never written, or older than the versions kept)"
    ))
}

/// Version `version` (as sent) of the page `call` names, and the kept version
/// before it when `with_previous` (for the diff of the HTML face).
pub async fn version(
    call: &PageCall<'_>,
    version: &str,
    with_previous: bool,
) -> Result<(PageSlug, PageVersion, Option<PageVersion>), ApiError> {
    let n = path_version(call.target.slug, version)?;
    let (slug, id) = readable(call).await?;
    let found = call
        .store()
        .version(id, n)
        .await?
        .ok_or_else(|| no_version(slug.as_str(), n))?;
    let previous = if with_previous {
        call.store().version_before(id, n).await?
    } else {
        None
    };
    Ok((slug, found, previous))
}

/// [`version`] as `GET /api/pages/{slug}/versions/{n}` answers it.
pub async fn version_view(call: PageCall<'_>, n: &str) -> Result<VersionView, ApiError> {
    let (slug, v, _) = version(&call, n, false).await?;
    Ok(VersionView {
        url: version_url(call.caller, slug.as_str(), v.version),
        slug: slug.to_string(),
        version: v.version,
        title: v.title,
        body: v.body,
        kind: v.kind,
        created_at: v.created_at,
    })
}

/// Makes a new version of the page `call` names whose title and body are those of
/// its kept version `input.version`: the slug, the field, then the publish budget,
/// then the PIN check, then the write (as an update) under `call.conditions`.
/// Errors as `POST /api/pages/{slug}/restore` answers them.
pub async fn restore(call: PageCall<'_>, input: RestorePage) -> Result<Written<Updated>, ApiError> {
    counted(call.state, "restore", async {
        let slug = call.slug()?;
        if input.version < 1 {
            return Err(ApiError::validation(
                "version",
                "version must be a whole number from 1",
            ));
        }
        let (spent, id) = call.spend_and_authorize(&slug).await?;
        let (now, expected) = (call.state.clock.now(), call.conditions.expected_version);
        let restored = call
            .store()
            .restore(id, input.version, now, expected)
            .await?;
        match restored {
            Restored::Done(version) => Ok(Written::spent(
                Updated {
                    slug: slug.to_string(),
                    version,
                },
                spent,
            )),
            Restored::NoSuchVersion => Err(no_version(slug.as_str(), input.version)),
            Restored::Mismatch(stale) => Err(stale.into()),
        }
    })
    .await
}
