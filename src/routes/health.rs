//! `GET /healthz` (liveness) and `GET /readyz` (readiness), SPEC §9.
//!
//! `/healthz` touches nothing: 200 while the process runs and serves HTTP.
//! `/readyz` is 200 only while every check passes: the page store could keep a
//! write (SQLite: the database file at the configured path is the one open, it and
//! its WAL are writable, its WAL index is safe to touch, its disk has room, and
//! the last write that failed for the storage's sake has been followed by one that
//! was kept), the candidate snapshot is built, and the budget store takes a write
//! (what every budgeted request needs: a Redis replica answers reads, so a read
//! would call it ready; SQLite: its files pass the same checks as the pages');
//! else 503 naming what failed.

use std::time::Duration;

use actix_web::{web, HttpResponse};
use serde::Serialize;

use crate::state::AppState;

/// How long `/readyz` waits for the budget store's answer.
pub const READY_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Liveness: always 200 `ok` while the process runs.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .body("ok\n")
}

/// The answer of `/readyz`: `ready`, and each check's result (`ok` or why not).
#[derive(Debug, Serialize)]
pub struct Readiness {
    pub ready: bool,
    pub database: String,
    pub snapshot: String,
    pub budget_store: String,
}

/// Readiness: 200 when the database file is the one open and writable, the search
/// snapshot is built and the budget store takes a write
/// ([`crate::budget::store::BudgetStore::check_ready`]); else 503. JSON either way.
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let body = readiness(&state).await;
    let mut response = if body.ready {
        HttpResponse::Ok()
    } else {
        HttpResponse::ServiceUnavailable()
    };
    response
        .insert_header(("Cache-Control", "no-store"))
        .json(body)
}

impl Readiness {
    /// The failing checks by their `agent_pages_ready{reason}` names
    /// (`crate::metrics::READY_REASONS`): `page_store`, `snapshot`, `budget_store`.
    pub fn failing(&self) -> Vec<&'static str> {
        [
            ("page_store", &self.database),
            ("snapshot", &self.snapshot),
            ("budget_store", &self.budget_store),
        ]
        .into_iter()
        .filter(|(_, check)| check.as_str() != "ok")
        .map(|(reason, _)| reason)
        .collect()
    }
}

/// Every readiness check, as `/readyz` answers them (and `/metrics`' `ready` gauge).
pub async fn readiness(state: &AppState) -> Readiness {
    // Answers say which check failed in a few words; the details go to the log.
    let database = match state.pages.store.check_ready().await {
        Ok(()) => "ok".to_owned(),
        Err(why) => why,
    };
    let snapshot = if state.search.corpus.peek().generation >= 0 {
        "ok".to_owned()
    } else {
        "the candidate snapshot is not built yet".to_owned()
    };
    let budget_store = match state.budgets.store.check_files() {
        Err(why) => why,
        Ok(()) => budget_store(state).await,
    };
    let ready = [&database, &snapshot, &budget_store]
        .iter()
        .all(|c| c.as_str() == "ok");
    Readiness {
        ready,
        database,
        snapshot,
        budget_store,
    }
}

/// Whether the budget store takes a write now
/// ([`crate::budget::store::BudgetStore::check_ready`]).
async fn budget_store(state: &AppState) -> String {
    let write = state.budgets.store.check_ready(state.clock.now());
    match tokio::time::timeout(READY_CHECK_TIMEOUT, write).await {
        Ok(Ok(())) => "ok".to_owned(),
        // The store logs an outage once when it starts and once when it ends; a
        // probe every few seconds must not log it again each time.
        Ok(Err(e)) if e.is_unavailable() => "the budget store does not take a write".to_owned(),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "readiness: budget store");
            "the budget store failed".to_owned()
        }
        Err(_) => format!(
            "the budget store did not answer within {} s",
            READY_CHECK_TIMEOUT.as_secs()
        ),
    }
}
