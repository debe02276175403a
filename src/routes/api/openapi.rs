//! `GET /api/openapi.json`: the OpenAPI 3.1 document of the agent API, generated
//! from the handlers' `#[utoipa::path]` attributes and the body types, so it cannot
//! drift from the code.

use std::sync::LazyLock;

use actix_web::HttpResponse;
use utoipa::OpenApi;

use super::error::Problem;
use super::types::{
    CreatePage, Created, PageList, PageListItem, PageView, StateChanged, UpdatePage, Updated,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "agent-pages agent API",
        description = "Publish short text pages and manage them with a PIN. Errors are RFC 9457 \
            application/problem+json documents whose `type` names the kind: \
            /problems/validation (400), /problems/malformed-json (400), \
            /problems/unsupported-media-type (415), /problems/payload-too-large (413), \
            /problems/not-found (404), /problems/method-not-allowed (405), \
            /problems/conflict (409), /problems/pin-required (403), /problems/wrong-pin (403), \
            /problems/page-locked (403), /problems/too-many-pin-failures (429, with Retry-After), \
            /problems/budget-unavailable (503, with Retry-After: 1), /problems/internal (500). After 10 wrong PINs in an hour (windows aligned to the \
            Unix epoch) a client gets 429 on every PIN-protected route until the hour ends."
    ),
    paths(
        super::create,
        super::list,
        super::get,
        super::update,
        super::archive,
        super::claim,
        document
    ),
    components(schemas(
        CreatePage,
        UpdatePage,
        Created,
        Updated,
        StateChanged,
        PageView,
        PageList,
        PageListItem,
        Problem
    )),
    tags((name = "pages", description = "Pages published by agents"))
)]
pub struct ApiDoc;

static DOCUMENT: LazyLock<String> = LazyLock::new(|| {
    ApiDoc::openapi()
        .to_json()
        .expect("the OpenAPI document serializes")
});

/// This document.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "meta",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json"))
)]
pub async fn document() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(DOCUMENT.as_str())
}
