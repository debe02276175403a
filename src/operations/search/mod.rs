//! Search as an operation, whichever face asks (`GET /search`, the MCP tool
//! `search_pages`): [`search`] walks the five gates in order, ending in one
//! [`Outcome`] per row of the outcome matrix ([`outcome`]), and records the one log
//! event and metric of the search. The faces turn the outcome into their answer:
//! the JSON one is [`json`]'s (what `/search` sends with `Accept: application/json`
//! and the tool returns, [`search_json`]), the HTML one the routes'.
//!
//! After gate 1 an admission
//! permit bounds the requests in flight (503 before any budget is spent when none
//! is left); at gate 5 identical concurrent misses share one scoring (single
//! flight, `X-Search-Cache: join`).
//!
//! The query text never reaches a log line: the event at the end records the outcome,
//! status, a prefix of the hashed bucket key, counters, cache status and latency.

pub mod json;
pub mod outcome;
pub mod rendered;

use std::time::Instant;

use crate::budget::Decision;
use crate::client_ip::ClientIp;
use crate::faults::{self, StorageAnswer, Store};
use crate::page_store::PageStoreError;
use crate::search::cache::{self, Answer, CacheKey, CachedResult, ScoringFailed};
use crate::search::corpus::Snapshot;
use crate::search::query::{Gate1, SearchQuery};
use crate::search::rank::{Marks, ScoredRow};
use crate::search::rows::CandidateRef;
use crate::state::AppState;

pub use json::JsonReply;
pub use outcome::{CacheStatus, Outcome};

/// One search as the faces answer it: how it ended, and what the search event
/// and the `RateLimit` headers need beside that.
pub struct Searched {
    pub outcome: Outcome,
    pub trace: Trace,
}

/// What the search event and the rate-limit headers need beside the outcome;
/// never the query.
#[derive(Default)]
pub struct Trace {
    /// The first 12 hex chars of the client's first bucket key.
    pub bucket: Option<String>,
    /// What gates 3/4 decided, when the request reached them.
    pub decision: Option<Decision>,
}

/// One search for `client`: `raw_query` is the URL query string as sent
/// (`q=…&page=N`, encoded), checked by gate 1. Every outcome is recorded here, once
/// (the search event and its metric), whichever face answers it.
pub async fn search(state: &AppState, raw_query: &str, client: &ClientIp) -> Searched {
    let started = Instant::now();
    let mut trace = Trace::default();
    let outcome = run(state, raw_query, client, &mut trace).await;
    record(state, &outcome, &trace, started);
    Searched { outcome, trace }
}

/// [`search`] as `/search` answers it with `Accept: application/json` (the same
/// gates, budget, cache, log event and metric), for callers that are not the HTTP
/// route (the MCP tool `search_pages`). A missing or blank `q`, which `/search`
/// answers with a redirect to `/`, is a `/problems/invalid-query` problem here.
pub async fn search_json(state: &AppState, raw_query: &str, client: &ClientIp) -> JsonReply {
    let Searched { outcome, .. } = search(state, raw_query, client).await;
    if let Outcome::Missing = outcome {
        return JsonReply::Problem(crate::operations::problem::Problem::new(
            actix_web::http::StatusCode::BAD_REQUEST,
            outcome::MALFORMED
                .problem_type
                .unwrap_or("/problems/invalid-query"),
            outcome::MALFORMED.title,
            "Enter a search: the query is empty.".into(),
        ));
    }
    json::json_answer(state, &outcome).unwrap_or_else(|e| {
        tracing::error!(error = %e, "search answer failed to serialize");
        JsonReply::Problem(crate::operations::problem::Problem::new(
            outcome::FAILED.status,
            outcome::FAILED.problem_type.unwrap_or("/problems/internal"),
            outcome::FAILED.title,
            outcome::FAILED.message.into(),
        ))
    })
}

