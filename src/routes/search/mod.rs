//! `GET /search?q=…&page=N`: the search operation ([`crate::operations::search`]:
//! the five gates, one outcome), then one response per outcome: [`respond::respond`]
//! maps each outcome to its status, headers and body (HTML, or JSON when the client
//! accepts it).

mod html;
mod respond;

use actix_web::{web, HttpRequest, HttpResponse};

use crate::operations::search;
use crate::state::AppState;

/// The handler.
pub async fn search(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let client = crate::http::client_ip(&req, &state.trusted_proxies);
    let searched = search::search(&state, req.query_string(), &client).await;
    let mut response = respond::respond(&state, &req, &searched.outcome);
    respond::rate_limit_headers(&state, &searched.trace, &mut response);
    respond::with_search_headers(response)
}
