//! RFC 9457 problem details: the one JSON error body of the service, used by the
//! agent API, the JSON variant of `/search` and the MCP tools' errors. The HTTP
//! face sends it as a response ([`crate::http::problem`]).

use actix_web::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

/// An RFC 9457 problem document (`application/problem+json`).
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// Stable per kind, e.g. `/problems/wrong-pin`: match on this, not on `detail`.
    #[serde(rename = "type")]
    pub problem_type: String,
    /// Short summary of the kind.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What went wrong with this request, naming the field when there is one.
    pub detail: String,
    /// The JSON field, query parameter or header at fault (`title`, `X-Page-Pin`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Seconds until the client may try again (also in the `Retry-After` header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<i64>,
    /// The page's version now, on `/problems/version-mismatch` (its `ETag` is
    /// `"v{current_version}"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_version: Option<i64>,
}

impl Problem {
    /// A problem of `status` without a field.
    pub fn new(status: StatusCode, problem_type: &str, title: &str, detail: String) -> Self {
        Self {
            problem_type: problem_type.to_owned(),
            title: title.to_owned(),
            status: status.as_u16(),
            detail,
            field: None,
            retry_after: None,
            current_version: None,
        }
    }
}
