//! From an [`Outcome`] to a response: status, the headers every search answer
//! carries, the one log event per search, and the choice of HTML or JSON body.
//! Status, label and words come from the outcome table ([`Outcome::kind`]).

use std::time::Instant;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};

use super::{html, json, Outcome, Trace};
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
    crate::routes::rate_limit_headers::insert(
        response,
        &state.budgets.policies.search,
        &state.budgets.search.state_header(decision),
    );
}

/// The new counts of an admitted spend as the search event shows them (`3/17`),
/// formatted only when the event is recorded.
struct Counts<'a>(&'a [crate::budget::WindowCount]);

impl std::fmt::Display for Counts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, w) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            write!(f, "{}", w.count)?;
        }
        Ok(())
    }
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

pub(super) fn respond(
    state: &AppState,
    req: &HttpRequest,
    outcome: &Outcome,
    trace: &Trace,
    started: Instant,
) -> HttpResponse {
    record(state, outcome, trace, started);
    if matches!(outcome, Outcome::Missing) {
        return HttpResponse::SeeOther()
            .insert_header((header::LOCATION, "/"))
            .finish();
    }
    let mut response = if wants_json(req) {
        json::json_response(state, outcome)
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

/// The one log event and metric of a search, whoever answers it (the route, or an
/// MCP tool call); never the query.
pub(super) fn record(state: &AppState, outcome: &Outcome, trace: &Trace, started: Instant) {
    let kind = outcome.kind();
    let label = outcome.label(&state.budgets.search);
    state.metrics.count(&label);
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let cache = match outcome {
        Outcome::Answered { cache, .. } => Some(cache.as_str()),
        _ => None,
    };
    let counts = trace.decision.as_ref().and_then(|d| match d {
        crate::budget::Decision::Admitted(c) => Some(Counts(c)),
        crate::budget::Decision::Refused { .. } => None,
    });
    tracing::info!(
        target: "agent_pages::search",
        outcome = &*label,
        status = kind.status.as_u16(),
        bucket = trace.bucket.as_deref(),
        counts = counts.as_ref().map(tracing::field::display),
        cache,
        latency_ms,
        "search"
    );
}
