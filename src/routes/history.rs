//! The HTML face of page history (issue 32 §1): `/p/{slug}/history` (the kept
//! versions, newest first) and `/p/{slug}/v/{n}` (one version, its body rendered as
//! every page's is, and a line diff of its body to the kept version before it).
//! Visibility as the API's ([`crate::operations::history::readable`]): a gone
//! page's history is 404 unless the request carries its PIN in `X-Page-Pin`.
//! Every text reaches the page through the templates' autoescaping, the diff's
//! lines included; only the sanitized Markdown HTML is inserted as it is.

use actix_web::http::header::{HeaderValue, RETRY_AFTER};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use similar::{ChangeTag, TextDiff};

use crate::domain::PageSlug;
use crate::http::page_request::PageRequest;
use crate::http::preconditions::Validators;
use crate::operations::error::ApiError;
use crate::operations::history;
use crate::operations::history::VersionList;
use crate::operations::types::ListQuery;
use crate::page_store::PageVersion;
use crate::routes::{error_page, render};
use crate::state::AppState;
use crate::templates::format_time;

/// Versions on one page of `/p/{slug}/history`.
pub const HISTORY_PAGE_SIZE: i64 = 50;

#[derive(Serialize)]
struct Row {
    version: i64,
    title: String,
    kind: &'static str,
    created_at: String,
}

#[derive(Serialize)]
struct HistoryContext {
    slug: String,
    /// The newest version's title.
    title: String,
    versions: Vec<Row>,
    total: i64,
    kept: i64,
    page_no: i64,
    prev_page: Option<i64>,
    next_page: Option<i64>,
}

/// One line of a diff: `equal`, `insert` or `delete`, and its text without the
/// line break.
#[derive(Debug, PartialEq, Eq, Serialize)]
pub struct DiffLine {
    pub tag: &'static str,
    pub text: String,
}

#[derive(Serialize)]
struct VersionContext {
    slug: String,
    version: i64,
    title: String,
    kind: &'static str,
    created_at: String,
    has_body: bool,
    body_html: String,
    /// The kept version the diff is against, if any.
    previous: Option<i64>,
    /// The previous version's title when it differs.
    old_title: Option<String>,
    unchanged: bool,
    diff: Vec<DiffLine>,
    meta_description: String,
    og_title: String,
}

/// The line diff of `old` to `new` (Myers, as `similar` computes it).
pub fn line_diff(old: &str, new: &str) -> Vec<DiffLine> {
    TextDiff::from_lines(old, new)
        .iter_all_changes()
        .map(|change| DiffLine {
            tag: match change.tag() {
                ChangeTag::Equal => "equal",
                ChangeTag::Insert => "insert",
                ChangeTag::Delete => "delete",
            },
            text: change
                .value()
                .trim_end_matches('\n')
                .trim_end_matches('\r')
                .to_owned(),
        })
        .collect()
}

/// `GET /p/{slug}/history?page=N`.
pub async fn history(page: PageRequest, query: web::Query<ListQuery>) -> HttpResponse {
    let (state, req) = (page.state(), page.req());
    let query = ListQuery {
        page: query.page.clone(),
        per_page: Some(HISTORY_PAGE_SIZE.to_string()),
    };
    let listed = match history::versions(page.call(), &query).await {
        Ok(listed) => listed,
        Err(e) => return failed(state, req, e),
    };
    let (n, per_page) = (listed.list.page, listed.list.per_page);
    Validators::history(listed.newest, n, per_page, state.clock.now())
        .html(crate::routes::theme(req))
        .pin_gated(req)
        .respond(req, || async { render_history(state, req, listed.list) })
        .await
}

fn render_history(state: &AppState, req: &HttpRequest, listed: VersionList) -> HttpResponse {
    let title = match listed.versions.first() {
        Some(v) if listed.page == 1 => v.title.clone(),
        _ => listed.slug.clone(),
    };
    let context = HistoryContext {
        title,
        versions: listed
            .versions
            .into_iter()
            .map(|v| Row {
                version: v.version,
                title: v.title,
                kind: v.kind.as_str(),
                created_at: format_time(v.created_at),
            })
            .collect(),
        slug: listed.slug,
        total: listed.total,
        kept: state.pages.store.history_versions(),
        page_no: listed.page,
        prev_page: (listed.page > 1).then(|| listed.page - 1),
        next_page: listed.next_page,
    };
    render(state, req, StatusCode::OK, "history.html", context)
}

