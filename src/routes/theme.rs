//! `GET /theme/{name}`: remembers the visitor's theme in a cookie and goes back to
//! the page it was chosen on.

use actix_web::cookie::{time::Duration, Cookie, SameSite};
use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use crate::routes::error_page;
use crate::state::AppState;

/// The themes the stylesheet has; `auto` forgets the choice and follows the
/// system's `prefers-color-scheme`.
pub const THEMES: &[&str] = &["light", "dark", "auto"];

/// The query of `/theme/{name}`.
#[derive(Deserialize)]
pub struct ThemeQuery {
    /// Where to go afterwards: a local path (`/p/x?y`), never another site.
    back: Option<String>,
}

/// 303 back to the page the theme was chosen on (the `back` parameter, else the
/// `Referer` when it is this site, else `/`) with `theme=NAME` set for a year, or
/// removed for `auto`; an unknown name is a 404 page.
pub async fn set_theme(
    state: web::Data<AppState>,
    req: HttpRequest,
    name: web::Path<String>,
    query: web::Query<ThemeQuery>,
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
    let back = query
        .back
        .as_deref()
        .and_then(local_path)
        .or_else(|| {
            // The name this visitor used, public URL or not: the page it came from.
            let origin = crate::http::origin::asked(&req, &state.trusted_proxies);
            referer_path(&req, &origin.host)
        })
        .unwrap_or_else(|| "/".to_owned());
    let mut cookie = Cookie::build("theme", name.clone())
        .path("/")
        .max_age(Duration::days(365))
        .same_site(SameSite::Lax)
        .http_only(true)
        .finish();
    if name == "auto" {
        cookie.make_removal();
    }
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, back))
        .cookie(cookie)
        .finish()
}

/// `candidate` when it is a path on this site: starts with one `/` (not `//` or
/// `/\`, which browsers read as another host), visible ASCII only, and not the
/// theme switch itself. Anything else is refused.
pub fn local_path(candidate: &str) -> Option<String> {
    let rest = candidate.strip_prefix('/')?;
    if rest.starts_with('/') || candidate.contains('\\') {
        return None;
    }
    if !candidate.bytes().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    if candidate.starts_with("/theme/") {
        return None;
    }
    Some(candidate.to_owned())
}

/// The path of the `Referer` when it names this very site (`host`: the public host,
/// as a trusted proxy forwards it, else the request's own).
fn referer_path(req: &HttpRequest, host: &str) -> Option<String> {
    let referer = req.headers().get(header::REFERER)?.to_str().ok()?;
    let after_scheme = referer
        .strip_prefix("http://")
        .or_else(|| referer.strip_prefix("https://"))?;
    let (authority, path) = match after_scheme.find(['/', '?', '#']) {
        Some(i) => after_scheme.split_at(i),
        None => (after_scheme, "/"),
    };
    if !authority.eq_ignore_ascii_case(host) {
        return None;
    }
    // A fragment never reaches the server, and a bare `?x` is the root's query.
    let path = path.split('#').next().unwrap_or("/");
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else if path.is_empty() {
        "/".to_owned()
    } else {
        path.to_owned()
    };
    local_path(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_are_kept() {
        assert_eq!(local_path("/p/vim?x=1").as_deref(), Some("/p/vim?x=1"));
        assert_eq!(local_path("/").as_deref(), Some("/"));
        for bad in [
            "https://evil.example/",
            "//evil.example/",
            "/\\evil.example",
            "evil",
            "/a b",
            "/theme/dark",
            "",
            "/\u{e9}",
        ] {
            assert_eq!(local_path(bad), None, "{bad:?}");
        }
    }
}
