//! The HTML answers: `search.html` for every outcome, with the form kept and matched
//! words marked (each run escaped by the template).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde::Serialize;

use super::respond::{
    redirect_home, refused_message, with_cache_header, with_retry_after, BUSY, FAILED, SHORT,
    TOO_LONG,
};
use super::{displayed_rows, Outcome};
use crate::routes::render;
use crate::startup::AppState;
use crate::templates::format_time;

#[derive(Serialize)]
struct SearchContext<'a> {
    q: &'a str,
    outcome: &'static str,
    message: String,
    retry_after: Option<i64>,
    /// `minute` or `hour` on a 429: the window that refused.
    window: Option<&'static str>,
    results: Vec<TableRow>,
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

impl<'a> SearchContext<'a> {
    fn notice(q: &'a str, outcome: &'static str, message: impl Into<String>) -> Self {
        Self {
            q,
            outcome,
            message: message.into(),
            retry_after: None,
            window: None,
            results: Vec::new(),
            total: 0,
            shown: 0,
            truncated: false,
            cache: None,
        }
    }

    fn retry(mut self, seconds: i64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    fn window(mut self, window: crate::search::budget::Window) -> Self {
        self.window = Some(match window {
            crate::search::budget::Window::Minute => "minute",
            crate::search::budget::Window::Hour => "hour",
        });
        self
    }
}

pub(super) fn html_response(
    state: &AppState,
    req: &HttpRequest,
    status: StatusCode,
    outcome: &Outcome,
) -> HttpResponse {
    let page = |ctx: SearchContext<'_>| render(state, req, status, "search.html", ctx);
    match outcome {
        Outcome::Missing => redirect_home(),
        Outcome::Malformed(why) => page(SearchContext::notice(
            "",
            "invalid",
            format!("This search could not be read: {why}."),
        )),
        Outcome::TooLong { display } => page(SearchContext::notice(display, "invalid", TOO_LONG)),
        Outcome::TooShort { display } => page(SearchContext::notice(display, "short", SHORT)),
        Outcome::Refused {
            display,
            window,
            retry_after,
        } => with_retry_after(
            page(
                SearchContext::notice(
                    display,
                    "rate_limited",
                    refused_message(*window, *retry_after),
                )
                .retry(*retry_after)
                .window(*window),
            ),
            *retry_after,
        ),
        Outcome::Busy { display } | Outcome::Overloaded { display } => with_retry_after(
            page(SearchContext::notice(display, "busy", BUSY).retry(1)),
            1,
        ),
        Outcome::Failed { display } => page(SearchContext::notice(display, "error", FAILED)),
        Outcome::Answered {
            display,
            result,
            snapshot,
            cache,
        } => {
            let results: Vec<TableRow> = displayed_rows(result, snapshot)
                .map(|(row, page, marks)| TableRow {
                    slug: page.slug.clone(),
                    title: highlighted(&page.title, marks),
                    score: format!("{:.1}", row.score),
                    updated_at: format_time(page.updated_at),
                })
                .collect();
            let ctx = SearchContext {
                q: display,
                outcome: "results",
                message: String::new(),
                retry_after: None,
                window: None,
                shown: results.len(),
                results,
                total: result.total,
                truncated: result.truncated,
                cache: Some(cache.as_str()),
            };
            with_cache_header(page(ctx), *cache)
        }
    }
}
