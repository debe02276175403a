//! `GET /search?q=…`: the five gates in order, then one response per outcome.
//!
//! [`run`] walks the gates and returns an [`Outcome`]; [`respond::respond`] maps each outcome
//! to its status, headers and body (HTML, or JSON when the client accepts it). After
//! gate 1 an admission permit bounds the requests in flight (503 before any budget
//! is spent when none is left); at gate 5 identical concurrent misses share one
//! scoring (single flight, `X-Search-Cache: join`).
//!
//! The query text never reaches a log line: the event at the end records the outcome,
//! status, a prefix of the hashed bucket key, counters, cache status and latency.

mod html;
mod json;
mod respond;

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use actix_web::{web, HttpRequest, HttpResponse};

use crate::actors::cache::{self, Admission, CacheKey, FlightOutcome, ScoringFailed};
use crate::actors::rate_limiter;
use crate::actors::scorer::ScoringSlot;
use crate::db::pages::Candidate;
use crate::search::budget::{self, Window};
use crate::search::client_ip::BucketKeys;
use crate::search::corpus::Snapshot;
use crate::search::query::{Gate1, SearchQuery};
use crate::search::rank::{ScoredRow, SearchResult};
use crate::startup::AppState;

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
    let mut response = respond::respond(&state, &req, &outcome, &trace, started);
    respond::rate_limit_headers(&state, &outcome, &trace, &mut response);
    respond::with_search_headers(response)
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
    let (flight, cache) = match state.cache.send(cache::Admit(key.clone())).await {
        Ok(Admission::Hit(result)) => {
            return Outcome::Answered {
                display,
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

/// The rows to show: each cached `(page_id, score)` mapped onto the freshly fetched
/// display fields, with the byte ranges of its title to mark. An id is always found,
/// because the result's fingerprint (ids and versions) is the snapshot's.
pub(super) fn displayed_rows<'a>(
    result: &'a SearchResult,
    snapshot: &'a Snapshot,
) -> impl Iterator<Item = (&'a ScoredRow, &'a Candidate, &'a [Range<usize>])> + 'a {
    let marks = result
        .highlights
        .iter()
        .map(Vec::as_slice)
        .chain(std::iter::repeat(&[][..]));
    result
        .rows
        .iter()
        .zip(marks)
        .filter_map(|(row, marks)| Some((row, snapshot.page(row.page_id)?, marks)))
}

/// Gate 2 on this request: the socket peer, or the client a trusted proxy names.
fn client_keys(state: &AppState, req: &HttpRequest) -> BucketKeys {
    crate::routes::client_ip(req, &state.trusted_proxies).bucket_keys()
}
