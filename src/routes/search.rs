//! `GET /search?q=…`: the five gates in order, then one response per outcome.
//!
//! [`run`] walks the gates and returns an [`Outcome`]; [`respond`] maps each outcome
//! to its status, headers and body (HTML, or JSON when the client accepts it). The
//! query text never reaches a log line: the event at the end records the outcome,
//! status, a prefix of the hashed bucket key, counters, cache status and latency.

use std::sync::Arc;
use std::time::Instant;

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;

use crate::actors::{cache, rate_limiter};
use crate::routes::render;
use crate::search::budget::{self, Window};
use crate::search::client_ip::BucketKeys;
use crate::search::corpus::Snapshot;
use crate::search::query::{Gate1, SearchQuery};
use crate::search::rank::SearchResult;
use crate::startup::AppState;
use crate::templates::format_time;

/// Whether the answer came from the LRU or from a scoring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    Hit,
    Miss,
}

impl CacheStatus {
    fn as_str(self) -> &'static str {
        match self {
            CacheStatus::Hit => "hit",
            CacheStatus::Miss => "miss",
        }
    }
}

/// How a search request ended; one variant per row of SPEC §5's outcome matrix.
pub enum Outcome {
    /// `q` missing or blank: 303 to `/`.
    Missing,
    /// `q` undecodable or repeated: 400, nothing to show in the form.
    Malformed(&'static str),
    /// Raw or normalized `q` over 64 chars: 400, form kept.
    TooLong { display: String },
    /// Normalized under 2 chars: 200 with guidance, no scan.
    TooShort { display: String },
    /// A window is full: 429 with `Retry-After`.
    Refused {
        display: String,
        window: Window,
        retry_after: i64,
    },
    /// Cache miss with no free scorer: 503 with `Retry-After: 1`.
    Busy { display: String },
    /// Scoring panicked, or the database failed: 500.
    Failed { display: String },
    /// Scored or found in the cache: 200.
    Answered {
        display: String,
        result: Arc<SearchResult>,
        snapshot: Arc<Snapshot>,
        cache: CacheStatus,
    },
}

/// What the search event records beside the outcome; never the query.
#[derive(Default)]
struct Trace {
    bucket: Option<String>,
    minute_count: Option<i64>,
    hour_count: Option<i64>,
}

/// The handler.
pub async fn search(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let started = Instant::now();
    let mut trace = Trace::default();
    let outcome = run(&state, &req, &mut trace).await;
    let response = respond(&state, &req, outcome, &trace, started);
    with_search_headers(response)
}

async fn run(state: &AppState, req: &HttpRequest, trace: &mut Trace) -> Outcome {
    // Gate 1: validation, spends nothing.
    let query = match SearchQuery::parse(req.query_string()) {
        Gate1::Valid(q) => q,
        Gate1::Missing => return Outcome::Missing,
        Gate1::Malformed(why) => return Outcome::Malformed(why),
        Gate1::TooLong { display } | Gate1::NormalizedTooLong { display } => {
            return Outcome::TooLong { display }
        }
        Gate1::TooShort { display } => return Outcome::TooShort { display },
    };
    let display = query.display().to_owned();

    // Gate 2: identity.
    let keys = client_keys(state, req);
    trace.bucket = Some(keys.log_prefix().to_owned());

    // Gates 3/4: both windows in one transaction.
    let now = state.clock.now();
    match state
        .rate_limiter
        .send(rate_limiter::Spend { keys, now })
        .await
    {
        Ok(Ok(budget::Spend::Admitted {
            minute_count,
            hour_count,
        })) => {
            trace.minute_count = Some(minute_count);
            trace.hour_count = Some(hour_count);
        }
        Ok(Ok(budget::Spend::Refused {
            window,
            retry_after,
        })) => {
            return Outcome::Refused {
                display,
                window,
                retry_after,
            };
        }
        Ok(Err(e)) => {
            tracing::error!(error = %e, "budget transaction failed");
            return Outcome::Failed { display };
        }
        Err(e) => {
            tracing::error!(error = %e, "rate limiter unavailable");
            return Outcome::Failed { display };
        }
    }

    // Gate 5: the candidates as a fresh fetch would see them, then the cache.
    let snapshot = match state.corpus.current().await {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "candidate fetch failed");
            return Outcome::Failed { display };
        }
    };
    let key = cache::CacheKey {
        match_copy: query.match_copy().to_owned(),
        fingerprint: snapshot.fingerprint,
    };
    if let Ok(Some(result)) = state.cache.send(cache::Get(key.clone())).await {
        return Outcome::Answered {
            display,
            result,
            snapshot,
            cache: CacheStatus::Hit,
        };
    }

    // A miss needs a free scorer, now or never.
    let Ok(slot) = state.scorers.try_acquire() else {
        return Outcome::Busy { display };
    };
    let scored = state
        .scorers
        .score(
            slot,
            key.match_copy.clone(),
            snapshot.clone(),
            state.search.result_limit,
        )
        .await;
    match scored {
        Ok(result) => {
            state.cache.do_send(cache::Put(key, result.clone()));
            Outcome::Answered {
                display,
                result,
                snapshot,
                cache: CacheStatus::Miss,
            }
        }
        Err(e) => {
            tracing::error!(error = %e, "scoring failed");
            Outcome::Failed { display }
        }
    }
}

