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

use serde::Serialize;

use super::rendered::Rendered;
use super::{displayed_rows, has_close_matches, Outcome, PageInfo};
use crate::operations::problem::Problem;
use crate::search::cache::CachedResult;
use crate::search::corpus::Snapshot;
use crate::state::AppState;
use crate::templates::PageKey;

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

/// A search's JSON answer before it is a response: the body of a 200 (results, or
/// the too-short guidance), or a problem document.
pub enum JsonReply {
    /// `application/json` with status 200.
    Ok(actix_web::web::Bytes),
    /// `application/problem+json` with the problem's status.
    Problem(Problem),
}

/// The JSON answer to `outcome` (not [`Outcome::Missing`], which is a redirect).
pub fn json_answer(state: &AppState, outcome: &Outcome) -> Result<JsonReply, serde_json::Error> {
    let kind = outcome.kind();
    match outcome {
        Outcome::Answered {
            display,
            page,
            entry,
            snapshot,
            cache,
        } => {
            let (result, rendered) = (&entry.result, Rendered::of(entry));
            // The body depends on nothing else: a repeated search copies bytes.
            let variant = PageKey::Json {
                page: *page,
                display: display.clone(),
                cache: cache.as_str(),
            };
            let body = rendered.page(variant, || {
                let info = PageInfo::of(result, *page);
                let rows = rendered.json_rows(*page, || rows(result, *page, snapshot));
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
            body.map(JsonReply::Ok)
        }
        Outcome::TooShort { display } => Ok(JsonReply::Ok(
            serde_json::to_string(&JsonShort {
                query: display,
                results: [],
                total: 0,
                truncated: false,
                message: kind.message,
            })?
            .into(),
        )),
        other => {
            let budget = &state.budgets.search;
            Ok(JsonReply::Problem(Problem {
                retry_after: other.retry_after(),
                ..Problem::new(
                    kind.status,
                    kind.problem_type.unwrap_or("/problems/internal"),
                    kind.title,
                    other.message(budget).into_owned(),
                )
            }))
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
