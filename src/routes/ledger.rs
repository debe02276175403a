//! The public ledger (`GET /`) and the page views (`/p/{slug}`, `/p/{slug}/raw`).

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};

use crate::domain::PageSlug;
use crate::faults::{self, Store};
use crate::http::preconditions::Validators;
use crate::page_store::{Page, PageStoreError};
use crate::routes::{error_page, render};
use crate::state::AppState;
use crate::templates::format_time;

/// Rows on one ledger page.
pub const LEDGER_PAGE_SIZE: i64 = 50;

#[derive(Deserialize)]
pub struct LedgerQuery {
    page: Option<String>,
}

#[derive(Serialize)]
struct Row {
    slug: String,
    title: String,
    version: i64,
    updated_at: String,
}

#[derive(Serialize)]
struct LedgerContext {
    pages: Vec<Row>,
    page_no: i64,
    /// The number of the ledger's last page (1 when it is empty).
    last_page: i64,
    prev_page: Option<i64>,
    next_page: Option<i64>,
    total: i64,
}

/// `GET /?page=N`: candidates newest first, 50 a page. `page` follows
/// [`crate::domain::parse_whole_number`] (blank is 1, anything but digits from 1 is
/// 400); a page past the end is an empty page with a link back.
pub async fn ledger(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<LedgerQuery>,
) -> HttpResponse {
    // A number past any last page (even past what an offset can hold) is simply a
    // page past the end.
    let page_no = match crate::domain::parse_whole_number(query.page.as_deref()) {
        Ok(None) => 1,
        Ok(Some(n)) => i64::try_from(n)
            .unwrap_or(i64::MAX)
            .min(i64::MAX / LEDGER_PAGE_SIZE),
        Err(_) => {
            return error_page(
                &state,
                &req,
                StatusCode::BAD_REQUEST,
                "The page number must be a whole number from 1.",
            );
        }
    };
    let offset = (page_no - 1) * LEDGER_PAGE_SIZE;
    let (total, rows) = match state.pages.store.ledger(offset, LEDGER_PAGE_SIZE).await {
        Ok(listed) => (listed.total, listed.rows),
        Err(e) => return internal_error(&state, &req, e),
    };
    let context = LedgerContext {
        pages: rows
            .into_iter()
            .map(|p| Row {
                slug: p.slug,
                title: shown(&p.title),
                version: p.version,
                updated_at: format_time(p.updated_at),
            })
            .collect(),
        page_no,
        last_page: last_page(total),
        prev_page: (page_no > 1).then(|| (page_no - 1).min(last_page(total))),
        next_page: (offset + LEDGER_PAGE_SIZE < total).then_some(page_no + 1),
        total,
    };
    render(&state, &req, StatusCode::OK, "ledger.html", context)
}

/// `title` as a reader is shown it: without invisible chars ([`crate::invisible`]).
fn shown(title: &str) -> String {
    crate::invisible::strip(title).into_owned()
}

fn last_page(total: i64) -> i64 {
    ((total + LEDGER_PAGE_SIZE - 1) / LEDGER_PAGE_SIZE).max(1)
}

#[derive(Serialize)]
struct PageView {
    slug: String,
    title: String,
    /// The body as sanitized HTML (see [`crate::markdown`]); inserted unescaped.
    body_html: String,
    has_body: bool,
    version: i64,
    updated_at: String,
}

#[derive(Serialize)]
struct PageContext {
    page: PageView,
    meta_description: String,
    og_title: String,
}

/// `<meta name="description">` of a page: its body's summary, or a line naming the
/// page when the body has no text.
fn description(title: &str, summary: &str) -> String {
    if summary.is_empty() {
        format!("{title}, a page on agent-pages.")
    } else {
        summary.to_owned()
    }
}

/// `GET /p/{slug}`: the page with its body rendered from Markdown (once per
/// version, on a render thread: this handler awaits it without holding its worker),
/// or the 404 page for an unknown or non-candidate slug; 304 when the request's
/// `If-None-Match` / `If-Modified-Since` say the client holds it
/// ([`Validators::respond`]).
pub async fn page(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
) -> HttpResponse {
    let view = View::Html {
        theme: crate::routes::theme(&req),
    };
    show(&state, &req, slug.into_inner(), view).await
}

