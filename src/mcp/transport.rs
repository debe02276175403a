//! `/mcp` on the service's own listener: the SDK's Streamable HTTP service (stateless,
//! JSON answers) driven from an actix route.
//!
//! Before the SDK sees a request, the route applies the service's own rules: the name
//! and `Origin` rules of `/mcp` ([`OwnOrigins::check_mcp`], against DNS rebinding:
//! the transport's security notes), the API's body rules (300 KiB, refused from
//! `Content-Length` first; `AGENT_PAGES_BODY_TIMEOUT_SECS`; a slot among
//! `AGENT_PAGES_MAX_OPEN_BODIES`), each refusal a problem document, and then the
//! JSON-RPC envelope ([`envelope::check`]: a malformed one is a JSON-RPC error). The
//! request's [`Caller`](crate::operations::Caller) (client IP by the trusted-proxy
//! rules, public origin) rides on the converted request's extensions to the tools. The SDK checks the rest of the
//! transport (method, `Accept`, `Content-Type`, `MCP-Protocol-Version` values, the
//! message against its methods); its plain-text refusals are answered as JSON-RPC
//! errors too ([`envelope::as_json_rpc`]).

use std::sync::Arc;

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;
use futures_util::StreamExt as _;
use http_body_util::{BodyExt as _, BodyStream, Full};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::{envelope, face, PagesMcp};
use crate::http::body::{self, BODY_LIMIT};
use crate::http::own_origins::OwnOrigins;
use crate::operations::error::ApiError;
use crate::state::AppState;

/// The SDK's service as `/mcp` runs it.
pub type Service = StreamableHttpService<PagesMcp, NeverSessionManager>;

/// What the `/mcp` route holds: the SDK's service.
pub struct Endpoint {
    service: Service,
}

impl Endpoint {
    /// The endpoint over `state`: stateless (no session, every POST answered on its
    /// own), JSON answers; Host and Origin are checked by the route, not the SDK
    /// (its lists know neither trusted proxies nor the bound address).
    pub fn new(state: web::Data<AppState>) -> Self {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_sse_retry(None)
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_max_request_body_bytes(BODY_LIMIT);
        let service = StreamableHttpService::new(
            move || Ok(PagesMcp::new(state.clone())),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        Self { service }
    }
}

/// The route: every method of `/mcp` and of `/mcp/readonly` ([`face`]).
pub async fn mcp(
    state: web::Data<AppState>,
    endpoint: web::Data<Endpoint>,
    own: web::Data<OwnOrigins>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if let Err(refusal) = own.check_mcp(&req, &state.trusted_proxies) {
        return Ok(refusal.response());
    }
    let caller = crate::http::caller(&req, &state.trusted_proxies);
    let post = req.method() == actix_web::http::Method::POST;
    let body = if post {
        body::read_capped(&state.api.bodies, &req, payload, BODY_LIMIT).await?
    } else {
        Vec::new()
    };
    if post && envelope::declares_json(req.headers()) {
        if let Err(refusal) = envelope::check(req.headers(), &body) {
            return Ok(refusal.response());
        }
    }

    let mut request = http::Request::builder()
        .method(req.method().as_str())
        .uri(req.uri().to_string());
    for (name, value) in req.headers() {
        request = request.header(name.as_str(), value.as_bytes());
    }
    let mut request = request
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| ApiError::Internal(e.into()))?;
    request.extensions_mut().insert(caller);
    // The face and a header PIN (super::face) ride beside the caller.
    if face::read_only(&req) {
        request.extensions_mut().insert(face::ReadOnly);
    }
    if let Some(pin) = face::header_pin(&req) {
        request.extensions_mut().insert(pin);
    }

    let answer = endpoint.service.handle(request).await;
    let (parts, body) = answer.into_parts();
    let status =
        StatusCode::from_u16(parts.status.as_u16()).map_err(|e| ApiError::Internal(e.into()))?;
    let mut response = HttpResponse::build(status);
    for (name, value) in &parts.headers {
        response.append_header((name.as_str(), value.as_bytes()));
    }
    // A JSON answer is one buffer (sent with its length); an event stream is relayed
    // as it comes.
    if http_body::Body::size_hint(&body).exact().is_some() {
        let bytes = body
            .collect()
            .await
            .map(|collected| collected.to_bytes())
            .unwrap_or_else(|never| match never {});
        let content_type = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        if let Some(refusal) = envelope::as_json_rpc(status, content_type, &bytes) {
            return Ok(rewritten(&parts.headers, refusal));
        }
        return Ok(response.body(bytes));
    }
    let frames = BodyStream::new(body).filter_map(|frame| async move {
        frame
            .map(|frame| frame.into_data().ok())
            .unwrap_or_else(|never| match never {})
            .map(Ok::<_, std::convert::Infallible>)
    });
    Ok(response.streaming(frames))
}

/// `refusal` as the answer, with the SDK's headers but its own type and length
/// (`Allow` on a 405 stays).
fn rewritten(headers: &http::HeaderMap, refusal: envelope::Refusal) -> HttpResponse {
    let mut response = refusal.response();
    for (name, value) in headers {
        if name != http::header::CONTENT_TYPE && name != http::header::CONTENT_LENGTH {
            if let (Ok(name), Ok(value)) = (
                header::HeaderName::from_bytes(name.as_str().as_bytes()),
                header::HeaderValue::from_bytes(value.as_bytes()),
            ) {
                response.headers_mut().append(name, value);
            }
        }
    }
    response
}
