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

#[actix_web::test]
async fn a_page_shows_its_title_body_and_version_and_raw_is_plain_text() {
    let app = spawn_app().await;
    app.conn()
        .execute(
            "UPDATE pages SET body = '<b>bold</b> & more' WHERE slug = 'curl'",
            [],
        )
        .unwrap();
    let r = app.get("/p/curl").await;
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    assert!(body.contains("command line tool for transferring data"));
    assert!(
        body.contains("&lt;b&gt;bold&lt;&#x2F;b&gt; &amp; more"),
        "{body}"
    );
    let raw = app.get("/p/curl/raw").await;
    assert_eq!(
        header(&raw, "content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(raw.text().await.unwrap(), "<b>bold</b> & more");
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
async fn health_and_static_files_answer() {
    let app = spawn_app().await;
    assert_eq!(app.get("/healthz").await.status(), 200);
    let css = app.get("/static/style.css").await;
    assert_eq!(css.status(), 200);
    assert!(header(&css, "cache-control").unwrap().contains("max-age"));
    assert_eq!(app.get("/static/favicon.svg").await.status(), 200);
    assert_eq!(app.get("/static/nope.js").await.status(), 404);
}
