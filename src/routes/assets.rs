//! `/static/…`: the stylesheet, the live-search script and the icons, compiled in and
//! long-cached; plus `/favicon.ico` and `/robots.txt` at the root where browsers and
//! crawlers look for them.

use actix_web::http::header;
use actix_web::{web, HttpResponse};

const STYLE: &str = include_str!("../../static/style.css");
const SEARCH_JS: &str = include_str!("../../static/search.js");
const FAVICON: &str = include_str!("../../static/favicon.svg");
const FAVICON_ICO: &[u8] = include_bytes!("../../static/favicon.ico");

/// Crawlers may read the ledger and pages; search answers are per-visitor, budgeted
/// and not worth indexing, and the API is for agents.
const ROBOTS: &str = "User-agent: *\nDisallow: /search\nDisallow: /api/\nDisallow: /theme/\n";

/// A week; the files change only with a new release.
const CACHE_CONTROL: &str = "public, max-age=604800";

/// `GET /static/{name}`.
pub async fn asset(name: web::Path<String>) -> HttpResponse {
    let (body, content_type): (&'static [u8], _) = match name.as_str() {
        "style.css" => (STYLE.as_bytes(), "text/css; charset=utf-8"),
        "search.js" => (SEARCH_JS.as_bytes(), "text/javascript; charset=utf-8"),
        "favicon.svg" => (FAVICON.as_bytes(), "image/svg+xml"),
        "favicon.ico" => (FAVICON_ICO, "image/x-icon"),
        _ => {
            return HttpResponse::NotFound()
                .content_type("text/plain; charset=utf-8")
                .body("not found\n")
        }
    };
    cached(body, content_type)
}

/// `GET /favicon.ico`.
pub async fn favicon_ico() -> HttpResponse {
    cached(FAVICON_ICO, "image/x-icon")
}

/// `GET /robots.txt`.
pub async fn robots() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "public, max-age=86400"))
        .body(ROBOTS)
}

fn cached(body: &'static [u8], content_type: &'static str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((header::CACHE_CONTROL, CACHE_CONTROL))
        .body(body)
}
