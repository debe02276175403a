//! The JSON API for agents (SPEC §4): publish, read, list, update, archive and claim
//! pages. Every error is an RFC 9457 problem document ([`error`]); the routes that
//! change a page need its PIN ([`pin_check`]); [`openapi`] describes it all.
//!
//! The handlers only translate HTTP: what a valid page is lives in
//! [`crate::domain`], and how slugs and versions move behind the page store
//! ([`crate::page_store`]), which `import` uses too. Each handler reads its request
//! (path, query, body, PIN header) and calls one operation ([`publish`],
//! [`list_pages`], [`read`], [`update_page`], [`archive_page`], [`claim_page`]) with
//! the [`Caller`]; the MCP tools ([`crate::mcp`]) call the same operations, so both
//! count against the same budgets.

pub mod body;
pub mod error;
pub mod openapi;
pub mod pin_check;
pub mod publish_budget;
pub mod types;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};

use crate::client_ip::{ClientIp, TrustedProxies};
use crate::domain::{NewPage, PageBody, PageSlug, PageTitle};
use crate::page_store::{CreateRefused, StateChange};
use crate::pin;
use crate::routes::origin::Origin;
use crate::state::AppState;
use error::{ApiError, Problem};
use publish_budget::Spent;
use types::{
    CreatePage, Created, ListQuery, PageList, PageListItem, PageView, StateChanged, UpdatePage,
    Updated,
};

/// Rows of `GET /api/pages` unless `per_page` says otherwise, and the most it may say.
pub const DEFAULT_PER_PAGE: i64 = 50;
pub const MAX_PER_PAGE: i64 = 100;

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
        .service(
            web::resource("/pages")
                .route(web::post().to(create))
                .route(web::get().to(list))
                .default_service(web::to(|| wrong_method("GET, HEAD, POST"))),
        )
        .service(
            web::resource("/pages/{slug}")
                .route(web::get().to(get))
                .route(web::put().to(update))
                .default_service(web::to(|| wrong_method("GET, HEAD, PUT"))),
        )
        .service(
            web::resource("/pages/{slug}/archive")
                .route(web::post().to(archive))
                .default_service(web::to(|| wrong_method("POST"))),
        )
        .service(
            web::resource("/pages/{slug}/claim")
                .route(web::post().to(claim))
                .default_service(web::to(|| wrong_method("POST"))),
        )
        .service(
            web::resource("/openapi.json")
                .route(web::get().to(openapi::document))
                .default_service(web::to(|| wrong_method("GET, HEAD"))),
        )
        .default_service(web::to(|| async {
            Err::<HttpResponse, _>(ApiError::NotFound(
                "no API route here; see /api/openapi.json".into(),
            ))
        }))
}

async fn wrong_method(allow: &'static str) -> Result<HttpResponse, ApiError> {
    Err(ApiError::MethodNotAllowed { allow })
}

/// Who asks, as every page operation sees them: the client whose budgets count
/// (SPEC §5 gate 2: the socket peer, or the client a trusted proxy names in
/// `X-Forwarded-For`) and the public origin its page URLs are on.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Key material of the publish and PIN-failure budgets.
    pub client: ClientIp,
    /// The host the client asked, or the one a trusted proxy forwarded
    /// ([`crate::routes::origin`]).
    pub origin: Origin,
}

impl Caller {
    /// The caller of `req`, believing forwarded headers only from `trusted` peers.
    pub fn of(req: &HttpRequest, trusted: &TrustedProxies) -> Self {
        Self {
            client: crate::routes::client_ip(req, trusted),
            origin: crate::routes::origin::of(req, trusted),
        }
    }

    /// Where people read the page `slug`: an absolute URL on the caller's origin.
    fn page_url(&self, slug: &str) -> String {
        self.origin.url(&format!("/p/{slug}"))
    }
}

/// The `X-Page-Pin` header of `req`, as sent.
fn pin_header(req: &HttpRequest) -> Option<&[u8]> {
    req.headers()
        .get(pin_check::PIN_HEADER)
        .map(|v| v.as_bytes())
}

