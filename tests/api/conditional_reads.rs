//! Conditional reads (issue 32 §4; RFC 9110 sections 13.1.2, 13.1.3, 13.2.2, 15.4.5)
//! through real HTTP: every page and version read answers `If-None-Match` (weak
//! comparison, `*` matching) and `If-Modified-Since` (whole seconds, ignored under
//! `If-None-Match` or when it is no date) with a bodiless 304 that carries the 200's
//! validators and caching headers, on GET and HEAD alike, and only where the 200
//! would have been answered. `tests/postgres` runs this file again over PostgreSQL.

use std::time::{Duration, UNIX_EPOCH};

use actix_web::http::header::HttpDate;
use serde_json::json;

use crate::helpers::{spawn_app, spawn_app_with, Reply, TestApp, AGENT, PIN, T0};

/// `t` (unix seconds) as an HTTP-date.
fn http_date(t: i64) -> String {
    HttpDate::from(UNIX_EPOCH + Duration::from_secs(t as u64)).to_string()
}

impl TestApp {
    /// `method path` with `headers`, read whole.
    async fn send(&self, method: reqwest::Method, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut r = self
            .client
            .request(method, self.url(path))
            .header("X-Forwarded-For", AGENT);
        for (name, value) in headers {
            r = r.header(*name, *value);
        }
        Reply::of(r.send().await.unwrap()).await
    }

    async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        self.send(reqwest::Method::GET, path, headers).await
    }
}

/// The headers a 304 carries as its 200 does.
const VALIDATORS: [&str; 4] = ["etag", "last-modified", "cache-control", "vary"];

/// Asserts `r` is a 304 with no body and `ok`'s validators, and no representation
/// headers of its own.
#[track_caller]
fn assert_not_modified(r: &Reply, ok: &Reply, what: &str) {
    assert_eq!(r.status, 304, "{what}: {}", r.text);
    assert_eq!(r.text, "", "{what}");
    for name in VALIDATORS {
        assert_eq!(r.header(name), ok.header(name), "{name} of {what}");
    }
    assert_eq!(r.header("content-length"), None, "{what}");
    assert_eq!(r.header("content-type"), None, "{what}");
}

/// Asserts `r` is `ok` again: 200, the same body and headers.
#[track_caller]
fn assert_full(r: &Reply, ok: &Reply, what: &str) {
    assert_eq!(r.status, 200, "{what}: {}", r.text);
    assert_eq!(r.text, ok.text, "{what}");
    for name in VALIDATORS {
        assert_eq!(r.header(name), ok.header(name), "{name} of {what}");
    }
}

