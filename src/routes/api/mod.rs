//! The JSON API for agents (SPEC §4): publish, read, list, update, archive and claim
//! pages over HTTP. Every error is an RFC 9457 problem document
//! ([`crate::operations::error`]); the routes that change a page need its PIN
//! ([`crate::operations::pin_check`]); [`openapi`] describes it all.
//!
//! The handlers only translate HTTP: each reads its request (path, query, body, PIN
//! header) and calls one operation of [`crate::operations::pages`] with the
//! [`Caller`](crate::operations::Caller); the MCP tools ([`crate::mcp`]) call the same operations, so both
//! count against the same budgets.

pub mod history;
pub mod openapi;
mod params;
mod responses;

use actix_web::http::header;
use actix_web::{web, FromRequest, Handler, HttpRequest, HttpResponse, Responder};

use crate::http::body;
use crate::http::page_request::PageRequest;
use crate::http::preconditions::Validators;
use crate::http::rate_limit_headers::with_spent;
use crate::operations::error::{ApiError, Problem};
use crate::operations::idempotency::{self, Idempotency, IdempotencyKey};
use crate::operations::pages::{self, Conditions, Written};
use crate::operations::types::{
    CreatePage, Created, ListQuery, PageList, PageView, StateChanged, UpdatePage, Updated,
};
use crate::page_records::StateChange;
use crate::state::AppState;
use params::{ConditionalRead, PagePath, PinnedWrite};
use responses::{BodyRefusals, NotModified, PinnedWriteRefusals, WriteUnavailable};

/// The `/api` scope: every API route, with problem documents for unknown paths,
/// wrong methods and unreadable path or query parameters.
pub fn scope() -> actix_web::Scope {
    web::scope("/api")
        .app_data(
            web::PathConfig::default()
                .error_handler(|_, _| ApiError::NotFound("no page has this slug".into()).into()),
        )
        .app_data(web::QueryConfig::default().error_handler(|e, _| {
            ApiError::validation("query", format!("query string: {e}")).into()
        }))
        .service(resource(
            "/pages",
            [web::post().to(create), web::get().to(list)],
            "GET, HEAD, POST",
        ))
        .service(resource(
            "/pages/{slug}",
            [web::get().to(get), web::put().to(update)],
            "GET, HEAD, PUT",
        ))
        .service(post_only("/pages/{slug}/archive", archive))
        .service(post_only("/pages/{slug}/claim", claim))
        .service(resource(
            "/pages/{slug}/versions",
            [web::get().to(history::versions)],
            "GET, HEAD",
        ))
        .service(resource(
            "/pages/{slug}/versions/{version}",
            [web::get().to(history::version)],
            "GET, HEAD",
        ))
        .service(post_only("/pages/{slug}/restore", history::restore))
        .service(post_only("/pages/{slug}/pin", history::rotate_pin))
        .service(resource(
            "/openapi.json",
            [web::get().to(openapi::document)],
            "GET, HEAD",
        ))
        .default_service(web::to(|| async {
            Err::<HttpResponse, _>(ApiError::NotFound(
                "no API route here; see /api/openapi.json".into(),
            ))
        }))
}

/// The resource at `path` answering `routes`, and every other method with a 405 that
/// says `Allow: allow`.
fn resource<const N: usize>(
    path: &str,
    routes: [actix_web::Route; N],
    allow: &'static str,
) -> actix_web::Resource {
    routes
        .into_iter()
        .fold(web::resource(path), actix_web::Resource::route)
        .default_service(web::to(move || async move {
            Err::<HttpResponse, _>(ApiError::MethodNotAllowed { allow })
        }))
}

/// [`resource`] with `POST` the one method `path` answers.
fn post_only<F, Args>(path: &str, handler: F) -> actix_web::Resource
where
    F: Handler<Args>,
    Args: FromRequest + 'static,
    F::Output: Responder + 'static,
{
    resource(path, [web::post().to(handler)], "POST")
}

