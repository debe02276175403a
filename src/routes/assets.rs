//! `/static/…`: the stylesheet and icon, compiled in and long-cached.

use actix_web::http::header;
use actix_web::{web, HttpResponse};

const STYLE: &str = include_str!("../../static/style.css");
const FAVICON: &str = include_str!("../../static/favicon.svg");

/// A week; the files change only with a new release.
const CACHE_CONTROL: &str = "public, max-age=604800";

pub async fn asset(name: web::Path<String>) -> HttpResponse {
    let (body, content_type) = match name.as_str() {
        "style.css" => (STYLE, "text/css; charset=utf-8"),
        "favicon.svg" => (FAVICON, "image/svg+xml"),
        _ => {
            return HttpResponse::NotFound()
                .content_type("text/plain; charset=utf-8")
                .body("not found\n")
        }
    };
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((header::CACHE_CONTROL, CACHE_CONTROL))
        .body(body)
}
