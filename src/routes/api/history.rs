//! The history routes of the agent API (issue 32 §1): `GET /api/pages/{slug}/versions`,
//! `GET /api/pages/{slug}/versions/{n}` and `POST /api/pages/{slug}/restore`, each
//! one call of [`crate::operations::history`].

use actix_web::{web, HttpRequest, HttpResponse};

use super::params::{GatedRead, PagePath, PinnedWrite};
use super::responses::{
    BodyRefusals, NoSuchPage, NotModified, PinOrPublishLimited, PinRefused, VersionMismatch,
    WriteUnavailable,
};
use super::spent_headers;
use crate::http::page_request::PageRequest;
use crate::http::preconditions::Validators;
use crate::operations::error::{ApiError, Problem};
use crate::operations::history::{
    self, PinRotated, RestorePage, RotatePin, VersionList, VersionView,
};
use crate::operations::pin_check;
use crate::operations::types::{ListQuery, Updated};

/// List a page's kept versions, newest first.
///
/// Every write keeps the version it made (publish, update, archive, claim, restore,
/// import); the newest `PAGE_HISTORY_VERSIONS` (default 100) are kept. An archived
/// or claimed page's history is 404 unless `X-Page-Pin` holds its PIN (a wrong one
/// counts as a failed PIN check).
#[utoipa::path(
    get,
    path = "/api/pages/{slug}/versions",
    tag = "pages",
    params(PagePath, ListQuery, GatedRead),
    responses(
        (status = 200, description = "One page of the history", body = VersionList,
            headers(
                ("ETag" = String, description = "`\"v{newest}-p{page}-n{per_page}\"` (strong): the newest kept version and this page of the list; a new version changes it on every page"),
                ("Last-Modified" = String, description = "The newest kept version's time as an HTTP-date"),
                ("Cache-Control" = String, description = "`no-cache`; `private, no-cache` when `X-Page-Pin` was sent"),
                ("Vary" = String, description = "`X-Page-Pin`"),
            )),
        (status = 304, response = inline(NotModified)),
        (status = 400, description = "Bad page or per_page, or an `X-Page-Pin` that breaks the PIN rules", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No page has this slug, or it is archived or claimed and no right PIN was sent", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many wrong PINs (`/problems/too-many-pin-failures`)", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = i64, description = "Seconds until the refusing window ends"))),
    )
)]
pub async fn versions(
    page: PageRequest,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let req = page.req();
    pin_header_fits(req)?;
    let listed = history::versions(page.call(), &query).await?;
    let (n, per_page) = (listed.list.page, listed.list.per_page);
    let validators = Validators::history(listed.newest, n, per_page, page.state().clock.now());
    Ok(validators
        .pin_gated(req)
        .respond_json(req, listed.list)
        .await)
}

/// Read one kept version of a page: its title and Markdown body.
///
/// Visibility as for the list: an archived or claimed page's versions need its PIN.
#[utoipa::path(
    get,
    path = "/api/pages/{slug}/versions/{version}",
    tag = "pages",
    params(
        PagePath,
        ("version" = i64, Path, minimum = 1, description = "The version number"),
        GatedRead,
    ),
    responses(
        (status = 200, description = "The version", body = VersionView,
            headers(
                ("ETag" = String, description = "`\"v{version}\"` (strong): a version never changes"),
                ("Last-Modified" = String, description = "The version's `created_at` as an HTTP-date"),
                ("Cache-Control" = String, description = "`no-cache`; `private, no-cache` when `X-Page-Pin` was sent"),
                ("Vary" = String, description = "`X-Page-Pin`"),
            )),
        (status = 304, response = inline(NotModified)),
        (status = 400, description = "An `X-Page-Pin` that breaks the PIN rules", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No page has this slug (or it is gone and no right PIN was sent), or its history keeps no such version", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many wrong PINs (`/problems/too-many-pin-failures`)", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = i64, description = "Seconds until the refusing window ends"))),
    )
)]
pub async fn version(page: PageRequest) -> Result<HttpResponse, ApiError> {
    let req = page.req();
    pin_header_fits(req)?;
    let view: VersionView = history::version_view(page.call(), page.version()).await?;
    // A version never changes: its number is its tag.
    let now = page.state().clock.now();
    let validators = Validators::version(view.version, Some(view.created_at), now);
    Ok(validators.pin_gated(req).respond_json(req, view).await)
}

/// Restore a kept version: a new version whose title and body are that version's.
///
/// The same rules as an update: the publish budget, the page's PIN, `If-Match`.
#[utoipa::path(
    post,
    path = "/api/pages/{slug}/restore",
    tag = "pages",
    request_body = RestorePage,
    params(PinnedWrite),
    responses(
        (status = 200, description = "Restored as a new version", body = Updated),
        BodyRefusals,
        (status = 403, response = inline(PinRefused)),
        (status = 404, description = "No page has this slug, or its history keeps no such version", body = Problem, content_type = "application/problem+json"),
        (status = 412, response = inline(VersionMismatch)),
        (status = 429, response = inline(PinOrPublishLimited)),
        (status = 503, response = inline(WriteUnavailable)),
    )
)]
pub async fn restore(page: PageRequest, payload: web::Payload) -> Result<HttpResponse, ApiError> {
    let input: RestorePage = page.body(payload).await?;
    let restored = history::restore(page.write()?, input).await?;
    Ok(spent_headers(restored, HttpResponse::Ok()))
}

/// Replace a page's PIN.
///
/// `X-Page-Pin` holds the current PIN (checked, and wrong ones counted, as for any
/// write); from the answer on only `new_pin` works, on every replica. Spends one
/// write from the publish budget; the page's version does not change.
#[utoipa::path(
    post,
    path = "/api/pages/{slug}/pin",
    tag = "pages",
    request_body = RotatePin,
    params(
        PagePath,
        ("X-Page-Pin" = String, Header, description = "The page's current PIN"),
    ),
    responses(
        (status = 200, description = "The PIN is replaced", body = PinRotated),
        BodyRefusals,
        (status = 403, response = inline(PinRefused)),
        (status = 404, response = inline(NoSuchPage)),
        (status = 429, response = inline(PinOrPublishLimited)),
        (status = 503, response = inline(WriteUnavailable)),
    )
)]
pub async fn rotate_pin(
    page: PageRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let input: RotatePin = page.body(payload).await?;
    let rotated = history::rotate_pin(page.call(), input).await?;
    Ok(spent_headers(rotated, HttpResponse::Ok()))
}

/// The read routes of a history take an optional `X-Page-Pin`; one that is sent must
/// fit the PIN rules of publishing (`pin::check`: 6–64 characters, no control
/// character, no whitespace at either end), as the OpenAPI document's pattern says,
/// or the request is 400, whether or not the page needs it. A well-formed wrong PIN on
/// a visible page is ignored.
fn pin_header_fits(req: &HttpRequest) -> Result<(), ApiError> {
    let Some(value) = req.headers().get(pin_check::PIN_HEADER) else {
        return Ok(());
    };
    let fits = std::str::from_utf8(value.as_bytes())
        .ok()
        .is_some_and(|pin| crate::pin::check(pin).is_ok());
    if fits {
        Ok(())
    } else {
        Err(ApiError::validation(
            pin_check::PIN_HEADER,
            "a PIN is 6–64 characters, none of them a control character, not starting or ending with whitespace",
        ))
    }
}