/// The one log event and metric of a search, whoever answers it (the route, or an
/// MCP tool call); never the query.
fn record(state: &AppState, outcome: &Outcome, trace: &Trace, started: Instant) {
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

async fn run(state: &AppState, raw_query: &str, client: &ClientIp, trace: &mut Trace) -> Outcome {
    // Gate 1: validation, spends nothing.
    let query = match SearchQuery::parse(raw_query) {
        Gate1::Valid(q) => q,
        Gate1::Missing => return Outcome::Missing,
        Gate1::Malformed(why) => return Outcome::Malformed(why),
        Gate1::TooLong { display } | Gate1::NormalizedTooLong { display } => {
            return Outcome::TooLong { display }
        }
        Gate1::TooShort { display } => return Outcome::TooShort { display },
        Gate1::BadPage { display } => return Outcome::BadPage { display },
    };
    let display = query.display().to_owned();
    let page = query.page();

    // Admission: a bounded number of valid searches between here and the cache's
    // decision, so every queue behind it (actor mailboxes included) is bounded too.
    // The Cache actor releases it on a hit or a join, and keeps a leader's until
    // its scoring ends.
    let Ok(admission) = state.search.admission.clone().try_acquire_owned() else {
        return Outcome::Overloaded { display };
    };

    // Gate 2: identity (the caller resolved it from the request).
    let keys = state.budgets.search.keys(client);
    trace.bucket = Some(keys.log_prefix().to_owned());

    // Gates 3/4: every window of the budget, both-or-neither.
    let now = state.clock.now();
    let (decision, generation) = match state
        .budgets
        .store
        .spend_with_generation(&state.budgets.search, keys, now)
        .await
    {
        Ok(spent) => spent,
        // The store logs an outage once (down, and up again); the search event
        // records this request's outcome.
        Err(e) => {
            let answer = faults::answer(Store::Budget, e.fault());
            if answer == StorageAnswer::Internal {
                tracing::error!(error = %e, "budget transaction failed");
            }
            return Outcome::of_fault(answer, display);
        }
    };
    trace.decision = Some(decision.clone());
    if let Decision::Refused {
        window,
        retry_after,
    } = decision
    {
        return Outcome::Refused {
            display,
            window,
            retry_after,
        };
    }

    // Gate 5: the candidates as a fresh fetch would see them (the generation the
    // budget call read in the pages' own database, PostgreSQL; else read from the
    // page database now), then the cache.
    let snapshot = match state.search.corpus.current(generation).await {
        Ok(s) => s,
        Err(e) => {
            let answer = faults::answer(Store::Pages, e.fault());
            if answer == StorageAnswer::Internal {
                tracing::error!(error = %e, "candidate fetch failed");
            } else if !matches!(e, PageStoreError::Unavailable(_)) {
                // Unavailability is logged once per incident by the page store.
                tracing::warn!(error = %e, "candidate fetch answered 503");
            }
            return Outcome::of_fault(answer, display);
        }
    };
    let key = CacheKey {
        match_copy: query.match_copy().to_owned(),
        fingerprint: snapshot.fingerprint,
    };
    // A hit is read from the entries the Cache actor published; only a miss asks it.
    if let Some(hit) = state.search.cache_view.hit(&key) {
        if hit.flush {
            state.search.cache.do_send(cache::ApplyTouches);
        }
        drop(admission);
        return Outcome::Answered {
            display,
            page,
            entry: hit.entry,
            snapshot,
            cache: CacheStatus::Hit,
        };
    }
    // A miss the actor would refuse (no scoring of this key to join, no slot
    // free) is refused here, without a message and its two thread wake-ups.
    if state.search.cache_view.busy(&key) {
        drop(admission);
        return Outcome::Busy { display };
    }
    let lookup = cache::Lookup {
        key,
        snapshot: snapshot.clone(),
        admission,
    };
    let (outcome, cache) = match state.search.cache.send(lookup).await {
        Ok(Answer::Hit(entry)) => {
            return Outcome::Answered {
                display,
                page,
                entry,
                snapshot,
                cache: CacheStatus::Hit,
            };
        }
        Ok(Answer::Busy) => return Outcome::Busy { display },
        Ok(Answer::Wait { led, outcome }) => {
            let status = if led {
                CacheStatus::Miss
            } else {
                CacheStatus::Join
            };
            (outcome, status)
        }
        Err(e) => {
            tracing::error!(error = %e, "cache unavailable");
            return Outcome::Failed { display };
        }
    };
    match outcome.await {
        Ok(Ok(entry)) => Outcome::Answered {
            display,
            page,
            entry,
            snapshot,
            cache,
        },
        Ok(Err(ScoringFailed)) | Err(_) => Outcome::Failed { display },
    }
}

/// The rows of page `page` to show: each cached `(page_id, score)` mapped onto the
/// freshly fetched display fields, with what matched in its title (marked on first
/// use of the page). An id is always found, because the result's fingerprint (ids
/// and versions) is the snapshot's.
pub fn displayed_rows<'a>(
    result: &'a CachedResult,
    page: usize,
    snapshot: &'a Snapshot,
) -> impl Iterator<Item = (&'a ScoredRow, CandidateRef<'a>, &'a Marks)> + 'a {
    let marks = result.marks(page, |id| snapshot.page(id).map(|p| p.title));
    result
        .rows(page)
        .iter()
        .zip(marks)
        .filter_map(|(row, marks)| Some((row, snapshot.page(row.page_id)?, marks)))
}

/// Whether page `page` shows a close (typo-corrected or prefix) match.
pub fn has_close_matches(result: &CachedResult, page: usize, snapshot: &Snapshot) -> bool {
    displayed_rows(result, page, snapshot).any(|(_, _, marks)| marks.close)
}

/// Where page `page` stands among the pages of `result`, as both answers tell it.
pub struct PageInfo {
    /// The page asked for (from 1).
    pub page: usize,
    /// Pages there are (at least 1).
    pub pages: usize,
    /// Rows on this page (0 past the last page).
    pub shown: usize,
    /// 1-based number of this page's first row (0 without rows).
    pub first: usize,
    /// Number of its last row.
    pub last: usize,
    /// Matches exist past the kept rows: the results were cut at `MAX_PAGES`.
    pub capped: bool,
}

impl PageInfo {
    pub fn of(result: &CachedResult, page: usize) -> Self {
        let shown = result.rows(page).len();
        let first = if shown == 0 {
            0
        } else {
            (page - 1) * result.page_size() + 1
        };
        PageInfo {
            page,
            pages: result.pages(),
            shown,
            first,
            last: if shown == 0 { 0 } else { first + shown - 1 },
            capped: result.result.truncated,
        }
    }
}
