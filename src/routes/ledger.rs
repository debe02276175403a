//! The public ledger (`GET /`) and the page views (`/p/{slug}`, `/p/{slug}/raw`).

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};

use crate::domain::PageSlug;
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

/// `GET /?page=N`: candidates newest first, 50 a page. `page` must be a whole number
/// from 1 (400 otherwise); a page past the end is an empty page with a link back.
pub async fn ledger(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<LedgerQuery>,
) -> HttpResponse {
    let page_no = match query.page.as_deref().map(str::parse::<i64>) {
        None => 1,
        Some(Ok(n)) if (1..=i64::MAX / LEDGER_PAGE_SIZE).contains(&n) => n,
        Some(_) => {
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
                title: p.title,
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

/// A plain-text summary of a body for `<meta name="description">`: the first
/// 160 characters of its text, whitespace collapsed, or a line naming the page.
fn description(title: &str, body: &str) -> String {
    use pulldown_cmark::{Event, Parser, TagEnd};
    const LIMIT: usize = 160;
    let mut raw = String::new();
    for event in Parser::new_ext(body, crate::markdown::options()) {
        match event {
            Event::Text(t) | Event::Code(t) => raw.push_str(&t),
            Event::SoftBreak
            | Event::HardBreak
            | Event::End(
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::Item
                | TagEnd::CodeBlock
                | TagEnd::TableCell,
            ) => raw.push(' '),
            _ => {}
        }
        if raw.len() > LIMIT * 8 {
            break;
        }
    }
    let text = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = text.trim();
    if text.is_empty() {
        return format!("{title}, a page on agent-pages.");
    }
    if text.chars().count() <= LIMIT {
        return text.to_owned();
    }
    // Cut at the last word boundary that fits (mid-word only for one huge word).
    let cut: String = text.chars().take(LIMIT).collect();
    let cut = match cut.rfind(' ') {
        Some(space) if space > 0 => &cut[..space],
        _ => cut.as_str(),
    };
    let cut: String = cut.trim_end().chars().take(LIMIT - 1).collect();
    format!("{cut}…")
}

/// `GET /p/{slug}`: the page with its body rendered from Markdown (once per
/// version), or the 404 page for an unknown or non-candidate slug.
pub async fn page(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
) -> HttpResponse {
    match find(&state, slug.into_inner()).await {
        Ok(Some(p)) => {
            let body_html = state.pages.markdown.get_or_render(p.id, p.version, &p.body);
            let context = PageContext {
                meta_description: description(&p.title, &p.body),
                og_title: p.title.clone(),
                page: PageView {
                    has_body: !p.body.trim().is_empty(),
                    body_html: body_html.to_string(),
                    slug: p.slug,
                    title: p.title,
                    version: p.version,
                    updated_at: format_time(p.updated_at),
                },
            };
            render(&state, &req, StatusCode::OK, "page.html", context)
        }
        Ok(None) => page_not_found(&state, &req),
        Err(e) => internal_error(&state, &req, e),
    }
}

/// `GET /p/{slug}/raw`: the body as `text/plain; charset=utf-8`.
pub async fn raw(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
) -> HttpResponse {
    match find(&state, slug.into_inner()).await {
        Ok(Some(p)) => HttpResponse::Ok()
            .content_type("text/plain; charset=utf-8")
            .insert_header(("X-Content-Type-Options", "nosniff"))
            .body(p.body),
        Ok(None) => page_not_found(&state, &req),
        Err(e) => internal_error(&state, &req, e),
    }
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

/// The page store failed: 503 with `Retry-After` when it cannot answer now (down,
/// busy; the store logs the incident once), else 500.
fn internal_error(state: &AppState, req: &HttpRequest, e: PageStoreError) -> HttpResponse {
    if let PageStoreError::Unavailable(_) | PageStoreError::Busy(_) = e {
        let mut page = error_page(
            state,
            req,
            StatusCode::SERVICE_UNAVAILABLE,
            "The pages are briefly unavailable. Please try again in a moment.",
        );
        page.headers_mut().insert(
            actix_web::http::header::RETRY_AFTER,
            actix_web::http::header::HeaderValue::from_static("5"),
        );
        return page;
    }
    tracing::error!(error = %e, "database error");
    error_page(
        state,
        req,
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong on our side. Please try again.",
    )
}

#[cfg(test)]
mod tests {
    use super::description;

    #[test]
    fn descriptions_are_the_body_text_cut_at_160_characters() {
        assert_eq!(
            description(
                "T",
                "# Intro\n\nSome **bold** text\nover lines.\n\n| a | b |\n|---|---|\n| 1 | 2 |"
            ),
            "Intro Some bold text over lines. a b 1 2"
        );
        assert_eq!(description("Notes", "  "), "Notes, a page on agent-pages.");
        let long = description("T", &"words ".repeat(100));
        assert!(long.chars().count() <= 160, "{long}");
        assert!(long.ends_with(" words…"), "{long}");
        let one_word = description("T", &"x".repeat(500));
        assert_eq!(one_word.chars().count(), 160);
    }
}
