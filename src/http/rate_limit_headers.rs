//! The `RateLimit-Policy` and `RateLimit` headers
//! (draft-ietf-httpapi-ratelimit-headers) as every budgeted answer carries them:
//! searches (any outcome that reached gates 3/4) and page writes (admitted or
//! refused) alike. The budget formats the values
//! ([`crate::budget::Budget::policy_header`], [`crate::budget::Budget::state_header`]);
//! this only puts them on a response.

use actix_web::HttpResponse;

use crate::operations::publish_budget::Spent;

/// Inserts `RateLimit-Policy: policy` and `RateLimit: state`
/// (draft-ietf-httpapi-ratelimit-headers), on search and publish answers alike.
pub fn insert(
    response: &mut HttpResponse,
    policy: &actix_web::http::header::HeaderValue,
    state: &str,
) {
    use actix_web::http::header::{HeaderName, HeaderValue};
    let headers = response.headers_mut();
    headers.insert(HeaderName::from_static("ratelimit-policy"), policy.clone());
    if let Ok(v) = HeaderValue::from_str(state) {
        headers.insert(HeaderName::from_static("ratelimit"), v);
    }
}

/// `response` with the `RateLimit-Policy` and `RateLimit` headers of a page
/// write's spend; none for a write that spent nothing (an idempotent replay).
pub fn with_spent(mut response: HttpResponse, spent: Option<&Spent>) -> HttpResponse {
    if let Some(spent) = spent {
        insert(&mut response, &spent.policy, &spent.state);
    }
    response
}
