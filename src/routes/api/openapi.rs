//! `GET /api/openapi.json`: the OpenAPI 3.1 document of the agent API, generated
//! from the handlers' `#[utoipa::path]` attributes and the body types, so it cannot
//! drift from the code.

use std::sync::LazyLock;

use actix_web::HttpResponse;
use utoipa::openapi::path::ParameterIn;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::RefOr;
use utoipa::{Modify, OpenApi};

use crate::operations::error::Problem;
use crate::operations::history::{
    PinRotated, RestorePage, RotatePin, VersionItem, VersionList, VersionView,
};
use crate::operations::idempotency;
use crate::operations::pin_check::PIN_HEADER;
use crate::operations::types::{
    self, CreatePage, Created, PageList, PageListItem, PageView, StateChanged, UpdatePage, Updated,
    SLUG_PATTERN,
};
use crate::page_store::VersionKind;

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
            /problems/publish-rate-limited (429, with Retry-After), /problems/request-timeout \
            (408), /problems/too-many-open-bodies (503), /problems/budget-unavailable (503), \
            /problems/database-busy (503), /problems/storage-unavailable (503), \
            /problems/version-mismatch (412, with current_version), \
            /problems/idempotency-key-reused (422), /problems/idempotency-key-in-flight (409, \
            with Retry-After), /problems/too-many-idempotency-keys (429, with Retry-After), \
            /problems/internal (500). \
            Page reads send ETag \"v{version}\" (strong); PUT, archive, claim and restore \
            honour If-Match (a stale tag is 412 and nothing changes; * or no header writes \
            whatever version the page is at). Every write keeps the version it made: the \
            newest PAGE_HISTORY_VERSIONS (default 100) versions of each page can be read \
            and restored. POST /api/pages honours Idempotency-Key: the same key and body \
            from the same client within 24 hours answer the first answer again with \
            Idempotent-Replayed: true, publishing and spending nothing. After 10 wrong PINs in an hour (windows aligned to the \
            Unix epoch) a client gets 429 on every PIN-protected route until the hour ends; \
            after PIN_FAILURES_PER_PAGE_PER_HOUR (default 20) wrong PINs against one page in \
            an hour, from all clients together, every PIN check of that page is 429 for \
            everyone, the right PIN included, until the hour ends."
    ),
    paths(
        super::create,
        super::list,
        super::get,
        super::update,
        super::archive,
        super::claim,
        super::history::versions,
        super::history::version,
        super::history::restore,
        super::history::rotate_pin,
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
        RestorePage,
        RotatePin,
        PinRotated,
        VersionList,
        VersionItem,
        VersionView,
        VersionKind,
        Problem
    )),
    tags((name = "pages", description = "Pages published by agents")),
    modifiers(&ServerRules)
)]
pub struct ApiDoc;

/// The rules a derive cannot state: `UpdatePage` needs a title or a body that is not
/// null, a path `slug` matches the slug pattern (any other is 404), and `X-Page-Pin`
/// is a PIN that a header can carry (`pin_header` of [`types::PATTERNS`]).
struct ServerRules;

impl Modify for ServerRules {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        if let Some(components) = doc.components.as_mut() {
            components
                .schemas
                .insert("UpdatePage".into(), types::update_page_schema());
        }
        for item in doc.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for operation in operations.into_iter().flatten() {
                for parameter in operation.parameters.iter_mut().flatten() {
                    if matches!(parameter.parameter_in, ParameterIn::Query)
                        && parameter.name == "page"
                    {
                        parameter.schema = Some(RefOr::T(
                            ObjectBuilder::new()
                                .schema_type(Type::Integer)
                                .minimum(Some(1))
                                .description(Some(
                                    "A whole number from 1; any page past the end, however \
                                     large its number, is an empty page.",
                                ))
                                .into(),
                        ));
                        continue;
                    }
                    let pattern = match (&parameter.parameter_in, parameter.name.as_str()) {
                        (ParameterIn::Path, "slug") => SLUG_PATTERN.to_owned(),
                        (ParameterIn::Header, PIN_HEADER) => types::PATTERNS.pin_header.clone(),
                        (ParameterIn::Header, idempotency::HEADER) => {
                            idempotency::KEY_PATTERN.to_owned()
                        }
                        _ => continue,
                    };
                    parameter.schema = Some(RefOr::T(
                        ObjectBuilder::new()
                            .schema_type(Type::String)
                            .pattern(Some(pattern))
                            .into(),
                    ));
                }
            }
        }
    }
}

