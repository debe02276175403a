//! The HTML answers: `search.html` for every outcome, with the form kept and matched
//! words marked (each run escaped by the template). The result table is rendered
//! once per cache entry (`search_rows.html`) and reused by every hit.

use actix_web::{HttpRequest, HttpResponse};
use serde::Serialize;

use super::{displayed_rows, Outcome};
use crate::routes::{render, render_html};
use crate::state::AppState;
use crate::templates::format_time;

#[derive(Serialize)]
struct SearchContext<'a> {
    q: &'a str,
    /// The notice style of the outcome table (`results`, `short`, `busy`, …).
    outcome: &'static str,
    /// The situation's name, for the page title and heading.
    heading: &'static str,
    message: String,
    retry_after: Option<i64>,
    /// On a 429, the name of the refusing window (`minute`, `hour`, …).
    window: Option<&'a str>,
    /// The rendered result table (escaped when it was rendered); empty without rows.
    rows_html: &'a str,
    total: usize,
    shown: usize,
    truncated: bool,
    cache: Option<&'static str>,
}

#[derive(Serialize)]
struct TableRow {
    slug: String,
    /// The title cut into runs, `mark` on the words the query matched; the template
    /// escapes each run's text and wraps marked runs in `<mark>`.
    title: Vec<TitleRun>,
    score: String,
    updated_at: String,
}

#[derive(Serialize)]
struct TitleRun {
    text: String,
    mark: bool,
}

/// Cuts `title` at `ranges` (sorted, disjoint byte ranges on char boundaries, from
/// [`crate::search::rank::highlight`]); a range that does not fit the title is ignored.
fn highlighted(title: &str, ranges: &[std::ops::Range<usize>]) -> Vec<TitleRun> {
    let mut runs = Vec::new();
    let mut at = 0;
    for range in ranges {
        if range.start < at || title.get(range.clone()).is_none() {
            continue;
        }
        if range.start > at {
            runs.push(TitleRun {
                text: title[at..range.start].to_owned(),
                mark: false,
            });
        }
        runs.push(TitleRun {
            text: title[range.clone()].to_owned(),
            mark: true,
        });
        at = range.end;
    }
    if at < title.len() {
        runs.push(TitleRun {
            text: title[at..].to_owned(),
            mark: false,
        });
    }
    runs
}

pub(super) fn html_response(
    state: &AppState,
    req: &HttpRequest,
    outcome: &Outcome,
) -> HttpResponse {
    let kind = outcome.kind();
    let mut ctx = SearchContext {
        q: outcome.display(),
        outcome: kind.notice,
        heading: kind.title,
        message: outcome.message(&state.budgets.search).into_owned(),
        retry_after: outcome.retry_after(),
        window: match outcome {
            Outcome::Refused { window, .. } => state
                .budgets
                .search
                .windows
                .get(*window)
                .map(|w| w.name.as_ref()),
            _ => None,
        },
        rows_html: "",
        total: 0,
        shown: 0,
        truncated: false,
        cache: None,
    };
    if let Outcome::Answered {
        result,
        snapshot,
        cache,
        ..
    } = outcome
    {
        let shown = result.result.rows.len();
        ctx.rows_html = result.html_rows(|| rows_html(state, result, snapshot));
        ctx.shown = shown;
        ctx.total = result.result.total;
        ctx.truncated = result.result.truncated;
        ctx.cache = Some(cache.as_str());
        // The page depends on nothing else: a repeated search is a copy of bytes.
        let variant = format!(
            "{}\u{0}{}\u{0}{}",
            crate::routes::page_variant(req),
            ctx.q,
            cache.as_str()
        );
        return match result.page(variant, || render_html(state, req, "search.html", &ctx)) {
            Ok(body) => HttpResponse::build(kind.status)
                .content_type("text/html; charset=utf-8")
                .body(body),
            Err(failed) => failed,
        };
    }
    render(state, req, kind.status, "search.html", ctx)
}

#[derive(Serialize)]
struct RowsContext {
    results: Vec<TableRow>,
}

/// The result table of `result` over `snapshot`, rendered once per cache entry; a
/// template error is logged and leaves the table out.
fn rows_html(
    state: &AppState,
    result: &crate::actors::cache::CachedResult,
    snapshot: &crate::search::corpus::Snapshot,
) -> String {
    let results = displayed_rows(&result.result, snapshot)
        .map(|(row, page, marks)| TableRow {
            slug: page.slug.clone(),
            title: highlighted(&page.title, marks),
            score: format!("{:.1}", row.score),
            updated_at: format_time(page.updated_at),
        })
        .collect();
    let ctx = match tera::Context::from_serialize(RowsContext { results }) {
        Ok(ctx) => ctx,
        Err(e) => {
            tracing::error!(error = ?e, "result rows context failed");
            return String::new();
        }
    };
    state
        .templates
        .render("search_rows.html", &ctx)
        .unwrap_or_else(|e| {
            tracing::error!(error = ?e, "result rows failed to render");
            String::new()
        })
}
