//! From an [`Outcome`] to a response: status, the headers every search answer
//! carries, and the choice of HTML or JSON body. Status, label and words come from
//! the outcome table ([`Outcome::kind`]).

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};

use super::html;
use crate::operations::search::{json::json_answer, JsonReply, Outcome, Trace};
use crate::state::AppState;

pub(super) fn with_search_headers(mut response: HttpResponse) -> HttpResponse {
    let headers = response.headers_mut();
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        header::HeaderValue::from_static("no-referrer"),
    );
    response
}

/// `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers
/// structured fields) on every answer that reached the budget; the budget formats
/// them (see [`crate::budget::Budget::state_header`]).
pub(super) fn rate_limit_headers(state: &AppState, trace: &Trace, response: &mut HttpResponse) {
    let Some(decision) = &trace.decision else {
        return;
    };
    crate::http::rate_limit_headers::insert(
        response,
        &state.budgets.policies.search,
        &state.budgets.search.state_header(decision),
    );
}

fn wants_json(req: &HttpRequest) -> bool {
    req.headers()
        .get_all(header::ACCEPT)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| {
            let media = v.split(';').next().unwrap_or("").trim();
            media.eq_ignore_ascii_case("application/json")
        })
}

pub(super) fn respond(state: &AppState, req: &HttpRequest, outcome: &Outcome) -> HttpResponse {
    if matches!(outcome, Outcome::Missing) {
        return HttpResponse::SeeOther()
            .insert_header((header::LOCATION, "/"))
            .finish();
    }
    let mut response = if wants_json(req) {
        json_response(state, outcome)
    } else {
        html::html_response(state, req, outcome)
    };
    if let Some(seconds) = outcome.retry_after() {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
    }
    if let Outcome::Answered { cache, .. } = outcome {
        response.headers_mut().insert(
            header::HeaderName::from_static("x-search-cache"),
            header::HeaderValue::from_static(cache.as_str()),
        );
    }
    response
}

fn json_response(state: &AppState, outcome: &Outcome) -> HttpResponse {
    match json_answer(state, outcome) {
        Ok(JsonReply::Ok(body)) => HttpResponse::Ok()
            .content_type("application/json")
            .body(body),
        Ok(JsonReply::Problem(problem)) => crate::http::problem::response(problem),
        Err(e) => {
            tracing::error!(error = %e, "search answer failed to serialize");
            HttpResponse::InternalServerError().finish()
        }
    }
}
