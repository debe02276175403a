//! `GET /theme/{name}`: remembers the visitor's theme in a cookie and goes back to `/`.

use actix_web::cookie::{time::Duration, Cookie, SameSite};
use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};

use crate::routes::error_page;
use crate::state::AppState;

/// The themes the stylesheet has.
pub const THEMES: &[&str] = &["light", "dark"];

/// 303 to `/` with `theme=NAME` set for a year; an unknown name is a 404 page.
pub async fn set_theme(
    state: web::Data<AppState>,
    req: HttpRequest,
    name: web::Path<String>,
) -> HttpResponse {
    let name = name.into_inner();
    if !THEMES.contains(&name.as_str()) {
        return error_page(
            &state,
            &req,
            StatusCode::NOT_FOUND,
            "There is no such theme.",
        );
    }
    let cookie = Cookie::build("theme", name)
        .path("/")
        .max_age(Duration::days(365))
        .same_site(SameSite::Lax)
        .http_only(true)
        .finish();
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, "/"))
        .cookie(cookie)
        .finish()
}
