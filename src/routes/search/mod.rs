//! `GET /search?q=…&page=N`: the search operation ([`crate::operations::search`]:
//! the five gates, one outcome), then one response per outcome: [`respond::respond`]
//! maps each outcome to its status, headers and body (HTML, or JSON when the client
//! accepts it).

mod html;
mod respond;

use std::time::Instant;

use actix_web::{web, HttpRequest, HttpResponse};

use crate::operations::search;
use crate::state::AppState;

/// The handler.
pub async fn search(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let started = Instant::now();
    let mut trace = search::Trace::default();
    let client = crate::http::client_ip(&req, &state.trusted_proxies);
    let outcome = search::run(&state, req.query_string(), &client, &mut trace).await;
    let mut response = respond::respond(&state, &req, &outcome, &trace, started);
    respond::rate_limit_headers(&state, &trace, &mut response);
    respond::with_search_headers(response)
}
