//! `GET /metrics` on the metrics listener: Prometheus text exposition format 0.0.4;
//! and the middleware that times every request of the service's own listener.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, Error, HttpResponse};

use crate::search::cache::Stats;
use crate::state::AppState;

/// The middleware (`App::wrap(from_fn(request_duration))`, outermost): counts each
/// answer in `agent_pages_http_request_duration_seconds` by the path's route family
/// and the status class, timed from here to the answer's head (a streamed body's
/// rest is not included). The path picks a family from a fixed set; no path, query
/// or client reaches a label.
pub async fn request_duration(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let started = std::time::Instant::now();
    let family_path = req.path().to_owned();
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let response = next.call(req).await;
    if let Some(state) = state {
        let status = match &response {
            Ok(response) => response.status(),
            Err(error) => error.as_response_error().status_code(),
        };
        state
            .metrics
            .observe_request(&family_path, status.as_u16(), started.elapsed());
    }
    response
}

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
