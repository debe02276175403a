//! From an [`Outcome`] to a response: status, the headers every search answer
//! carries, the one log event per search, and the choice of HTML or JSON body.

use std::time::Instant;

use actix_web::http::{header, StatusCode};
use actix_web::{HttpRequest, HttpResponse};

use super::{html, json, CacheStatus, Outcome, Trace};
use crate::search::budget::{self, Window};
use crate::startup::AppState;

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

/// `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-08..10
/// structured fields) on every answer that reached the budget: the remaining quota
/// `r` and the seconds `t` until each window ends; on a 429 the refusing window with
/// `r=0` and `t` equal to `Retry-After`.
pub(super) fn rate_limit_headers(
    state: &AppState,
    outcome: &Outcome,
    trace: &Trace,
    response: &mut HttpResponse,
) {
    let limits = (
        i64::from(state.search.rate_per_minute),
        i64::from(state.search.rate_per_hour),
    );
    let value = match (
        outcome,
        trace.spent_at,
        trace.minute_count,
        trace.hour_count,
    ) {
        (
            Outcome::Refused {
                window,
                retry_after,
                ..
            },
            ..,
        ) => {
            format!("\"{}\";r=0;t={retry_after}", window_name(*window))
        }
        (_, Some(now), Some(minute), Some(hour)) => {
            let left = |length: i64| budget::window_start(now, length) + length - now;
            format!(
                "\"minute\";r={};t={}, \"hour\";r={};t={}",
                (limits.0 - minute).max(0),
                left(budget::MINUTE),
                (limits.1 - hour).max(0),
                left(budget::HOUR)
            )
        }
        _ => return,
    };
    let policy = format!(
        "\"minute\";q={};w={}, \"hour\";q={};w={}",
        limits.0,
        budget::MINUTE,
        limits.1,
        budget::HOUR
    );
    let headers = response.headers_mut();
    for (name, value) in [("ratelimit-policy", policy), ("ratelimit", value)] {
        if let Ok(v) = header::HeaderValue::from_str(&value) {
            headers.insert(header::HeaderName::from_static(name), v);
        }
    }
}

fn window_name(window: Window) -> &'static str {
    match window {
        Window::Minute => "minute",
        Window::Hour => "hour",
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
    let (status, label) = status_of(outcome);
    state.metrics.count(label);
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let cache = match outcome {
        Outcome::Answered { cache, .. } => Some(cache.as_str()),
        _ => None,
    };
    tracing::info!(
        target: "agent_pages::search",
        outcome = label,
        status = status.as_u16(),
        bucket = trace.bucket.as_deref(),
        minute_count = trace.minute_count,
        hour_count = trace.hour_count,
        cache,
        latency_ms,
        "search"
    );
    if wants_json(req) {
        json::json_response(status, outcome)
    } else {
        html::html_response(state, req, status, outcome)
    }
}

/// The status and the outcome label (the `outcome` of the log event and metric;
/// one of [`crate::metrics::OUTCOMES`]).
fn status_of(outcome: &Outcome) -> (StatusCode, &'static str) {
    match outcome {
        Outcome::Missing => (StatusCode::SEE_OTHER, "303"),
        Outcome::Malformed(_) | Outcome::TooLong { .. } => (StatusCode::BAD_REQUEST, "400"),
        Outcome::TooShort { .. } => (StatusCode::OK, "short"),
        Outcome::Overloaded { .. } => (StatusCode::SERVICE_UNAVAILABLE, "503-admission"),
        Outcome::Refused {
            window: Window::Minute,
            ..
        } => (StatusCode::TOO_MANY_REQUESTS, "429-minute"),
        Outcome::Refused {
            window: Window::Hour,
            ..
        } => (StatusCode::TOO_MANY_REQUESTS, "429-hour"),
        Outcome::Busy { .. } => (StatusCode::SERVICE_UNAVAILABLE, "503-busy"),
        Outcome::Failed { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "500"),
        Outcome::Answered { cache, .. } => (StatusCode::OK, cache.as_str()),
    }
}

pub(super) const SHORT: &str = "Enter at least 2 characters.";

pub(super) const TOO_LONG: &str = "Search text can be at most 64 characters.";

pub(super) const BUSY: &str = "Search is busy right now.";

pub(super) const FAILED: &str = "Something went wrong with this search. Please try again.";

pub(super) fn refused_message(window: Window, retry_after: i64) -> String {
    let unit = if retry_after == 1 {
        "second"
    } else {
        "seconds"
    };
    format!(
        "Too many searches this {}: try again in {retry_after} {unit}.",
        window_name(window)
    )
}

pub(super) fn redirect_home() -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, "/"))
        .finish()
}

pub(super) fn with_retry_after(mut response: HttpResponse, seconds: i64) -> HttpResponse {
    response.headers_mut().insert(
        header::RETRY_AFTER,
        header::HeaderValue::from(seconds.max(1)),
    );
    response
}

pub(super) fn with_cache_header(mut response: HttpResponse, cache: CacheStatus) -> HttpResponse {
    response.headers_mut().insert(
        header::HeaderName::from_static("x-search-cache"),
        header::HeaderValue::from_static(cache.as_str()),
    );
    response
}