/// A slug from the path; one that breaks the slug pattern names no page.
pub fn path_slug(slug: &str) -> Result<PageSlug, ApiError> {
    PageSlug::parse(slug).map_err(|_| ApiError::no_page(slug))
}

/// Publish a page.
///
/// The slug is derived from the title when left out, with `-2`, `-3`, … added when
/// another page has it; a slug given explicitly that is taken is a 409.
#[utoipa::path(
    post,
    path = "/api/pages",
    tag = "pages",
    request_body = CreatePage,
    responses(
        (status = 201, description = "Published", body = Created,
            headers(("Location" = String, description = "/api/pages/{slug}")),
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
        (status = 400, description = "Invalid field or malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The slug is taken", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 300 KiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Content-Type is not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 408, description = "The body did not arrive in full in time; the connection is closed", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "This client's publish budget is spent (`/problems/publish-rate-limited`)", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = i64, description = "Seconds until the refusing window ends"))),
        (status = 503, description = "The request budget cannot be checked right now (`/problems/budget-unavailable`, retry after 1 s), the database is busy with another writer (`/problems/database-busy`, retry after 1 s) or cannot keep a write now (`/problems/storage-unavailable`, retry after 5 s); nothing was written", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
    )
)]
pub async fn create(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let input: CreatePage = body::read_json(&state.api.bodies, &req, payload).await?;
    let caller = Caller::of(&req, &state.trusted_proxies);
    let (created, spent) = publish(&state, &caller, input).await?;
    Ok(spent.headers(
        HttpResponse::Created()
            .insert_header((header::LOCATION, format!("/api/pages/{}", created.slug)))
            .json(created),
    ))
}

/// Publishes `input` for `caller`: fields, then the publish budget, then the PIN
/// hash and the write. Errors as [`create`] answers them.
pub async fn publish(
    state: &AppState,
    caller: &Caller,
    input: CreatePage,
) -> Result<(Created, Spent), ApiError> {
    let page = NewPage::parse(input.slug.as_deref(), &input.title, input.body)?;
    let spent = publish_budget::spend(state, &caller.client).await?;
    let pin_hash = match input.pin {
        Some(pin) => Some(pin::hash_off_thread(&state.api.hash_slots, pin).await?),
        None => None,
    };
    let now = state.clock.now();
    let created = state
        .pages
        .store
        .create(page, pin_hash, now)
        .await?
        .map_err(|CreateRefused::SlugTaken(slug)| ApiError::Conflict(slug.to_string()))?;
    let slug = created.slug.to_string();
    Ok((
        Created {
            url: caller.page_url(&slug),
            version: created.version,
            slug,
        },
        spent,
    ))
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
    let caller = Caller::of(&req, &state.trusted_proxies);
    Ok(HttpResponse::Ok().json(list_pages(&state, &caller, &query).await?))
}

/// One page of the ledger as [`list`] answers it; `query` holds `page` and
/// `per_page` as sent (text), checked here.
pub async fn list_pages(
    state: &AppState,
    caller: &Caller,
    query: &ListQuery,
) -> Result<PageList, ApiError> {
    let per_page = whole_number(
        "per_page",
        query.per_page.as_deref(),
        DEFAULT_PER_PAGE,
        MAX_PER_PAGE,
    )?;
    let page = whole_number("page", query.page.as_deref(), 1, openapi::MAX_PAGE)?;
    let offset = (page - 1) * per_page;
    let listed = state.pages.store.ledger(offset, per_page).await?;
    let total = listed.total;
    let pages = listed
        .rows
        .into_iter()
        .map(|p| PageListItem {
            url: caller.page_url(&p.slug),
            slug: p.slug,
            title: p.title,
            version: p.version,
            updated_at: p.updated_at,
        })
        .collect();
    Ok(PageList {
        pages,
        page,
        per_page,
        total,
        next_page: (offset + per_page < total).then_some(page + 1),
    })
}

/// `text` as a whole number from 1 to `max` under the rule every paged route shares
/// ([`crate::domain::parse_whole_number`]), or `default` when absent or blank.
fn whole_number(field: &str, text: Option<&str>, default: i64, max: i64) -> Result<i64, ApiError> {
    let n = crate::domain::parse_whole_number(text).map(|n| n.map(i64::try_from));
    match n {
        Ok(None) => Ok(default),
        Ok(Some(Ok(n))) if n <= max => Ok(n),
        _ => Err(ApiError::validation(
            field,
            format!("{field} must be a whole number from 1 to {max}"),
        )),
    }
}

