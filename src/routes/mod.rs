//! HTTP routes, one file per endpoint family, and the helpers they share.

pub mod api;
pub mod assets;
pub mod health;
pub mod history;
pub mod ledger;
pub mod metrics;
pub mod search;
pub mod security_headers;
pub mod theme;
pub mod unread_body;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{HttpRequest, HttpResponse};
use serde::Serialize;

use crate::state::AppState;

/// Middleware: a `HEAD` request is routed exactly as the `GET` of the same URL, so
/// every GET route answers HEAD with GET's status and headers, `Content-Length`
/// included (SPEC §9; RFC 9110 §9.3.2 allows it since it is GET's). actix-http's
/// dispatcher records that the request it is serving is a HEAD before any of this
/// runs, and frames that answer without its body, whatever the handler produced and
/// whatever is pipelined behind it (SPEC §10). That per-request decision is our
/// patch of actix-http (`vendor/actix-http/PATCHED.md`): upstream keeps one flag
/// per connection, set by the last request *read*, so a pipelined request behind a
/// slow HEAD made the HEAD answer carry its body (and a HEAD behind a slow GET cut
/// the GET's).
///
/// The handler runs in full, as for a GET: a `HEAD /search?q=…` spends the search
/// budget once and scores exactly what the GET would (it *is* one GET whose body is
/// not sent).
pub async fn head_as_get(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if req.method() == Method::HEAD {
        req.head_mut().method = Method::GET;
    }
    next.call(req).await
}

/// The visitor's theme from the `theme` cookie: `"dark"` or `"light"` when chosen,
/// `"auto"` (follow the system's `prefers-color-scheme`) when not.
pub fn theme(req: &HttpRequest) -> &'static str {
    // Most requests carry no cookie: skip parsing (and caching) an empty jar.
    if !req.headers().contains_key(actix_web::http::header::COOKIE) {
        return "auto";
    }
    match req.cookie("theme").as_ref().map(|c| c.value()) {
        Some("dark") => "dark",
        Some("light") => "light",
        _ => "auto",
    }
}

/// Default `<meta name="description">` of a page that sets none.
pub const SITE_DESCRIPTION: &str =
    "Short text pages published by agents: read the ledger or search page titles.";

/// The request's path and query, percent-encoded for a `?back=` parameter, so the
/// theme switch can return to this page.
pub fn back_param(req: &HttpRequest) -> String {
    percent_encoding::utf8_percent_encode(here(req), percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The request's path and query as received (`/` when there is none): where the
/// theme switch returns to, and so part of what a rendered page depends on.
pub fn here(req: &HttpRequest) -> &str {
    req.uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
}

/// Renders `template` with `context` plus `theme`, `back` (this page, for the theme
/// switch), and defaults for `q` (empty), `meta_description` and `og_title` when the
/// context does not set them. A template error is logged and becomes a plain 500.
pub fn render(
    state: &AppState,
    req: &HttpRequest,
    status: StatusCode,
    template: &str,
    context: impl Serialize,
) -> HttpResponse {
    match render_html(state, req, template, context) {
        Ok(html) => HttpResponse::build(status)
            .content_type("text/html; charset=utf-8")
            .body(html),
        Err(failed) => failed.response(),
    }
}

/// A template failed to render; the cause is already logged.
#[derive(Debug, Clone, Copy)]
pub struct RenderFailed;

impl RenderFailed {
    /// The plain 500 answer.
    pub fn response(self) -> HttpResponse {
        HttpResponse::InternalServerError()
            .content_type("text/plain; charset=utf-8")
            .body("500 Internal Server Error")
    }
}

/// What [`render`] renders, as text. Errors: the template failed (logged).
pub fn render_html(
    state: &AppState,
    req: &HttpRequest,
    template: &str,
    context: impl Serialize,
) -> Result<String, RenderFailed> {
    render_with(
        &state.templates,
        theme(req),
        &back_param(req),
        template,
        context,
    )
}

/// [`render_html`] with the theme and the return path given (`back`, already
/// percent-encoded) rather than read from a request.
pub fn render_with(
    templates: &tera::Tera,
    theme: &str,
    back: &str,
    template: &str,
    context: impl Serialize,
) -> Result<String, RenderFailed> {
    let mut ctx =
        tera::Context::from_serialize(context).map_err(|e| template_failure(template, e))?;
    ctx.insert("theme", theme);
    ctx.insert("back", back);
    if !ctx.contains_key("q") {
        ctx.insert("q", "");
    }
    if !ctx.contains_key("meta_description") {
        ctx.insert("meta_description", SITE_DESCRIPTION);
    }
    if !ctx.contains_key("og_title") {
        ctx.insert("og_title", "agent-pages");
    }
    templates
        .render(template, &ctx)
        .map_err(|e| template_failure(template, e))
}

fn template_failure(template: &str, e: tera::Error) -> RenderFailed {
    tracing::error!(template, error = ?e, "template failed to render");
    RenderFailed
}

#[derive(Serialize)]
struct ErrorContext<'a> {
    status: u16,
    heading: &'a str,
    message: &'a str,
}

/// The shared error page for `status`.
pub fn error_page(
    state: &AppState,
    req: &HttpRequest,
    status: StatusCode,
    message: &str,
) -> HttpResponse {
    let heading = status.canonical_reason().unwrap_or("Error");
    render(
        state,
        req,
        status,
        "error.html",
        ErrorContext {
            status: status.as_u16(),
            heading,
            message,
        },
    )
}

/// The 404 page for any path no route knows.
pub async fn not_found(state: actix_web::web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    error_page(
        &state,
        &req,
        StatusCode::NOT_FOUND,
        "There is no page at this address.",
    )
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::theme;

    #[test]
    fn the_theme_cookie_is_found_among_others_and_anything_else_is_auto() {
        for (cookies, want) in [
            ("a=1; theme=dark; b=2", "dark"),
            ("theme=light", "light"),
            ("theme=neon", "auto"),
            ("a=1;b=theme", "auto"),
            ("theme=%64ark", "dark"),
            ("theme=dark; name=José", "dark"),
            ("", "auto"),
        ] {
            let req = TestRequest::default()
                .insert_header(("cookie", cookies))
                .to_http_request();
            assert_eq!(theme(&req), want, "{cookies:?}");
        }
        assert_eq!(theme(&TestRequest::default().to_http_request()), "auto");
        let req = TestRequest::default()
            .append_header(("cookie", "a=1"))
            .append_header(("cookie", "theme=dark"))
            .to_http_request();
        assert_eq!(theme(&req), "dark");
    }
}