/// `GET /p/{slug}/raw`: the body as `text/plain; charset=utf-8`; 304 as `/p/{slug}`.
pub async fn raw(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
) -> HttpResponse {
    show(&state, &req, slug.into_inner(), View::Raw).await
}

/// How [`show`] answers with a page.
enum View {
    /// `/p/{slug}`: rendered, in the visitor's `theme`.
    Html { theme: &'static str },
    /// `/p/{slug}/raw`: the Markdown body as it is kept.
    Raw,
}

/// The page `slug` names in `view`, 304 when the client holds it; the 404 page for an
/// unknown or non-candidate slug, the error page of a store that cannot answer.
async fn show(state: &AppState, req: &HttpRequest, slug: String, view: View) -> HttpResponse {
    let p = match find(state, slug).await {
        Ok(Some(p)) => p,
        Ok(None) => return page_not_found(state, req),
        Err(e) => return internal_error(state, req, e),
    };
    let validators = page_validators(state, &p);
    match view {
        View::Html { theme } => {
            validators
                .html(theme)
                .respond(req, || render_page(state, req, p))
                .await
        }
        View::Raw => {
            validators
                .respond(req, || async {
                    HttpResponse::Ok()
                        .content_type("text/plain; charset=utf-8")
                        .insert_header(("X-Content-Type-Options", "nosniff"))
                        .body(p.body)
                })
                .await
        }
    }
}

/// The validators of a page's current version (`/p/{slug}`, its raw body and the
/// API's read): `"v{version}"`, and `Last-Modified` from its `updated_at`.
pub fn page_validators(state: &AppState, p: &Page) -> Validators {
    Validators::version(p.version, Some(p.updated_at), state.clock.now())
}

async fn render_page(state: &AppState, req: &HttpRequest, p: Page) -> HttpResponse {
    let has_body = !p.body.trim().is_empty();
    let rendered = state.pages.markdown.rendered(p.id, p.version, p.body).await;
    // Titles stored before the title rules removed invisible chars are
    // shown without them.
    let title = shown(&p.title);
    let context = PageContext {
        meta_description: description(&title, &rendered.summary),
        og_title: title.clone(),
        page: PageView {
            has_body,
            body_html: rendered.html.clone(),
            slug: p.slug,
            title,
            version: p.version,
            updated_at: format_time(p.updated_at),
        },
    };
    render(state, req, StatusCode::OK, "page.html", context)
}

async fn find(state: &AppState, slug: String) -> Result<Option<Page>, PageStoreError> {
    if PageSlug::parse(&slug).is_err() {
        return Ok(None);
    }
    state.pages.store.page(&slug).await
}

fn page_not_found(state: &AppState, req: &HttpRequest) -> HttpResponse {
    error_page(
        state,
        req,
        StatusCode::NOT_FOUND,
        "No page has this address, or it was archived or claimed.",
    )
}

/// The page for a page-store error, as `crate::faults::TABLE` says: 503
/// with `Retry-After` when the store cannot answer now, 500 for a bug.
fn internal_error(state: &AppState, req: &HttpRequest, e: PageStoreError) -> HttpResponse {
    let answer = faults::answer(Store::Pages, e.fault());
    let Some(seconds) = answer.retry_after() else {
        tracing::error!(error = %e, "database error");
        return error_page(
            state,
            req,
            StatusCode::INTERNAL_SERVER_ERROR,
            "Something went wrong on our side. Please try again.",
        );
    };
    // Unavailability is logged once per incident by the page store.
    if !matches!(e, PageStoreError::Unavailable(_)) {
        tracing::warn!(error = %e, "page store fault: answered 503");
    }
    let mut page = error_page(
        state,
        req,
        StatusCode::SERVICE_UNAVAILABLE,
        "The pages cannot be read right now. Please try again in a few seconds.",
    );
    page.headers_mut().insert(
        actix_web::http::header::RETRY_AFTER,
        actix_web::http::header::HeaderValue::from(seconds),
    );
    page
}

#[cfg(test)]
mod tests {
    use super::description;

    #[test]
    fn a_page_without_text_is_described_by_its_title() {
        assert_eq!(description("Notes", ""), "Notes, a page on agent-pages.");
        assert_eq!(description("Notes", "Some text"), "Some text");
    }
}