/// Every rule on `path` (with `extra` headers on every request), whose 200 carries
/// `ETag: "{opaque}"` and `Last-Modified: last_modified`; returns the 200.
async fn check_route(
    app: &TestApp,
    path: &str,
    extra: &[(&str, &str)],
    opaque: &str,
    last_modified: Option<i64>,
) -> Reply {
    let send = |method: reqwest::Method, more: Vec<(&'static str, String)>| async move {
        let mut headers: Vec<(&str, &str)> = extra.to_vec();
        headers.extend(more.iter().map(|(n, v)| (*n, v.as_str())));
        app.send(method, path, &headers).await
    };
    let get = |more| send(reqwest::Method::GET, more);
    let head = |more| send(reqwest::Method::HEAD, more);
    let with = |more: &[(&'static str, String)]| more.to_vec();

    let ok = get(with(&[])).await;
    assert_eq!(ok.status, 200, "{path}: {}", ok.text);
    let tag = format!("\"{opaque}\"");
    assert_eq!(ok.header("etag"), Some(tag.as_str()), "{path}");
    let date = last_modified.map(http_date);
    assert_eq!(ok.header("last-modified"), date.as_deref(), "{path}");
    assert!(
        ok.header("cache-control").unwrap().contains("no-cache"),
        "{path}"
    );

    // If-None-Match: the tag, weakly compared, alone or in a list, or `*`.
    for matching in [
        tag.clone(),
        format!("W/{tag}"),
        format!("\"v999\", {tag}"),
        "*".to_owned(),
    ] {
        let r = get(with(&[("If-None-Match", matching.clone())])).await;
        assert_not_modified(&r, &ok, &format!("{path} If-None-Match: {matching}"));
    }
    for stale in ["\"v999\"", "\"v0\"", &format!("\"{opaque}-x\""), "nonsense"] {
        let r = get(with(&[("If-None-Match", stale.to_owned())])).await;
        assert_full(&r, &ok, &format!("{path} If-None-Match: {stale}"));
    }

    // If-Modified-Since, against Last-Modified to the second.
    match last_modified {
        Some(at) => {
            for since in [at, at + 1, at + 3600] {
                let r = get(with(&[("If-Modified-Since", http_date(since))])).await;
                assert_not_modified(&r, &ok, &format!("{path} If-Modified-Since {since}"));
            }
            for since in [http_date(at - 1), "not a date".to_owned(), at.to_string()] {
                let r = get(with(&[("If-Modified-Since", since.clone())])).await;
                assert_full(&r, &ok, &format!("{path} If-Modified-Since: {since}"));
            }
            // Both: If-None-Match decides, If-Modified-Since is ignored.
            let r = get(with(&[
                ("If-None-Match", "\"v999\"".to_owned()),
                ("If-Modified-Since", http_date(at + 3600)),
            ]))
            .await;
            assert_full(&r, &ok, &format!("{path} stale tag, recent date"));
            let r = get(with(&[
                ("If-None-Match", tag.clone()),
                ("If-Modified-Since", http_date(at - 3600)),
            ]))
            .await;
            assert_not_modified(&r, &ok, &format!("{path} current tag, old date"));
        }
        None => {
            // No modification time: If-Modified-Since is ignored.
            let r = get(with(&[("If-Modified-Since", http_date(T0 + 10_000_000))])).await;
            assert_full(
                &r,
                &ok,
                &format!("{path} If-Modified-Since, no Last-Modified"),
            );
        }
    }

    // HEAD alike: 304 for the current tag, GET's head for a stale one.
    let r = head(with(&[("If-None-Match", tag.clone())])).await;
    assert_not_modified(&r, &ok, &format!("HEAD {path}"));
    let r = head(with(&[("If-None-Match", "\"v999\"".to_owned())])).await;
    assert_eq!(r.status, 200, "HEAD {path}");
    assert_eq!(r.text, "", "HEAD {path}");
    assert_eq!(
        r.header("content-length"),
        Some(ok.text.len().to_string().as_str()),
        "HEAD {path}"
    );
    for name in VALIDATORS {
        assert_eq!(r.header(name), ok.header(name), "{name} of HEAD {path}");
    }
    ok
}

/// `notes` at version 1 (T0) and 2 (T0 + 5).
async fn two_versions(app: &TestApp) {
    app.publish("notes", "Notes").await;
    app.clock.advance(5);
    let r = app
        .put_page("notes", Some(PIN), AGENT, json!({"body": "two"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.clock.advance(100);
}

#[actix_web::test]
async fn page_reads_answer_304_to_their_tag_and_date() {
    let app = spawn_app().await;
    two_versions(&app).await;
    for path in ["/p/notes", "/p/notes/raw", "/api/pages/notes"] {
        let ok = check_route(&app, path, &[], "v2", Some(T0 + 5)).await;
        assert_eq!(ok.header("cache-control"), Some("no-cache"), "{path}");
    }
    // The HTML differs by theme, and says so.
    assert_eq!(app.fetch("/p/notes").await.header("vary"), Some("Cookie"));
    assert_eq!(app.fetch("/api/pages/notes").await.header("vary"), None);
}

#[actix_web::test]
async fn version_reads_answer_304_to_their_tag_and_date() {
    let app = spawn_app().await;
    two_versions(&app).await;
    let pin_vary = Some("X-Page-Pin");
    let ok = check_route(
        &app,
        "/api/pages/notes/versions",
        &[],
        "v2-p1-n50",
        Some(T0 + 5),
    )
    .await;
    assert_eq!(ok.header("vary"), pin_vary);
    check_route(
        &app,
        "/api/pages/notes/versions?per_page=1&page=2",
        &[],
        "v2-p2-n1",
        Some(T0 + 5),
    )
    .await;
    let ok = check_route(&app, "/api/pages/notes/versions/1", &[], "v1", Some(T0)).await;
    assert_eq!(ok.header("vary"), pin_vary);
    check_route(&app, "/api/pages/notes/versions/2", &[], "v2", Some(T0 + 5)).await;
    let ok = check_route(&app, "/p/notes/history", &[], "v2-p1-n50", Some(T0 + 5)).await;
    assert_eq!(ok.header("vary"), Some("Cookie, X-Page-Pin"));
    check_route(
        &app,
        "/p/notes/history?page=2",
        &[],
        "v2-p2-n50",
        Some(T0 + 5),
    )
    .await;
    check_route(&app, "/p/notes/v/2", &[], "v2-after-v1", Some(T0 + 5)).await;
    check_route(&app, "/p/notes/v/1", &[], "v1", Some(T0)).await;
}

#[actix_web::test]
async fn a_304_has_no_body_on_the_wire() {
    let app = spawn_app().await;
    two_versions(&app).await;
    for method in ["GET", "HEAD"] {
        let raw = app
            .raw_exchange(
                format!(
                    "{method} /p/notes HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"v2\"\r\n\
                     Connection: close\r\n\r\n"
                )
                .as_bytes(),
            )
            .await;
        assert_eq!(raw.status, 304, "{method}: {}", raw.head);
        assert_eq!(raw.header("etag"), Some("\"v2\""), "{method}");
        assert_eq!(raw.header("content-length"), None, "{method}: {}", raw.head);
        assert_eq!(raw.header("transfer-encoding"), None, "{method}");
        assert!(raw.after_head.is_empty(), "{method}: {:?}", raw.after_head);
    }
}

#[actix_web::test]
async fn every_new_version_changes_the_tags_that_depend_on_it() {
    // Two versions kept: the third prunes the first.
    let app = spawn_app_with(|s| s.history_versions = 2).await;
    two_versions(&app).await;
    let mut tags = Vec::new();
    for path in [
        "/p/notes",
        "/p/notes/raw",
        "/api/pages/notes",
        "/api/pages/notes/versions",
        "/api/pages/notes/versions?per_page=1&page=2",
        "/api/pages/notes/versions/2",
        "/p/notes/history",
        "/p/notes/v/2",
    ] {
        let r = app.fetch(path).await;
        assert_eq!(r.status, 200, "{path}");
        tags.push((path, r.header("etag").unwrap().to_owned(), r.text));
    }
    app.clock.advance(10);
    let r = app
        .put_page("notes", Some(PIN), AGENT, json!({"body": "three"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    for (path, tag, old) in &tags {
        let r = app.get_with(path, &[("If-None-Match", tag)]).await;
        // Version 2 itself never changes; everything else shows version 3, and the
        // diff of version 2 lost version 1, which is pruned.
        if *path == "/api/pages/notes/versions/2" {
            assert_eq!(r.status, 304, "{path}");
            continue;
        }
        assert_eq!(r.status, 200, "{path} after a new version");
        assert_ne!(r.header("etag"), Some(tag.as_str()), "{path}");
        assert_ne!(&r.text, old, "{path}");
    }
    // Version 2's page now has nothing before it, and no Last-Modified: the time
    // its diff changed is not kept, so a date cannot say the client holds it.
    let v2 = check_route(&app, "/p/notes/v/2", &[], "v2", None).await;
    assert!(!v2.text.contains("line--delete"), "{}", v2.text);
    let r = app
        .get_with("/p/notes/v/2", &[("If-Modified-Since", &http_date(T0 + 5))])
        .await;
    assert_eq!(r.status, 200);
}

#[actix_web::test]
async fn a_chosen_theme_has_its_own_tag() {
    let app = spawn_app().await;
    two_versions(&app).await;
    for path in ["/p/notes", "/p/notes/history", "/p/notes/v/2"] {
        let auto = app.fetch(path).await;
        let auto_tag = auto.header("etag").unwrap().to_owned();
        let opaque = auto_tag.trim_matches('"');
        let dark = check_route(
            &app,
            path,
            &[("Cookie", "theme=dark")],
            &format!("{opaque}-dark"),
            Some(T0 + 5),
        )
        .await;
        assert_ne!(dark.text, auto.text, "{path}");
        // The page held under another theme is not the one this visitor sees.
        let r = app
            .get_with(
                path,
                &[("Cookie", "theme=dark"), ("If-None-Match", &auto_tag)],
            )
            .await;
        assert_eq!(r.status, 200, "{path}");
        let r = app
            .get_with(path, &[("If-None-Match", dark.header("etag").unwrap())])
            .await;
        assert_eq!(r.status, 200, "{path}");
    }
}

#[actix_web::test]
async fn a_gone_page_answers_a_conditional_read_as_an_unconditional_one() {
    let app = spawn_app().await;
    two_versions(&app).await;
    let r = app.act("notes", "archive", Some(PIN), AGENT).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let archived_at = T0 + 105;
    // Every tag it ever had, and `*`: the page's own reads are 404 as without them.
    for path in ["/p/notes", "/p/notes/raw", "/api/pages/notes"] {
        for tag in ["*", "\"v2\"", "\"v3\""] {
            let r = app.get_with(path, &[("If-None-Match", tag)]).await;
            assert_eq!(r.status, 404, "{path} {tag}");
            let plain = app.fetch(path).await;
            assert_eq!(r.text, plain.text, "{path} {tag}");
            assert_eq!(r.header("etag"), None, "{path}");
        }
        let r = app
            .get_with(path, &[("If-Modified-Since", &http_date(archived_at + 60))])
            .await;
        assert_eq!(r.status, 404, "{path}");
    }
    // The history: 404 without the PIN, a wrong PIN counted as without the
    // precondition; with the PIN, a private 304.
    let pin_key = app
        .state
        .budgets
        .pin_failures
        .keys(&agent_pages::client_ip::ClientIp::from_addr(
            AGENT.parse().unwrap(),
        ))
        .0
        .remove(0);
    let failures = || app.counter_row(&pin_key).map_or(0, |(_, count)| count);
    for (i, path) in [
        "/api/pages/notes/versions",
        "/api/pages/notes/versions/3",
        "/p/notes/history",
        "/p/notes/v/3",
    ]
    .into_iter()
    .enumerate()
    {
        let r = app.get_with(path, &[("If-None-Match", "*")]).await;
        assert_eq!(r.status, 404, "{path}");
        assert_eq!(r.header("etag"), None, "{path}");
        let r = app
            .get_with(
                path,
                &[("If-None-Match", "*"), ("X-Page-Pin", "wrong pin!")],
            )
            .await;
        assert_eq!(r.status, 404, "{path} wrong PIN");
        assert_eq!(failures(), i as i64 + 1, "{path}: the wrong PIN counts");
        let ok = app.get_with(path, &[("X-Page-Pin", PIN)]).await;
        assert_eq!(ok.status, 200, "{path}: {}", ok.text);
        assert_eq!(
            ok.header("cache-control"),
            Some("private, no-cache"),
            "{path}"
        );
        let r = app
            .get_with(path, &[("If-None-Match", "*"), ("X-Page-Pin", PIN)])
            .await;
        assert_not_modified(&r, &ok, path);
    }
}
