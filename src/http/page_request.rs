//! The page an HTTP request names (`/api/pages/{slug}…`, `/p/{slug}…`), read once
//! for every route of both HTTP faces that calls a page operation: the app, the
//! caller, the `{slug}` segment and `X-Page-Pin` as sent, and for a write its
//! `If-Match` and JSON body.

use std::future::{ready, Ready};

use actix_web::dev::Payload;
use actix_web::{web, FromRequest, HttpRequest};
use serde::Deserialize;

use crate::operations::error::ApiError;
use crate::operations::pages::{self, PageCall, Target};
use crate::operations::{pin_check, Caller};
use crate::state::AppState;

/// A request on one page. Extracting it fails as `web::Data` and `web::Path` do:
/// a 500 where the app state is missing, the scope's `PathConfig` answer where a
/// segment does not decode (percent-decoded to invalid UTF-8). The slug itself is
/// checked by the operation it is handed to (one that breaks the slug pattern names
/// no page: 404).
pub struct PageRequest {
    state: web::Data<AppState>,
    req: HttpRequest,
    caller: Caller,
    segments: Segments,
}

/// The path segments a page route may have, decoded as `web::Path` decodes them
/// (`%2B` is `+`).
#[derive(Deserialize)]
struct Segments {
    slug: String,
    version: Option<String>,
}

impl FromRequest for PageRequest {
    type Error = actix_web::Error;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Self::extract_now(req))
    }
}

impl PageRequest {
    fn extract_now(req: &HttpRequest) -> Result<Self, actix_web::Error> {
        let state = web::Data::<AppState>::extract(req).into_inner()?;
        let segments = web::Path::<Segments>::extract(req).into_inner()?;
        let caller = super::caller(req, &state.trusted_proxies);
        Ok(Self {
            state,
            req: req.clone(),
            caller,
            segments: segments.into_inner(),
        })
    }

    /// The app.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// The request.
    pub fn req(&self) -> &HttpRequest {
        &self.req
    }

    /// The `{slug}` segment, decoded.
    pub fn slug(&self) -> &str {
        &self.segments.slug
    }

    /// The `{version}` segment, decoded, as sent: `""` on a route without one.
    pub fn version(&self) -> &str {
        self.segments.version.as_deref().unwrap_or_default()
    }

    /// A call of a page operation on the `{slug}` segment with the `X-Page-Pin`
    /// header as sent, and no conditions: what the reads take.
    pub fn call(&self) -> PageCall<'_> {
        let pin = self
            .req
            .headers()
            .get(pin_check::PIN_HEADER)
            .map(|v| v.as_bytes());
        let target = Target {
            slug: self.slug(),
            pin,
        };
        PageCall::new(&self.state, &self.caller, target)
    }

    /// [`Self::call`] with the request's `If-Match` as its conditions: what the
    /// versioned writes take. Errors: an `If-Match` that is not `*` or a list of
    /// entity tags ([`crate::http::preconditions::conditions`]), 400.
    pub fn write(&self) -> Result<PageCall<'_>, ApiError> {
        let conditions = super::preconditions::conditions(&self.req)?;
        Ok(self.call().expecting(conditions))
    }

    /// The JSON body of a write to the page the slug names. Errors: a slug that
    /// names no page is 404 before a byte of the body is read; then the body's
    /// refusals ([`super::body::read_json`]: 408, 413, 415, 400).
    pub async fn body<T: serde::de::DeserializeOwned>(
        &self,
        payload: web::Payload,
    ) -> Result<T, ApiError> {
        pages::path_slug(self.slug())?;
        super::body::read_json(&self.state.api.bodies, &self.req, payload).await
    }
}
