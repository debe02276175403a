//! The problem answers several API routes document alike, written once for their
//! `#[utoipa::path]` attributes: `(status = 503, response = inline(WriteUnavailable))`
//! puts the same description, the [`Problem`] schema as `application/problem+json`
//! and, where the answer has one, the `Retry-After` header into each route's
//! OpenAPI entry (the document is as if each route spelled it out). The answers that
//! several routes list together are sets ([`PinnedWriteRefusals`], …): `responses(…,
//! PinnedWriteRefusals)` lists each of them.

use std::collections::BTreeMap;

use utoipa::openapi::{ContentBuilder, HeaderBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{IntoResponses, PartialSchema as _, ToResponse, ToSchema as _};

use crate::operations::error::Problem;

/// A problem answer described by `description`, with a `Retry-After` header
/// (whole seconds) described by `retry_after` when given.
fn problem(description: &str, retry_after: Option<&str>) -> Response {
    let mut response = ResponseBuilder::new().description(description).content(
        "application/problem+json",
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name(Problem::name())))
            .build(),
    );
    if let Some(retry_after) = retry_after {
        response = response.header(
            "Retry-After",
            HeaderBuilder::new()
                .schema(i64::schema())
                .description(Some(retry_after))
                .build(),
        );
    }
    response.build()
}

/// One unit struct per shared answer, each a [`ToResponse`] for `inline(…)`.
macro_rules! problem_responses {
    ($($(#[$doc:meta])* $name:ident => $description:expr $(, retry_after: $retry:expr)?;)+) => {
        $(
            $(#[$doc])*
            pub struct $name;

            impl<'r> ToResponse<'r> for $name {
                fn response() -> (&'r str, RefOr<Response>) {
                    let retry_after: Option<&str> = None $(.or(Some($retry)))?;
                    (stringify!($name), problem($description, retry_after).into())
                }
            }
        )+
    };
}

problem_responses! {
    /// 400 of a route reading a JSON body.
    InvalidBody => "Invalid field or malformed JSON";
    /// 403 of a PIN-protected route.
    PinRefused => "PIN missing or wrong, or the page has none";
    /// 404 of a route that names a page in its path.
    NoSuchPage => "No page has this slug";
    /// 408 of a route reading a body.
    BodyTimeout => "The body did not arrive in full in time; the connection is closed";
    /// 412 of a write with `If-Match`.
    VersionMismatch => "`If-Match` names another version than the page's (`/problems/version-mismatch`, with `current_version`): nothing changed";
    /// 413 of a route reading a body.
    BodyTooLarge => "Body over 300 KiB";
    /// 415 of a route reading a body.
    NotJson => "Content-Type is not JSON";
    /// 429 of a PIN-protected write: the PIN failure budgets or the publish budget.
    PinOrPublishLimited => "Too many wrong PINs this hour from this client, or against this page from all clients together, which refuses every PIN for it, the right one included (`/problems/too-many-pin-failures`); or the client's publish budget is spent (`/problems/publish-rate-limited`)",
        retry_after: "Seconds until the refusing window ends";
    /// 503 of a write: the budget or the database cannot answer now.
    WriteUnavailable => "The request budget cannot be checked right now (`/problems/budget-unavailable`, retry after 1 s), the database is busy with another writer (`/problems/database-busy`, retry after 1 s) or cannot keep a write now (`/problems/storage-unavailable`, retry after 5 s); nothing was written",
        retry_after: "Seconds to wait before retrying";
}

/// One unit struct per set of shared answers, each an [`IntoResponses`] for
/// `responses(…)`.
macro_rules! response_sets {
    ($($(#[$doc:meta])* $name:ident => [$($status:literal: $answer:ty),+ $(,)?];)+) => {
        $(
            $(#[$doc])*
            pub struct $name;

            impl IntoResponses for $name {
                fn responses() -> BTreeMap<String, RefOr<Response>> {
                    BTreeMap::from([
                        $(($status.to_string(), <$answer as ToResponse>::response().1)),+
                    ])
                }
            }
        )+
    };
}

response_sets! {
    /// The refusals of a route reading a JSON body: its fields, its time, its size, its
    /// type.
    BodyRefusals => [400: InvalidBody, 408: BodyTimeout, 413: BodyTooLarge, 415: NotJson];
    /// The refusals of a write that needs the page's PIN and honours `If-Match`.
    PinnedWriteRefusals => [
        403: PinRefused,
        404: NoSuchPage,
        412: VersionMismatch,
        429: PinOrPublishLimited,
        503: WriteUnavailable,
    ];
}

/// 304 of a conditional read (`If-None-Match` / `If-Modified-Since`): no body, the
/// headers the 200 would carry.
pub struct NotModified;

impl<'r> ToResponse<'r> for NotModified {
    fn response() -> (&'r str, RefOr<Response>) {
        let header = |description: &str| {
            HeaderBuilder::new()
                .schema(String::schema())
                .description(Some(description))
                .build()
        };
        let response = ResponseBuilder::new()
            .description(
                "Not modified: `If-None-Match` matches the current `ETag` (weak comparison, or `*`), or, without `If-None-Match`, `If-Modified-Since` is at or after `Last-Modified`; no body",
            )
            .header("ETag", header("As the 200 would send it"))
            .header("Last-Modified", header("As the 200 would send it"))
            .header("Cache-Control", header("As the 200 would send it: `no-cache` (`private, no-cache` when `X-Page-Pin` was sent)"))
            .header("Vary", header("As the 200 would send it"))
            .build();
        ("NotModified", response.into())
    }
}
