//! `GET /healthz`: 200 when the database answers, 503 when it does not.

use actix_web::{web, HttpResponse};

use crate::db;
use crate::state::AppState;

pub async fn healthz(state: web::Data<AppState>) -> HttpResponse {
    match db::with_conn(&state.pool, |c| db::ping(c)).await {
        Ok(()) => HttpResponse::Ok()
            .content_type("text/plain; charset=utf-8")
            .body("ok\n"),
        Err(e) => {
            tracing::error!(error = %e, "health check failed");
            HttpResponse::ServiceUnavailable()
                .content_type("text/plain; charset=utf-8")
                .body("database unavailable\n")
        }
    }
}