/// Read a published page.
///
/// Archived and claimed pages are 404 here, as on `/p/{slug}`.
#[utoipa::path(
    get,
    path = "/api/pages/{slug}",
    tag = "pages",
    params(("slug" = String, Path, description = "The page's slug")),
    responses(
        (status = 200, description = "The page", body = PageView),
        (status = 404, description = "No published page has this slug", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let caller = Caller::of(&req, &state.trusted_proxies);
    Ok(HttpResponse::Ok().json(read(&state, &caller, &slug).await?))
}

/// The published page `slug` as [`get`] answers it.
pub async fn read(state: &AppState, caller: &Caller, slug: &str) -> Result<PageView, ApiError> {
    let slug = path_slug(slug)?;
    let page = state
        .pages
        .store
        .page(slug.as_str())
        .await?
        .ok_or_else(|| ApiError::no_page(slug.as_str()))?;
    Ok(PageView {
        url: caller.page_url(&page.slug),
        slug: page.slug,
        title: page.title,
        body: page.body,
        version: page.version,
        created_at: page.created_at,
        updated_at: page.updated_at,
    })
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
    params(
        ("slug" = String, Path, description = "The page's slug"),
        ("X-Page-Pin" = String, Header, description = "The PIN the page was published with"),
    ),
    responses(
        (status = 200, description = "Updated", body = Updated),
        (status = 400, description = "Invalid field or malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "PIN missing or wrong, or the page has none", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No page has this slug", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 300 KiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Content-Type is not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many wrong PINs this hour from this client, or against this page from all clients together, which refuses every PIN for it, the right one included (`/problems/too-many-pin-failures`); or the client's publish budget is spent (`/problems/publish-rate-limited`)", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = i64, description = "Seconds until the refusing window ends"))),
        (status = 408, description = "The body did not arrive in full in time; the connection is closed", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The request budget cannot be checked right now (`/problems/budget-unavailable`, retry after 1 s), the database is busy with another writer (`/problems/database-busy`, retry after 1 s) or cannot keep a write now (`/problems/storage-unavailable`, retry after 5 s); nothing was written", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
    )
)]
pub async fn update(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let slug = path_slug(&slug)?;
    let input: UpdatePage = body::read_json(&state.api.bodies, &req, payload).await?;
    let caller = Caller::of(&req, &state.trusted_proxies);
    let updated = update_page(&state, &caller, slug, input, pin_header(&req)).await?;
    Ok(spent_headers(updated, HttpResponse::Ok()))
}

/// `response` with `body` as JSON and the spend's `RateLimit` headers.
fn spent_headers<T: serde::Serialize>(
    (body, spent): (T, Spent),
    mut response: actix_web::HttpResponseBuilder,
) -> HttpResponse {
    spent.headers(response.json(body))
}

/// Updates the page `slug` with `input` for `caller`, who shows `pin` (the
/// `X-Page-Pin` header as sent): fields, then the publish budget, then the PIN
/// check ([`pin_check::authorize`]), then the write. Errors as [`update`] answers
/// them.
pub async fn update_page(
    state: &AppState,
    caller: &Caller,
    slug: PageSlug,
    input: UpdatePage,
    pin: Option<&[u8]>,
) -> Result<(Updated, Spent), ApiError> {
    if input.title.is_none() && input.body.is_none() {
        return Err(ApiError::validation("title", "give title, body or both"));
    }
    let title = input.title.as_deref().map(PageTitle::parse).transpose()?;
    let body = input.body.map(PageBody::parse).transpose()?;
    let spent = publish_budget::spend(state, &caller.client).await?;
    let id = pin_check::authorize(state, &caller.client, &slug, pin).await?;
    let now = state.clock.now();
    let version = state.pages.store.update(id, title, body, now).await?;
    Ok((
        Updated {
            slug: slug.to_string(),
            version,
        },
        spent,
    ))
}

/// Archive a page: it leaves the ledger and search at once.
///
/// Archiving an archived page changes nothing and answers 200 again.
#[utoipa::path(
    post,
    path = "/api/pages/{slug}/archive",
    tag = "pages",
    params(
        ("slug" = String, Path, description = "The page's slug"),
        ("X-Page-Pin" = String, Header, description = "The PIN the page was published with"),
    ),
    responses(
        (status = 200, description = "Archived", body = StateChanged),
        (status = 403, description = "PIN missing or wrong, or the page has none", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No page has this slug", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many wrong PINs this hour from this client, or against this page from all clients together, which refuses every PIN for it, the right one included (`/problems/too-many-pin-failures`); or the client's publish budget is spent (`/problems/publish-rate-limited`)", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = i64, description = "Seconds until the refusing window ends"))),
        (status = 503, description = "The request budget cannot be checked right now (`/problems/budget-unavailable`, retry after 1 s), the database is busy with another writer (`/problems/database-busy`, retry after 1 s) or cannot keep a write now (`/problems/storage-unavailable`, retry after 5 s); nothing was written", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
    )
)]
pub async fn archive(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let caller = Caller::of(&req, &state.trusted_proxies);
    let archived = archive_page(&state, &caller, &slug, pin_header(&req)).await?;
    Ok(spent_headers(archived, HttpResponse::Ok()))
}

