//! The security headers (SPEC §9): `X-Content-Type-Options: nosniff` on every
//! answer, and on every HTML answer a `Content-Security-Policy` that allows no
//! inline script or style (scripts and styles come from `/static/` only) and
//! `X-Frame-Options: DENY`.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::middleware::Next;
use actix_web::Error;

/// The policy of every HTML answer: same-origin scripts, styles and images (plus
/// `data:` images), no plugins, never framed, forms only to this site.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
style-src 'self'; img-src 'self' data:; object-src 'none'; frame-ancestors 'none'; \
base-uri 'none'; form-action 'self'";

fn is_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("text/html")
        })
}

/// Adds the headers to `headers` of an answer (the CSP and frame denial only when
/// it is HTML). A header a handler set itself is kept.
pub fn add_to(headers: &mut HeaderMap) {
    if !headers.contains_key(header::X_CONTENT_TYPE_OPTIONS) {
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
    }
    if is_html(headers) {
        if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
            headers.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_SECURITY_POLICY),
            );
        }
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
}

/// The middleware (`App::wrap(from_fn(security_headers))`).
pub async fn security_headers(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let mut response = next.call(req).await?;
    add_to(response.headers_mut());
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_type(content_type: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(content_type).unwrap(),
        );
        add_to(&mut h);
        h
    }

    #[test]
    fn html_gets_all_three_and_others_only_nosniff() {
        let html = with_type("text/html; charset=utf-8");
        assert_eq!(html.get("x-frame-options").unwrap(), "DENY");
        assert_eq!(html.get("x-content-type-options").unwrap(), "nosniff");
        let csp = html
            .get("content-security-policy")
            .unwrap()
            .to_str()
            .unwrap();
        assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"));
        let json = with_type("application/json");
        assert_eq!(json.get("x-content-type-options").unwrap(), "nosniff");
        assert!(json.get("content-security-policy").is_none());
        assert!(json.get("x-frame-options").is_none());
    }
}