static DOCUMENT: LazyLock<String> = LazyLock::new(|| {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).expect("the OpenAPI document serializes");
    fix_link_field_names(&mut doc);
    origin_refusals(&mut doc);
    empty_means_absent(&mut doc);
    serde_json::to_string(&doc).expect("the OpenAPI document serializes")
});

/// `page` and `per_page` follow the one page-number rule
/// ([`crate::domain::parse_whole_number`]): an empty value (a form's blank field) is
/// the parameter not given. The document says so with `allowEmptyValue` on each
/// (utoipa 5 has no field for it), so a client (and Schemathesis) may send `page=`.
fn empty_means_absent(doc: &mut serde_json::Value) {
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return;
    };
    for item in paths.values_mut().filter_map(|i| i.as_object_mut()) {
        for operation in item.values_mut() {
            let Some(parameters) = operation
                .get_mut("parameters")
                .and_then(|p| p.as_array_mut())
            else {
                continue;
            };
            for parameter in parameters.iter_mut().filter_map(|p| p.as_object_mut()) {
                let paged = matches!(
                    parameter.get("name").and_then(|n| n.as_str()),
                    Some("page" | "per_page")
                );
                if paged && parameter.get("in").and_then(|i| i.as_str()) == Some("query") {
                    parameter.insert("allowEmptyValue".into(), true.into());
                }
            }
        }
    }
}

/// What `own_origins::refuse_foreign_writes` answers every write of the API scope
/// from a browser page of another origin (DNS rebinding, issue 30 §1).
const ORIGIN_REFUSAL: &str = "a browser `Origin` that is not one of the service's own \
    (`/problems/origin-not-allowed`): nothing was read or written";

/// Every write (POST, PUT, PATCH, DELETE) lists the `403` of a foreign browser origin:
/// added to its `403` answer, or as one; the document's list of kinds names it.
fn origin_refusals(doc: &mut serde_json::Value) {
    if let Some(serde_json::Value::String(description)) = doc.pointer_mut("/info/description") {
        description.push_str(
            " A write (POST, PUT) from a browser page of another origin is 403 \
             /problems/origin-not-allowed.",
        );
    }
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return;
    };
    for item in paths.values_mut().filter_map(|i| i.as_object_mut()) {
        for (method, operation) in item.iter_mut() {
            if !matches!(method.as_str(), "post" | "put" | "patch" | "delete") {
                continue;
            }
            let Some(responses) = operation
                .get_mut("responses")
                .and_then(|r| r.as_object_mut())
            else {
                continue;
            };
            match responses
                .get_mut("403")
                .and_then(|r| r.get_mut("description"))
            {
                Some(serde_json::Value::String(description)) => {
                    description.push_str("; or ");
                    description.push_str(ORIGIN_REFUSAL);
                }
                _ => {
                    let mut first = ORIGIN_REFUSAL.to_owned();
                    first[..1].make_ascii_uppercase();
                    responses.insert(
                        "403".into(),
                        serde_json::json!({
                            "description": first,
                            "content": {"application/problem+json": {
                                "schema": {"$ref": "#/components/schemas/Problem"}
                            }}
                        }),
                    );
                }
            }
        }
    }
}

/// utoipa 5.5 writes the fields of a Link Object in snake case (`operation_id`);
/// OpenAPI spells them `operationId`, `operationRef` and `requestBody`.
fn fix_link_field_names(doc: &mut serde_json::Value) {
    let paths = doc
        .get_mut("paths")
        .and_then(|p| p.as_object_mut())
        .into_iter()
        .flat_map(|p| p.values_mut());
    for operation in paths.flat_map(|item| {
        item.as_object_mut()
            .into_iter()
            .flat_map(|i| i.values_mut())
    }) {
        let responses = operation
            .get_mut("responses")
            .and_then(|r| r.as_object_mut())
            .into_iter()
            .flat_map(|r| r.values_mut());
        for response in responses {
            let Some(links) = response.get_mut("links").and_then(|l| l.as_object_mut()) else {
                continue;
            };
            for link in links.values_mut().filter_map(|l| l.as_object_mut()) {
                for (from, to) in [
                    ("operation_id", "operationId"),
                    ("operation_ref", "operationRef"),
                    ("request_body", "requestBody"),
                ] {
                    if let Some(value) = link.remove(from) {
                        link.insert(to.to_owned(), value);
                    }
                }
            }
        }
    }
}

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