/// Gate 2 on this request: the socket peer, or the client a trusted proxy names.
fn client_keys(state: &AppState, req: &HttpRequest) -> BucketKeys {
    crate::routes::client_ip(req, &state.trusted_proxies).bucket_keys()
}

fn with_search_headers(mut response: HttpResponse) -> HttpResponse {
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

#[derive(Serialize)]
struct ResultRow {
    slug: String,
    title: String,
    /// 0–100, one decimal in HTML, two in JSON.
    score: f64,
    updated_at: i64,
}

fn rows(result: &SearchResult, snapshot: &Snapshot) -> Vec<ResultRow> {
    // Cached ids map onto the freshly fetched display fields; an id is always there
    // because the fingerprint (ids and versions) matched.
    result
        .rows
        .iter()
        .filter_map(|r| {
            snapshot.page(r.page_id).map(|p| ResultRow {
                slug: p.slug.clone(),
                title: p.title.clone(),
                score: (f64::from(r.score) * 100.0).round() / 100.0,
                updated_at: p.updated_at,
            })
        })
        .collect()
}

fn respond(
    state: &AppState,
    req: &HttpRequest,
    outcome: Outcome,
    trace: &Trace,
    started: Instant,
) -> HttpResponse {
    let json = wants_json(req);
    let (status, label) = status_of(&outcome);
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let cache = match &outcome {
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
    if json {
        json_response(status, outcome)
    } else {
        html_response(state, req, status, outcome)
    }
}

fn status_of(outcome: &Outcome) -> (StatusCode, &'static str) {
    match outcome {
        Outcome::Missing => (StatusCode::SEE_OTHER, "missing"),
        Outcome::Malformed(_) => (StatusCode::BAD_REQUEST, "malformed"),
        Outcome::TooLong { .. } => (StatusCode::BAD_REQUEST, "too_long"),
        Outcome::TooShort { .. } => (StatusCode::OK, "too_short"),
        Outcome::Refused {
            window: Window::Minute,
            ..
        } => (StatusCode::TOO_MANY_REQUESTS, "refused_minute"),
        Outcome::Refused {
            window: Window::Hour,
            ..
        } => (StatusCode::TOO_MANY_REQUESTS, "refused_hour"),
        Outcome::Busy { .. } => (StatusCode::SERVICE_UNAVAILABLE, "busy"),
        Outcome::Failed { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "failed"),
        Outcome::Answered {
            cache: CacheStatus::Hit,
            ..
        } => (StatusCode::OK, "hit"),
        Outcome::Answered {
            cache: CacheStatus::Miss,
            ..
        } => (StatusCode::OK, "miss"),
    }
}

const SHORT: &str = "Enter at least 2 characters.";
const TOO_LONG: &str = "Search text can be at most 64 characters.";
const BUSY: &str = "Search is busy right now: try again in a moment.";
const FAILED: &str = "Something went wrong with this search. Please try again.";

fn refused_message(window: Window, retry_after: i64) -> String {
    let which = match window {
        Window::Minute => "this minute",
        Window::Hour => "this hour",
    };
    let unit = if retry_after == 1 {
        "second"
    } else {
        "seconds"
    };
    format!("Too many searches {which}: try again in {retry_after} {unit}.")
}

#[derive(Serialize)]
struct SearchContext<'a> {
    q: &'a str,
    outcome: &'static str,
    message: String,
    retry_after: Option<i64>,
    results: Vec<TableRow>,
    total: usize,
    shown: usize,
    truncated: bool,
    cache: Option<&'static str>,
}

#[derive(Serialize)]
struct TableRow {
    slug: String,
    title: String,
    score: String,
    updated_at: String,
}

impl<'a> SearchContext<'a> {
    fn notice(q: &'a str, outcome: &'static str, message: impl Into<String>) -> Self {
        Self {
            q,
            outcome,
            message: message.into(),
            retry_after: None,
            results: Vec::new(),
            total: 0,
            shown: 0,
            truncated: false,
            cache: None,
        }
    }
}

fn html_response(
    state: &AppState,
    req: &HttpRequest,
    status: StatusCode,
    outcome: Outcome,
) -> HttpResponse {
    let page = |ctx: SearchContext<'_>| render(state, req, status, "search.html", ctx);
    match outcome {
        Outcome::Missing => redirect_home(),
        Outcome::Malformed(why) => page(SearchContext::notice(
            "",
            "invalid",
            format!("This search could not be read: {why}."),
        )),
        Outcome::TooLong { display } => page(SearchContext::notice(&display, "invalid", TOO_LONG)),
        Outcome::TooShort { display } => page(SearchContext::notice(&display, "short", SHORT)),
        Outcome::Refused {
            display,
            window,
            retry_after,
        } => {
            let mut ctx = SearchContext::notice(
                &display,
                "rate_limited",
                refused_message(window, retry_after),
            );
            ctx.retry_after = Some(retry_after);
            with_retry_after(page(ctx), retry_after)
        }
        Outcome::Busy { display } => {
            let mut ctx = SearchContext::notice(&display, "busy", BUSY);
            ctx.retry_after = Some(1);
            with_retry_after(page(ctx), 1)
        }
        Outcome::Failed { display } => page(SearchContext::notice(&display, "error", FAILED)),
        Outcome::Answered {
            display,
            result,
            snapshot,
            cache,
        } => {
            let results: Vec<TableRow> = rows(&result, &snapshot)
                .into_iter()
                .map(|r| TableRow {
                    slug: r.slug,
                    title: r.title,
                    score: format!("{:.1}", r.score),
                    updated_at: format_time(r.updated_at),
                })
                .collect();
            let ctx = SearchContext {
                q: &display,
                outcome: "results",
                message: String::new(),
                retry_after: None,
                shown: results.len(),
                results,
                total: result.total,
                truncated: result.truncated,
                cache: Some(cache.as_str()),
            };
            with_cache_header(page(ctx), cache)
        }
    }
}

#[derive(Serialize)]
struct JsonAnswer<'a> {
    query: &'a str,
    results: Vec<ResultRow>,
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
    message: &'static str,
}