/// The `Idempotency-Key` of `req`, checked: `None` without one.
///
/// Errors: a key that breaks [`IdempotencyKey::parse`]'s rule, or the header sent
/// more than once, as a validation error on `Idempotency-Key`.
pub(crate) fn idempotency_key(req: &HttpRequest) -> Result<Option<IdempotencyKey>, ApiError> {
    let mut values = req.headers().get_all(idempotency::HEADER);
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(ApiError::validation(
            idempotency::HEADER,
            "send Idempotency-Key once: one request has one key",
        ));
    }
    IdempotencyKey::parse(idempotency::HEADER, first.as_bytes()).map(Some)
}

/// Publish a page.
///
/// The slug is derived from the title when left out, with `-2`, `-3`, … added when
/// another page has it; a slug given explicitly that is taken is a 409.
///
/// With `Idempotency-Key`, the same key and the same body bytes within 24 hours
/// answer the first 201 again (`Idempotent-Replayed: true`, no `RateLimit`
/// headers): nothing is published or spent again. The key is scoped to the client.
#[utoipa::path(
    post,
    path = "/api/pages",
    tag = "pages",
    request_body = CreatePage,
    params(
        ("Idempotency-Key" = Option<String>, Header, description = "1–255 visible ASCII characters (0x21–0x7E), once: a publish sent again with the same key and the same body bytes within 24 hours answers the first answer again and publishes nothing (another body is 422, while the first is still running 409). Keys are this client's own; at most 1000 live at once"),
    ),
    responses(
        (status = 201, description = "Published, or (with `Idempotent-Replayed: true`) the first answer to this `Idempotency-Key` again", body = Created,
            headers(
                ("Location" = String, description = "/api/pages/{slug}"),
                ("Idempotent-Replayed" = String, description = "`true` when this is the stored answer of an earlier request with the same `Idempotency-Key` (nothing was published or spent now, and no `RateLimit` headers are sent); absent otherwise"),
            ),
            links(
                ("Read" = (operation_id = "get", parameters(("slug" = "$response.body#/slug")),
                    description = "The page just published")),
                ("Update" = (operation_id = "update", parameters(("slug" = "$response.body#/slug"), ("header.X-Page-Pin" = "$request.body#/pin")),
                    description = "Change it with the PIN it was published with")),
                ("Archive" = (operation_id = "archive", parameters(("slug" = "$response.body#/slug"), ("header.X-Page-Pin" = "$request.body#/pin")),
                    description = "Archive it with the PIN it was published with")),
                ("Claim" = (operation_id = "claim", parameters(("slug" = "$response.body#/slug"), ("header.X-Page-Pin" = "$request.body#/pin")),
                    description = "Claim it with the PIN it was published with")),
            )),
        BodyRefusals,
        (status = 409, description = "The slug is taken (`/problems/conflict`), or the first request with this `Idempotency-Key` is still running (`/problems/idempotency-key-in-flight`, `Retry-After: 1`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "This `Idempotency-Key` came with another body in the last 24 hours (`/problems/idempotency-key-reused`): nothing was published", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "This client's publish budget is spent (`/problems/publish-rate-limited`), or it holds 1000 live idempotency keys (`/problems/too-many-idempotency-keys`, `Retry-After` until the oldest expires)", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = i64, description = "Seconds until the refusing window ends, or until the oldest key expires"))),
        (status = 503, response = inline(WriteUnavailable)),
    )
)]
pub async fn create(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency_key(&req)?;
    let (input, bytes): (CreatePage, _) =
        body::read_json_bytes(&state.api.bodies, &req, payload).await?;
    let caller = crate::http::caller(&req, &state.trusted_proxies);
    let conditions = Conditions {
        idempotency: key.map(|key| Idempotency::of_body(key, &bytes)),
        ..crate::http::preconditions::conditions(&req)?
    };
    drop(bytes);
    let written = pages::publish(&state, &caller, input, conditions).await?;
    let status = written
        .replayed
        .and_then(|s| actix_web::http::StatusCode::from_u16(s).ok())
        .unwrap_or(actix_web::http::StatusCode::CREATED);
    let mut response = HttpResponse::build(status);
    response.insert_header((
        header::LOCATION,
        format!("/api/pages/{}", written.answer.slug),
    ));
    if written.replayed.is_some() {
        response.insert_header((idempotency::REPLAYED_HEADER, "true"));
    }
    Ok(spent_headers(written, response))
}