/// Archives the page `slug` for `caller`, who shows `pin`; errors as [`archive`]
/// answers them.
pub async fn archive_page(
    state: &AppState,
    caller: &Caller,
    slug: &str,
    pin: Option<&[u8]>,
) -> Result<(StateChanged, Spent), ApiError> {
    change_state(state, caller, slug, pin, StateChange::Archive).await
}

/// Claim a page: it leaves the ledger, search and `/p/{slug}` at once.
///
/// Claiming a claimed page changes nothing and answers 200 again.
#[utoipa::path(
    post,
    path = "/api/pages/{slug}/claim",
    tag = "pages",
    params(
        ("slug" = String, Path, description = "The page's slug"),
        ("X-Page-Pin" = String, Header, description = "The PIN the page was published with"),
    ),
    responses(
        (status = 200, description = "Claimed", body = StateChanged),
        (status = 403, description = "PIN missing or wrong, or the page has none", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No page has this slug", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many wrong PINs this hour from this client, or against this page from all clients together, which refuses every PIN for it, the right one included (`/problems/too-many-pin-failures`); or the client's publish budget is spent (`/problems/publish-rate-limited`)", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = i64, description = "Seconds until the refusing window ends"))),
        (status = 503, description = "The request budget cannot be checked right now (`/problems/budget-unavailable`, retry after 1 s), the database is busy with another writer (`/problems/database-busy`, retry after 1 s) or cannot keep a write now (`/problems/storage-unavailable`, retry after 5 s); nothing was written", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
    )
)]
pub async fn claim(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let caller = Caller::of(&req, &state.trusted_proxies);
    let claimed = claim_page(&state, &caller, &slug, pin_header(&req)).await?;
    Ok(spent_headers(claimed, HttpResponse::Ok()))
}

/// Claims the page `slug` for `caller`, who shows `pin`; errors as [`claim`]
/// answers them.
pub async fn claim_page(
    state: &AppState,
    caller: &Caller,
    slug: &str,
    pin: Option<&[u8]>,
) -> Result<(StateChanged, Spent), ApiError> {
    change_state(state, caller, slug, pin, StateChange::Claim).await
}

async fn change_state(
    state: &AppState,
    caller: &Caller,
    slug: &str,
    pin: Option<&[u8]>,
    change: StateChange,
) -> Result<(StateChanged, Spent), ApiError> {
    let slug = path_slug(slug)?;
    let spent = publish_budget::spend(state, &caller.client).await?;
    let id = pin_check::authorize(state, &caller.client, &slug, pin).await?;
    let now = state.clock.now();
    let after = state.pages.store.change_state(id, change, now).await?;
    Ok((
        StateChanged {
            slug: after.slug,
            version: after.version,
            lifecycle: after.lifecycle,
            claimed_at: after.claimed_at,
        },
        spent,
    ))
}
