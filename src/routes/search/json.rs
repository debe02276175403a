//! The JSON answers (`Accept: application/json`): results on 200, RFC 9457 problem
//! details otherwise, with the statuses, types and titles of the outcome table.

use actix_web::HttpResponse;
use serde::Serialize;

use super::{displayed_rows, Outcome};
use crate::routes::problem::Problem;
use crate::search::corpus::Snapshot;
use crate::search::rank::SearchResult;
use crate::state::AppState;

#[derive(Serialize)]
struct ResultRow {
    slug: String,
    title: String,
    /// 0–100, one decimal in HTML, two in JSON.
    score: f64,
    updated_at: i64,
}

#[derive(Serialize)]
struct JsonAnswer<'a> {
    query: &'a str,
    /// The `results` array, serialized once per cache entry.
    results: &'a serde_json::value::RawValue,
    total: usize,
    truncated: bool,
    cache: &'static str,
}

#[derive(Serialize)]
struct JsonShort<'a> {
    query: &'a str,
    results: [ResultRow; 0],
    total: usize,
    truncated: bool,
    message: &'a str,
}

/// The `results` array of `result` over `snapshot`, as JSON text.
fn rows(result: &SearchResult, snapshot: &Snapshot) -> String {
    let rows: Vec<ResultRow> = displayed_rows(result, snapshot)
        .map(|(row, page, _)| ResultRow {
            slug: page.slug.clone(),
            title: page.title.clone(),
            score: (f64::from(row.score) * 100.0).round() / 100.0,
            updated_at: page.updated_at,
        })
        .collect();
    serde_json::to_string(&rows).expect("rows serialize")
}

pub(super) fn json_response(state: &AppState, outcome: &Outcome) -> HttpResponse {
    let kind = outcome.kind();
    match outcome {
        Outcome::Answered {
            display,
            result,
            snapshot,
            cache,
        } => {
            let rows = result.json_rows(|| rows(&result.result, snapshot));
            let results: &serde_json::value::RawValue =
                serde_json::from_str(rows).expect("rows are JSON");
            HttpResponse::Ok().json(JsonAnswer {
                query: display,
                results,
                total: result.result.total,
                truncated: result.result.truncated,
                cache: cache.as_str(),
            })
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
