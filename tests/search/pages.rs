//! The HTML routes around search: ledger, page views, theme, health, static files.

use crate::helpers::{header, spawn_app};

#[actix_web::test]
async fn the_ledger_lists_candidates_newest_first_and_paginates() {
    let app = spawn_app().await;
    {
        let mut conn = app.conn();
        let lines: String = (0..60)
            .map(|i| format!("{{\"slug\":\"bulk-{i}\",\"title\":\"Bulk page {i}\"}}\n"))
            .collect();
        agent_pages::import::import(&mut conn, lines.as_bytes(), None, crate::helpers::T0).unwrap();
    }
    let r = app.get("/").await;
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    assert!(body.contains("68 pages"), "{body}");
    assert!(body.find("/p/bulk-59").unwrap() < body.find("/p/bulk-58").unwrap());
    assert!(
        !body.contains("/p/kubernetes\""),
        "older pages are on page 2"
    );
    assert!(body.contains("/?page=2"));
    let page2 = app.get("/?page=2").await.text().await.unwrap();
    assert!(page2.contains("/p/kubernetes\""));
    assert_eq!(app.get("/?page=zero").await.status(), 400);
    // The ledger never touches the search budget.
    assert_eq!(app.counters("127.0.0.1"), (0, 0));
}

/// A body with Markdown, raw HTML and hostile bits in it.
const MARKDOWN_BODY: &str = "# Usage\n\n<b>bold</b> & more, ~~old~~.\n\n\
| flag | meaning |\n|:-----|--------:|\n| `-s` | silent |\n\n\
- [x] fetch\n- [ ] upload\n\n\
```sh\ncurl -s https://example.org\n```\n\n\
<script>alert('x')</script>\n\n\
[click](javascript:alert(1)) <img src=x onerror=alert(2)> [docs](https://curl.se/)\n";

