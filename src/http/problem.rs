//! Problem documents and the API's errors as HTTP responses: the one place a
//! [`Problem`] becomes `application/problem+json` with its status and
//! `Retry-After`, and an [`ApiError`] a response with the headers its kind needs
//! (`RateLimit` on a publish refusal, `Allow` on a wrong method, `Connection:
//! close` after a body that came too slowly).

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};

use crate::operations::error::ApiError;
use crate::operations::problem::Problem;

/// The response of `problem`: status, `application/problem+json`, and
/// `Retry-After` when `retry_after` is set (at least 1).
pub fn response(mut problem: Problem) -> HttpResponse {
    let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(status);
    response.content_type("application/problem+json");
    if let Some(seconds) = problem.retry_after.as_mut() {
        *seconds = (*seconds).max(1);
        response.insert_header((header::RETRY_AFTER, *seconds));
    }
    response.body(serde_json::to_string(&problem).expect("a problem serializes"))
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.kind().status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = response(self.problem());
        if let ApiError::PublishRateLimited { policy, state, .. } = self {
            super::rate_limit_headers::insert(&mut response, policy, state);
        }
        if let ApiError::MethodNotAllowed { allow } = self {
            response
                .headers_mut()
                .insert(header::ALLOW, header::HeaderValue::from_static(allow));
        }
        if let ApiError::BodyTimeout { .. } = self {
            // The rest of the body may still come: this connection cannot carry
            // another request.
            response
                .head_mut()
                .set_connection_type(actix_web::http::ConnectionType::Close);
        }
        response
    }
}
