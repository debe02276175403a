//! `GET /metrics` on the metrics listener: Prometheus text exposition format 0.0.4.
//! (Requests are timed by the root span, `crate::telemetry::PathOnlyRootSpan`.)

use actix_web::{web, HttpResponse};

use crate::search::cache::Stats;
use crate::state::AppState;

/// Sets the gauges from the live state (readiness as `/readyz` would answer now),
/// then encodes every metric.
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let readiness = crate::routes::health::readiness(&state).await;
    state.metrics.set_ready(&readiness.failing());
    let m = &state.metrics;
    m.slots_busy.set(state.search.scorers.busy() as i64);
    m.in_flight.set(
        (state.search.settings.max_in_flight - state.search.admission.available_permits()) as i64,
    );
    if let Ok(stats) = state.search.cache.send(Stats).await {
        m.cache_entries.set(stats.entries as i64);
        m.cache_bytes.set(stats.bytes as i64);
    }
    let snapshot = state.search.corpus.peek();
    m.candidates.set(snapshot.len() as i64);
    m.generation.set(snapshot.generation.max(0));
    let dropped = crate::telemetry::lines_dropped();
    m.log_lines_dropped
        .inc_by(dropped.saturating_sub(m.log_lines_dropped.get()));
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(m.encode())
}