/// `GET /p/{slug}/v/{n}`.
pub async fn version(page: PageRequest) -> HttpResponse {
    let (state, req) = (page.state(), page.req());
    let found = history::version(&page.call(), page.version(), true).await;
    let (slug, v, previous) = match found {
        Ok(found) => found,
        Err(e) => return failed(state, req, e),
    };
    let before = previous.as_ref().map(|p| p.version);
    Validators::version_with_diff(v.version, before, v.created_at, state.clock.now())
        .html(crate::routes::theme(req))
        .pin_gated(req)
        .respond(req, || render_version(state, req, slug, v, previous))
        .await
}

async fn render_version(
    state: &AppState,
    req: &HttpRequest,
    slug: PageSlug,
    v: PageVersion,
    previous: Option<PageVersion>,
) -> HttpResponse {
    let old_body = previous.as_ref().map_or("", |p| p.body.as_str());
    let unchanged = previous.is_some() && old_body == v.body;
    let diff = if unchanged {
        Vec::new()
    } else {
        line_diff(old_body, &v.body)
    };
    let id = state
        .pages
        .store
        .pin_record(slug.as_str())
        .await
        .ok()
        .flatten()
        .map(|r| r.id);
    // Versions never change: one rendering per (page, version), shared with `/p/`.
    let rendered = match id {
        Some(id) => Some(
            state
                .pages
                .markdown
                .rendered(id, v.version, v.body.clone())
                .await,
        ),
        None => None,
    };
    let context = VersionContext {
        has_body: !v.body.trim().is_empty(),
        body_html: rendered
            .as_ref()
            .map(|r| r.html.clone())
            .unwrap_or_default(),
        meta_description: format!(
            "Version {} of {}, a page on agent-pages.",
            v.version, v.title
        ),
        og_title: v.title.clone(),
        old_title: previous
            .as_ref()
            .filter(|p| p.title != v.title)
            .map(|p| p.title.clone()),
        previous: previous.as_ref().map(|p| p.version),
        unchanged,
        diff,
        slug: slug.to_string(),
        version: v.version,
        title: v.title,
        kind: v.kind.as_str(),
        created_at: format_time(v.created_at),
    };
    render(state, req, StatusCode::OK, "version.html", context)
}

/// The HTML page for an operation's error: its status, and a sentence for it.
fn failed(state: &AppState, req: &HttpRequest, e: ApiError) -> HttpResponse {
    let problem = e.problem();
    let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let message = match status {
        StatusCode::NOT_FOUND => {
            "No page has this address, or it was archived or claimed, or its history keeps no such version."
        }
        StatusCode::BAD_REQUEST => "The page number must be a whole number from 1.",
        StatusCode::TOO_MANY_REQUESTS => "Too many wrong PINs: try again later.",
        StatusCode::FORBIDDEN => "This history needs the page's PIN.",
        s if s.is_server_error() && problem.retry_after.is_some() => {
            "The pages cannot be read right now. Please try again in a few seconds."
        }
        _ => "Something went wrong on our side. Please try again.",
    };
    let mut page = error_page(state, req, status, message);
    if let Some(seconds) = problem.retry_after {
        page.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(seconds));
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_marks_each_line_kept_added_or_removed() {
        let tags: Vec<(&str, String)> = line_diff("a\nb\nc\n", "a\nc\nd")
            .into_iter()
            .map(|l| (l.tag, l.text))
            .collect();
        assert_eq!(
            tags,
            [
                ("equal", "a".to_owned()),
                ("delete", "b".to_owned()),
                ("equal", "c".to_owned()),
                ("insert", "d".to_owned()),
            ]
        );
    }
}
