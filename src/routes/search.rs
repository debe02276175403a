//! `GET /search?q=…`: the five gates in order, then one response per outcome.
//!
//! [`run`] walks the gates and returns an [`Outcome`]; [`respond`] maps each outcome
//! to its status, headers and body (HTML, or JSON when the client accepts it). After
//! gate 1 an admission permit bounds the requests in flight (503 before any budget
//! is spent when none is left); at gate 5 identical concurrent misses share one
//! scoring (single flight, `X-Search-Cache: join`).
//!
//! The query text never reaches a log line: the event at the end records the outcome,
//! status, a prefix of the hashed bucket key, counters, cache status and latency.

use std::sync::Arc;
use std::time::Instant;

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;

use crate::actors::cache::{self, Admission, CacheKey, FlightOutcome, ScoringFailed};
use crate::actors::rate_limiter;
use crate::actors::scorer::ScoringSlot;
use crate::routes::render;
use crate::search::budget::{self, Window};
use crate::search::client_ip::BucketKeys;
use crate::search::corpus::Snapshot;
use crate::search::query::{Gate1, SearchQuery};
use crate::search::rank::{self, SearchResult};
use crate::startup::AppState;
use crate::templates::format_time;

/// Where an answer came from: the LRU, a scoring this request led, or a scoring
/// another request led that this one joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    Hit,
    Miss,
    Join,
}

impl CacheStatus {
    fn as_str(self) -> &'static str {
        match self {
            CacheStatus::Hit => "hit",
            CacheStatus::Miss => "miss",
            CacheStatus::Join => "join",
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
    /// `SEARCH_MAX_IN_FLIGHT` valid searches are already in flight: 503 with
    /// `Retry-After: 1`, before any budget is spent.
    Overloaded { display: String },
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
        /// The match copy, for highlighting the matched words.
        match_copy: String,
        result: Arc<SearchResult>,
        snapshot: Arc<Snapshot>,
        cache: CacheStatus,
    },
}

/// What the search event and the rate-limit headers need beside the outcome;
/// never the query.
#[derive(Default)]
struct Trace {
    bucket: Option<String>,
    minute_count: Option<i64>,
    hour_count: Option<i64>,
    /// The time the budget was spent at, when gate 3/4 admitted the request.
    spent_at: Option<i64>,
}

/// The handler.
pub async fn search(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let started = Instant::now();
    let mut trace = Trace::default();
    let outcome = run(&state, &req, &mut trace).await;
    let mut response = respond(&state, &req, &outcome, &trace, started);
    rate_limit_headers(&state, &outcome, &trace, &mut response);
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

    // Admission: a bounded number of valid searches past this point, so every queue
    // behind it (actor mailboxes included) is bounded too. Held until the response.
    let Ok(_admitted) = state.admission.clone().try_acquire_owned() else {
        return Outcome::Overloaded { display };
    };

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
            trace.spent_at = Some(now);
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
    let key = CacheKey {
        match_copy: query.match_copy().to_owned(),
        fingerprint: snapshot.fingerprint,
    };
    let match_copy = key.match_copy.clone();
    let (flight, cache) = match state.cache.send(cache::Admit(key.clone())).await {
        Ok(Admission::Hit(result)) => {
            return Outcome::Answered {
                display,
                match_copy,
                result,
                snapshot,
                cache: CacheStatus::Hit,
            };
        }
        Ok(Admission::Busy) => return Outcome::Busy { display },
        Ok(Admission::Join(flight)) => (flight, CacheStatus::Join),
        Ok(Admission::Lead(slot, flight)) => {
            start_scoring(state, slot, key, snapshot.clone());
            (flight, CacheStatus::Miss)
        }
        Err(e) => {
            tracing::error!(error = %e, "cache unavailable");
            return Outcome::Failed { display };
        }
    };
    match flight.await {
        Ok(Ok(result)) => Outcome::Answered {
            display,
            match_copy,
            result,
            snapshot,
            cache,
        },
        Ok(Err(ScoringFailed)) | Err(_) => Outcome::Failed { display },
    }
}