/// RFC 9457 problem details.
#[derive(Serialize)]
struct Problem {
    #[serde(rename = "type")]
    kind: &'static str,
    title: &'static str,
    status: u16,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after: Option<i64>,
}

fn problem(
    status: StatusCode,
    kind: &'static str,
    title: &'static str,
    detail: String,
    retry_after: Option<i64>,
) -> HttpResponse {
    let body = Problem {
        kind,
        title,
        status: status.as_u16(),
        detail,
        retry_after,
    };
    let response = HttpResponse::build(status)
        .content_type("application/problem+json")
        .json(body);
    match retry_after {
        Some(seconds) => with_retry_after(response, seconds),
        None => response,
    }
}

fn json_response(status: StatusCode, outcome: Outcome) -> HttpResponse {
    match outcome {
        Outcome::Missing => redirect_home(),
        Outcome::Malformed(why) => problem(
            status,
            "/problems/invalid-query",
            "Invalid search query",
            format!("{why}."),
            None,
        ),
        Outcome::TooLong { .. } => problem(
            status,
            "/problems/invalid-query",
            "Invalid search query",
            TOO_LONG.into(),
            None,
        ),
        Outcome::TooShort { display } => HttpResponse::Ok().json(JsonShort {
            query: &display,
            results: [],
            total: 0,
            truncated: false,
            message: SHORT,
        }),
        Outcome::Refused {
            window,
            retry_after,
            ..
        } => problem(
            status,
            "/problems/rate-limited",
            "Too many searches",
            refused_message(window, retry_after),
            Some(retry_after),
        ),
        Outcome::Busy { .. } => problem(
            status,
            "/problems/search-busy",
            "Search is busy",
            BUSY.into(),
            Some(1),
        ),
        Outcome::Failed { .. } => problem(
            status,
            "/problems/internal",
            "Search failed",
            FAILED.into(),
            None,
        ),
        Outcome::Answered {
            display,
            result,
            snapshot,
            cache,
        } => {
            let body = JsonAnswer {
                query: &display,
                results: rows(&result, &snapshot),
                total: result.total,
                truncated: result.truncated,
                cache: cache.as_str(),
            };
            with_cache_header(HttpResponse::Ok().json(body), cache)
        }
    }
}

fn redirect_home() -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, "/"))
        .finish()
}

fn with_retry_after(mut response: HttpResponse, seconds: i64) -> HttpResponse {
    response.headers_mut().insert(
        header::RETRY_AFTER,
        header::HeaderValue::from(seconds.max(1)),
    );
    response
}

fn with_cache_header(mut response: HttpResponse, cache: CacheStatus) -> HttpResponse {
    response.headers_mut().insert(
        header::HeaderName::from_static("x-search-cache"),
        header::HeaderValue::from_static(cache.as_str()),
    );
    response
}