#[actix_web::test]
async fn a_page_renders_its_body_as_sanitized_markdown_and_raw_is_exact() {
    let app = spawn_app().await;
    app.conn()
        .execute(
            "UPDATE pages SET body = ?1 WHERE slug = 'curl'",
            [MARKDOWN_BODY],
        )
        .unwrap();
    let r = app.get("/p/curl").await;
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    assert!(body.contains("command line tool for transferring data"));
    // The page title is the h1; the body's `#` heading comes one level below.
    assert!(body.contains("<h2>Usage</h2>"), "{body}");
    assert!(body.contains("<b>bold</b> &amp; more"), "{body}");
    assert!(body.contains("<del>old</del>"), "{body}");
    assert!(
        body.contains("<th class=\"align-left\">flag</th>"),
        "{body}"
    );
    assert!(
        body.contains("<td class=\"align-right\">silent</td>"),
        "{body}"
    );
    assert_eq!(body.matches("type=\"checkbox\"").count(), 2, "{body}");
    assert!(body.contains("<code class=\"language-sh\">"), "{body}");
    assert!(
        body.contains("href=\"https://curl.se/\" rel=\"nofollow noopener noreferrer\""),
        "{body}"
    );
    assert!(!body.contains("alert"), "{body}");
    assert!(!body.contains("javascript:"), "{body}");
    assert!(!body.contains("onerror"), "{body}");
    // Search-engine and link-preview summaries come from the body's text.
    assert!(
        body.contains("<meta name=\"description\" content=\"Usage bold &amp; more, old."),
        "{body}"
    );
    assert!(body.contains("<meta property=\"og:type\" content=\"article\">"));

    let raw = app.get("/p/curl/raw").await;
    assert_eq!(
        header(&raw, "content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(raw.text().await.unwrap(), MARKDOWN_BODY);
}

#[actix_web::test]
async fn a_page_is_rendered_once_per_version() {
    let app = spawn_app().await;
    assert!(app.state.pages.markdown.is_empty());
    for _ in 0..3 {
        assert_eq!(app.get("/p/vim").await.status(), 200);
    }
    assert_eq!(app.state.pages.markdown.len(), 1);
    // A new version is rendered afresh, not served stale.
    app.conn()
        .execute(
            "UPDATE pages SET body = '# Fresh', current_version = current_version + 1 WHERE slug = 'vim'",
            [],
        )
        .unwrap();
    let body = app.get("/p/vim").await.text().await.unwrap();
    assert!(body.contains("<h2>Fresh</h2>"), "{body}");
    assert_eq!(app.state.pages.markdown.len(), 2);
}

#[actix_web::test]
async fn html_answers_carry_the_security_headers() {
    let app = spawn_app().await;
    for path in ["/", "/p/vim", "/nowhere", "/search?q=vim", "/search?q=k"] {
        let r = app.get(path).await;
        assert!(
            header(&r, "content-type").unwrap().starts_with("text/html"),
            "{path}"
        );
        let csp = header(&r, "content-security-policy").unwrap_or_else(|| panic!("{path}"));
        assert!(csp.contains("script-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        assert_eq!(header(&r, "x-frame-options"), Some("DENY"), "{path}");
        assert_eq!(
            header(&r, "x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
    }
    for path in ["/p/vim/raw", "/static/style.css", "/healthz", "/robots.txt"] {
        let r = app.get(path).await;
        assert_eq!(
            header(&r, "x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
    }
    // The page has no inline script for the policy to block.
    let body = app.get("/").await.text().await.unwrap();
    assert!(body.contains("<script type=\"module\" src=\"/static/search.js\"></script>"));
    assert_eq!(body.matches("<script").count(), 1, "{body}");
    assert!(!body.contains(" style="), "{body}");
}

#[actix_web::test]
async fn the_ledger_says_where_it_ends_with_thousands_separated() {
    let app = spawn_app().await;
    {
        let mut conn = app.conn();
        let lines: String = (0..1_000)
            .map(|i| format!("{{\"slug\":\"bulk-{i}\",\"title\":\"Bulk page {i}\"}}\n"))
            .collect();
        agent_pages::import::import(&mut conn, lines.as_bytes(), None, crate::helpers::T0).unwrap();
    }
    let body = app.get("/?page=2").await.text().await.unwrap();
    assert!(body.contains("1,008 pages · page 2 of 21"), "{body}");
    let past = app.get("/?page=999999").await;
    assert_eq!(past.status(), 200);
    let past = past.text().await.unwrap();
    assert!(!past.contains("No pages yet"), "{past}");
    assert!(
        past.contains("Page 999,999 is past the end of the ledger: it ends at page 21."),
        "{past}"
    );
    assert!(past.contains("href=\"/?page=21\""), "{past}");
}

#[actix_web::test]
async fn unknown_archived_and_claimed_pages_are_404() {
    let app = spawn_app().await;
    app.conn()
        .execute(
            "UPDATE pages SET lifecycle = 'archived' WHERE slug = 'vim'",
            [],
        )
        .unwrap();
    app.conn()
        .execute("UPDATE pages SET claimed_at = 5 WHERE slug = 'redis'", [])
        .unwrap();
    for path in [
        "/p/nope",
        "/p/vim",
        "/p/redis",
        "/p/redis/raw",
        "/p/NOT_A_SLUG",
        "/nowhere",
    ] {
        let r = app.get(path).await;
        assert_eq!(r.status(), 404, "{path}");
        assert!(header(&r, "content-type").unwrap().starts_with("text/html"));
    }
    let ledger = app.get("/").await.text().await.unwrap();
    assert!(!ledger.contains("/p/vim\"") && !ledger.contains("/p/redis\""));
}

#[actix_web::test]
async fn the_theme_cookie_is_set_and_used() {
    let app = spawn_app().await;
    let r = app.get("/theme/dark").await;
    assert_eq!(r.status(), 303);
    assert_eq!(header(&r, "location"), Some("/"));
    assert!(header(&r, "set-cookie").unwrap().starts_with("theme=dark"));
    assert_eq!(app.get("/theme/neon").await.status(), 404);
    // No choice: the page follows the system's colour scheme.
    let body = app.get("/").await.text().await.unwrap();
    assert!(body.contains("data-theme=\"auto\""), "{body}");
    assert!(body.contains("content=\"light dark\""), "{body}");
    // `auto` forgets the choice.
    let r = app.get("/theme/auto").await;
    assert_eq!(r.status(), 303);
    let cookie = header(&r, "set-cookie").unwrap();
    assert!(
        cookie.starts_with("theme=;") && cookie.contains("Max-Age=0"),
        "{cookie}"
    );
    let body = app
        .client
        .get(format!("{}/", app.address))
        .header("Cookie", "theme=dark")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(body.contains("data-theme=\"dark\""));
}

#[actix_web::test]
async fn choosing_a_theme_returns_to_the_page_it_was_chosen_on_on_this_site_only() {
    let app = spawn_app().await;
    let host = app.address.trim_start_matches("http://").to_owned();
    let location = |r: &reqwest::Response| header(r, "location").unwrap().to_owned();
    // The switch's links carry the page they are on.
    let body = app.get("/p/vim").await.text().await.unwrap();
    assert!(
        body.contains("href=\"/theme/dark?back=%2Fp%2Fvim\""),
        "{body}"
    );
    let r = app.get("/theme/dark?back=%2Fp%2Fvim").await;
    assert_eq!(location(&r), "/p/vim");
    let r = app.get("/theme/light?back=%2F%3Fpage%3D2").await;
    assert_eq!(location(&r), "/?page=2");
    // Without `back`, a Referer from this very host.
    let with_referer = |referer: String| {
        app.client
            .get(format!("{}/theme/dark", app.address))
            .header("Referer", referer)
            .send()
    };
    let r = with_referer(format!("http://{host}/p/curl?x=1#top"))
        .await
        .unwrap();
    assert_eq!(location(&r), "/p/curl?x=1");
    // Never another site, whatever is asked.
    for back in [
        "https%3A%2F%2Fevil.example%2F",
        "%2F%2Fevil.example%2F",
        "%2F%5Cevil.example",
        "evil.example",
    ] {
        let r = app.get(&format!("/theme/dark?back={back}")).await;
        assert_eq!(location(&r), "/", "{back}");
    }
    let r = with_referer("http://evil.example/p/curl".into())
        .await
        .unwrap();
    assert_eq!(location(&r), "/");
}

#[actix_web::test]
async fn health_and_static_files_answer() {
    let app = spawn_app().await;
    assert_eq!(app.get("/healthz").await.status(), 200);
    let css = app.get("/static/style.css").await;
    assert_eq!(css.status(), 200);
    assert!(header(&css, "cache-control").unwrap().contains("max-age"));
    assert_eq!(app.get("/static/favicon.svg").await.status(), 200);
    assert_eq!(app.get("/static/nope.js").await.status(), 404);
    let js = app.get("/static/search.js").await;
    assert_eq!(js.status(), 200);
    assert!(header(&js, "content-type")
        .unwrap()
        .starts_with("text/javascript"));
    let ico = app.get("/favicon.ico").await;
    assert_eq!(ico.status(), 200);
    assert_eq!(header(&ico, "content-type"), Some("image/x-icon"));
    assert_eq!(&ico.bytes().await.unwrap()[..4], &[0, 0, 1, 0]);
    let robots = app.get("/robots.txt").await;
    assert_eq!(robots.status(), 200);
    assert!(robots.text().await.unwrap().contains("Disallow: /search"));
    // Every page has a description, Open Graph tags and a theme colour.
    let body = app.get("/").await.text().await.unwrap();
    for needle in [
        "<meta name=\"description\" content=\"",
        "<meta property=\"og:title\" content=\"agent-pages\">",
        "<meta name=\"theme-color\"",
        "minlength=\"2\"",
    ] {
        assert!(body.contains(needle), "{needle}: {body}");
    }
}