/// Runs the scoring of a flight on its own task: it belongs to no single request, so
/// a leader whose client goes away does not cancel it for the joiners.
fn start_scoring(state: &AppState, slot: ScoringSlot, key: CacheKey, snapshot: Arc<Snapshot>) {
    let guard = FlightGuard {
        cache: state.cache.clone(),
        key: Some(key),
    };
    let scorers = state.scorers.clone();
    let metrics = state.metrics.clone();
    let limit = state.search.result_limit;
    actix_web::rt::spawn(async move {
        let query = guard
            .key
            .as_ref()
            .map(|k| k.match_copy.clone())
            .unwrap_or_default();
        let timer = metrics.scoring_seconds.start_timer();
        let scored = scorers.score(slot, query, snapshot, limit).await;
        timer.observe_duration();
        let outcome = scored.map_err(|e| {
            tracing::error!(error = %e, "scoring failed");
            ScoringFailed
        });
        guard.finish(outcome);
    });
}

/// Reports a flight's end to the Cache actor exactly once; if the scoring task is
/// dropped before it finished (shutdown), the flight ends as failed, so no key is
/// ever left in flight.
struct FlightGuard {
    cache: actix::Addr<cache::Cache>,
    key: Option<CacheKey>,
}

impl FlightGuard {
    fn finish(mut self, outcome: FlightOutcome) {
        if let Some(key) = self.key.take() {
            self.cache.do_send(cache::Finish(key, outcome));
        }
    }
}

impl Drop for FlightGuard {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.cache.do_send(cache::Finish(key, Err(ScoringFailed)));
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

/// `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-08..10
/// structured fields) on every answer that reached the budget: the remaining quota
/// `r` and the seconds `t` until each window ends; on a 429 the refusing window with
/// `r=0` and `t` equal to `Retry-After`.
fn rate_limit_headers(
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
        json_response(status, outcome)
    } else {
        html_response(state, req, status, outcome)
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

const SHORT: &str = "Enter at least 2 characters.";
const TOO_LONG: &str = "Search text can be at most 64 characters.";
const BUSY: &str = "Search is busy right now.";
const FAILED: &str = "Something went wrong with this search. Please try again.";

fn refused_message(window: Window, retry_after: i64) -> String {
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

/// Cuts `title` at the byte ranges [`rank::highlight`] reports for `match_copy`.
fn highlighted(title: &str, match_copy: &str) -> Vec<TitleRun> {
    let mut runs = Vec::new();
    let mut at = 0;
    for range in rank::highlight(title, match_copy) {
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
}

fn html_response(
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
                .retry(*retry_after),
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
            match_copy,
            result,
            snapshot,
            cache,
        } => {
            let results: Vec<TableRow> = rows(result, snapshot)
                .into_iter()
                .map(|r| TableRow {
                    title: highlighted(&r.title, match_copy),
                    slug: r.slug,
                    score: format!("{:.1}", r.score),
                    updated_at: format_time(r.updated_at),
                })
                .collect();
            let ctx = SearchContext {
                q: display,
                outcome: "results",
                message: String::new(),
                retry_after: None,
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

fn json_response(status: StatusCode, outcome: &Outcome) -> HttpResponse {
    const INVALID: &str = "/problems/invalid-query";
    match outcome {
        Outcome::Missing => redirect_home(),
        Outcome::Malformed(why) => problem(
            status,
            INVALID,
            "Invalid search query",
            format!("{why}."),
            None,
        ),
        Outcome::TooLong { .. } => problem(
            status,
            INVALID,
            "Invalid search query",
            TOO_LONG.into(),
            None,
        ),
        Outcome::TooShort { display } => HttpResponse::Ok().json(JsonShort {
            query: display,
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
            refused_message(*window, *retry_after),
            Some(*retry_after),
        ),
        Outcome::Busy { .. } | Outcome::Overloaded { .. } => problem(
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
            ..
        } => {
            let body = JsonAnswer {
                query: display,
                results: rows(result, snapshot),
                total: result.total,
                truncated: result.truncated,
                cache: cache.as_str(),
            };
            with_cache_header(HttpResponse::Ok().json(body), *cache)
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