/// List published pages, newest first.
///
/// Published means on the public ledger: not archived, not claimed.
#[utoipa::path(
    get,
    path = "/api/pages",
    tag = "pages",
    params(ListQuery),
    responses(
        (status = 200, description = "One page of the list", body = PageList),
        (status = 400, description = "Bad page or per_page", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let caller = crate::http::caller(&req, &state.trusted_proxies);
    Ok(HttpResponse::Ok().json(pages::list(&state, &caller, &query).await?))
}

/// Read a published page.
///
/// Archived and claimed pages are 404 here, as on `/p/{slug}`. A conditional read
/// (`If-None-Match`, `If-Modified-Since`) of a page that is there is 304 while the
/// client's copy is current.
#[utoipa::path(
    get,
    path = "/api/pages/{slug}",
    tag = "pages",
    params(PagePath, ConditionalRead),
    responses(
        (status = 200, description = "The page", body = PageView,
            headers(
                ("ETag" = String, description = "`\"v{version}\"` (strong): send it back in `If-Match` to write only this version, or in `If-None-Match` to be answered 304 while it is current"),
                ("Last-Modified" = String, description = "The page's `updated_at` as an HTTP-date"),
                ("Cache-Control" = String, description = "`no-cache`: a copy may be kept, and asked about again before each use"),
            )),
        (status = 304, response = inline(NotModified)),
        (status = 404, description = "No published page has this slug", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get(page: PageRequest) -> Result<HttpResponse, ApiError> {
    let call = page.call();
    let view = pages::read(call.state, call.caller, call.target.slug).await?;
    let validators =
        Validators::version(view.version, Some(view.updated_at), call.state.clock.now());
    Ok(validators.respond_json(page.req(), view).await)
}

/// Replace a page's title and/or body.
///
/// Every accepted update is a new version, even when the text is the same, so
/// concurrent writers each get their own version number.
#[utoipa::path(
    put,
    path = "/api/pages/{slug}",
    tag = "pages",
    request_body = UpdatePage,
    params(PinnedWrite),
    responses(
        (status = 200, description = "Updated", body = Updated),
        BodyRefusals,
        PinnedWriteRefusals,
    )
)]
pub async fn update(page: PageRequest, payload: web::Payload) -> Result<HttpResponse, ApiError> {
    let input: UpdatePage = page.body(payload).await?;
    let updated = pages::update(page.write()?, input).await?;
    Ok(spent_headers(updated, HttpResponse::Ok()))
}

/// `response` with `body` as JSON and the spend's `RateLimit` headers.
pub(crate) fn spent_headers<T: serde::Serialize>(
    Written {
        answer: body,
        spent,
        ..
    }: Written<T>,
    mut response: actix_web::HttpResponseBuilder,
) -> HttpResponse {
    with_spent(response.json(body), spent.as_ref())
}

/// Archive and claim: one route each, alike but for the operation of
/// [`crate::operations::pages`] it calls (`$name`), its path and the word of its 200.
macro_rules! state_change_routes {
    ($($(#[doc = $doc:tt])* $name:ident, $change:ident, $path:tt, $done:tt;)+) => {
        $(
            $(#[doc = $doc])*
            #[utoipa::path(
                post,
                path = $path,
                tag = "pages",
                params(PinnedWrite),
                responses(
                    (status = 200, description = $done, body = StateChanged),
                    (status = 400, description = "An `X-Page-Pin` that breaks the PIN rules (not UTF-8, say: a header sent in Latin-1)", body = Problem, content_type = "application/problem+json"),
                    PinnedWriteRefusals,
                )
            )]
            pub async fn $name(page: PageRequest) -> Result<HttpResponse, ApiError> {
                let changed = pages::change_state(page.write()?, StateChange::$change).await?;
                Ok(spent_headers(changed, HttpResponse::Ok()))
            }
        )+
    };
}

state_change_routes! {
    /// Archive a page: it leaves the ledger and search at once.
    ///
    /// Archiving an archived page changes nothing and answers 200 again.
    archive, Archive, "/api/pages/{slug}/archive", "Archived";
    /// Claim a page: it leaves the ledger, search and `/p/{slug}` at once.
    ///
    /// Claiming a claimed page changes nothing and answers 200 again.
    claim, Claim, "/api/pages/{slug}/claim", "Claimed";
}
