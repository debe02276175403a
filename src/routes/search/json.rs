//! The JSON answers (`Accept: application/json`): results on 200, RFC 9457 problem
//! details otherwise, with the statuses, types and titles of the outcome table.
//!
//! A 200 answer carries one page of results: `page` (as asked, from 1), `pages`
//! (how many there are), `truncated` (true when `results` does not hold every
//! match: more pages, or matches past the last page), `capped` (true when
//! matches exist past the last page: a scoring keeps `MAX_PAGES` pages) and
//! `close_matches` (true when a row of this page matched a word only as a close,
//! typo-corrected or prefix, match). Page 1 is what a search answered before
//! paging, with these fields added.

use actix_web::HttpResponse;
use serde::Serialize;

use super::{displayed_rows, has_close_matches, Outcome, PageInfo};
use crate::actors::cache::CachedResult;
use crate::routes::problem::Problem;
use crate::search::corpus::Snapshot;
use crate::state::AppState;

#[derive(Serialize)]
struct ResultRow {
    slug: String,
    title: String,
    /// 0–100, one decimal in HTML, two in JSON.
    score: f64,
    updated_at: i64,
    /// The matched words of `title` as `[start, end)` offsets in Unicode scalar
    /// values (what `Array.from(title)` indexes), sorted and disjoint.
    marks: Vec<[usize; 2]>,
}

/// Byte ranges of `title` as scalar-value offsets; a range that does not fit the
/// title (or overlaps the one before) is left out, as in the HTML answer.
fn char_marks(title: &str, ranges: &[std::ops::Range<usize>]) -> Vec<[usize; 2]> {
    let mut marks = Vec::with_capacity(ranges.len());
    let mut at = 0;
    for range in ranges {
        if range.start < at || title.get(range.clone()).is_none() {
            continue;
        }
        let start = title[..range.start].chars().count();
        let end = start + title[range.clone()].chars().count();
        marks.push([start, end]);
        at = range.end;
    }
    marks
}

#[derive(Serialize)]
struct JsonAnswer<'a> {
    query: &'a str,
    /// The `results` array of this page, serialized once per cache entry and page.
    results: &'a serde_json::value::RawValue,
    total: usize,
    truncated: bool,
    cache: &'static str,
    page: usize,
    pages: usize,
    capped: bool,
    close_matches: bool,
}

#[derive(Serialize)]
struct JsonShort<'a> {
    query: &'a str,
    results: [ResultRow; 0],
    total: usize,
    truncated: bool,
    message: &'a str,
}

/// The `results` array of page `page_no` of `result` over `snapshot`, as JSON text.
fn rows(result: &CachedResult, page_no: usize, snapshot: &Snapshot) -> String {
    let rows: Vec<ResultRow> = displayed_rows(result, page_no, snapshot)
        .map(|(row, page, marks)| ResultRow {
            slug: page.slug.to_owned(),
            title: page.title.to_owned(),
            score: (f64::from(row.score) * 100.0).round() / 100.0,
            updated_at: page.updated_at,
            marks: char_marks(page.title, &marks.ranges),
        })
        .collect();
    serde_json::to_string(&rows).expect("rows serialize")
}

pub(super) fn json_response(state: &AppState, outcome: &Outcome) -> HttpResponse {
    let kind = outcome.kind();
    match outcome {
        Outcome::Answered {
            display,
            page,
            result,
            snapshot,
            cache,
        } => {
            // The body depends on nothing else: a repeated search copies bytes.
            let variant = format!("json\u{0}{page}\u{0}{display}\u{0}{}", cache.as_str());
            let body = result.page(variant, || {
                let info = PageInfo::of(result, *page);
                let rows = result.json_rows(*page, || rows(result, *page, snapshot));
                let results: &serde_json::value::RawValue =
                    serde_json::from_str(rows).expect("rows are JSON");
                serde_json::to_string(&JsonAnswer {
                    query: display,
                    results,
                    total: result.result.total,
                    truncated: result.result.total > info.shown,
                    cache: cache.as_str(),
                    page: info.page,
                    pages: info.pages,
                    capped: info.capped,
                    close_matches: has_close_matches(result, *page, snapshot),
                })
            });
            match body {
                Ok(body) => HttpResponse::Ok()
                    .content_type("application/json")
                    .body(body),
                Err(e) => {
                    tracing::error!(error = %e, "search answer failed to serialize");
                    HttpResponse::InternalServerError().finish()
                }
            }
        }
        Outcome::TooShort { display } => HttpResponse::Ok().json(JsonShort {
            query: display,
            results: [],
            total: 0,
            truncated: false,
            message: kind.message,
        }),
        other => {
            let budget = &state.budgets.search;
            Problem {
                retry_after: other.retry_after(),
                ..Problem::new(
                    kind.status,
                    kind.problem_type.unwrap_or("/problems/internal"),
                    kind.title,
                    other.message(budget).into_owned(),
                )
            }
            .response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::char_marks;

    #[test]
    fn marks_count_scalar_values_not_bytes() {
        let title = "Café Kubernetes";
        // "Café" is bytes 0..5, "Kubernetes" bytes 6..16.
        assert_eq!(char_marks(title, &[0..5, 6..16]), vec![[0, 4], [5, 15]]);
        // A range that ends inside "é" does not fit the title.
        let inside = std::iter::once(0..4).collect::<Vec<_>>();
        assert_eq!(char_marks(title, &inside), Vec::<[usize; 2]>::new());
    }
}
