//! `/mcp` on the service's own listener: the SDK's Streamable HTTP service (stateless,
//! JSON answers) driven from an actix route.
//!
//! Before the SDK sees a request, the route applies what every API request gets:
//! the `Origin` rule ([`AllowedOrigins`], against DNS rebinding: the transport's
//! security notes), then the API's body rules (300 KiB, refused from
//! `Content-Length` first; `AGENT_PAGES_BODY_TIMEOUT_SECS`; a slot among
//! `AGENT_PAGES_MAX_OPEN_BODIES`), each refusal a problem document. The request's
//! [`Caller`](crate::operations::Caller) (client IP by the trusted-proxy rules, public origin) rides on the
//! converted request's extensions to the tools. The SDK checks the rest of the
//! transport (method, `Accept`, `Content-Type`, `MCP-Protocol-Version`, the JSON-RPC
//! message) and answers those refusals itself.

use std::sync::Arc;

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;
use futures_util::StreamExt as _;
use http_body_util::{BodyExt as _, BodyStream, Full};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::origins::AllowedOrigins;
use super::PagesMcp;
use crate::http::body::{self, BODY_LIMIT};
use crate::operations::error::ApiError;
use crate::operations::problem::Problem;
use crate::state::AppState;

/// The SDK's service as `/mcp` runs it.
pub type Service = StreamableHttpService<PagesMcp, NeverSessionManager>;

/// What the `/mcp` route holds: the SDK's service and the allowed origins.
pub struct Endpoint {
    service: Service,
    origins: AllowedOrigins,
}

impl Endpoint {
    /// The endpoint over `state`: stateless (no session, every POST answered on its
    /// own), JSON answers; Host and Origin are checked by the route, not the SDK
    /// (its Host list is for loopback-only servers, and the service's own origin is
    /// the one each request names).
    pub fn new(state: web::Data<AppState>, origins: AllowedOrigins) -> Self {
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
        Self { service, origins }
    }
}

/// The `Origin` refusal: a browser page on another site may not drive `/mcp`.
fn origin_refused() -> HttpResponse {
    crate::http::problem::response(Problem::new(
        StatusCode::FORBIDDEN,
        "/problems/origin-not-allowed",
        "Origin not allowed",
        "requests to /mcp from this browser origin are refused: see \
         AGENT_PAGES_MCP_ALLOWED_ORIGINS"
            .into(),
    ))
}

/// The route: every method of `/mcp`.
pub async fn mcp(
    state: web::Data<AppState>,
    endpoint: web::Data<Endpoint>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let caller = crate::http::caller(&req, &state.trusted_proxies);
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let own = caller.origin.url("");
        let allowed = origin
            .to_str()
            .is_ok_and(|origin| endpoint.origins.allows(origin, &own));
        if !allowed {
            return Ok(origin_refused());
        }
    }
    let body = if req.method() == actix_web::http::Method::POST {
        body::read_capped(&state.api.bodies, &req, payload, BODY_LIMIT).await?
    } else {
        Vec::new()
    };

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
