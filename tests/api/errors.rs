//! Problem documents for bodies that are not JSON, too large, or of the wrong media
//! type, and for paths and methods the API does not have.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{spawn_app, Reply, TestApp, AGENT, PIN};

async fn post_raw(app: &TestApp, path: &str, content_type: Option<&str>, body: Vec<u8>) -> Reply {
    let mut r = app
        .client
        .post(app.url(path))
        .header("X-Forwarded-For", AGENT)
        .body(body);
    if let Some(ct) = content_type {
        r = r.header("Content-Type", ct);
    }
    let r = r.send().await.unwrap();
    Reply {
        status: r.status().as_u16(),
        headers: r.headers().clone(),
        text: r.text().await.unwrap(),
    }
}

#[actix_web::test]
async fn bodies_that_are_not_json_are_malformed_json_problems() {
    let app = spawn_app().await;
    let cases: [(&[u8], Option<&str>); 5] = [
        (b"{\"title\": ", Some("title")),
        (b"{title: 'x'}", None),
        (b"", None),
        (b"{\"title\": \"ok\"} {}", None),
        (b"{\"title\": \"bad \xff\xfe bytes\"}", Some("title")),
    ];
    for (body, field) in cases {
        let r = post_raw(&app, "/api/pages", Some("application/json"), body.to_vec()).await;
        let p = r.problem(400, "malformed-json");
        assert_eq!(p["field"].as_str(), field, "{p}");
    }
    // No Content-Type at all is read as JSON.
    let r = post_raw(
        &app,
        "/api/pages",
        None,
        br#"{"title": "No content type"}"#.to_vec(),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    // A PUT body is read the same way.
    app.publish("target", "Target").await;
    let r = app
        .client
        .put(app.url("/api/pages/target"))
        .header("X-Page-Pin", PIN)
        .header("Content-Type", "application/json")
        .body("{\"title\": }")
        .send()
        .await
        .unwrap();
    let p = Reply::of(r).await.problem(400, "malformed-json");
    assert_eq!(p["field"], "title", "{p}");
    assert_eq!(app.stored("target").1, "Target");
}

#[actix_web::test]
async fn a_body_that_is_not_json_by_media_type_is_415() {
    let app = spawn_app().await;
    for ct in ["text/plain", "application/x-www-form-urlencoded"] {
        post_raw(&app, "/api/pages", Some(ct), br#"{"title": "t"}"#.to_vec())
            .await
            .problem(415, "unsupported-media-type");
    }
    let r = post_raw(
        &app,
        "/api/pages",
        Some("application/json; charset=utf-8"),
        br#"{"title": "t"}"#.to_vec(),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
}

/// Sends `head` (a request without its body) on a raw socket and reads the answer
/// until the server closes or 10 s pass.
async fn raw_exchange(app: &TestApp, head: &str, body: &[u8]) -> String {
    let addr = app.address.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Err(_) | Ok(Err(_)) => break,
            Ok(Ok(n)) => {
                answer.extend_from_slice(&buf[..n]);
                if answer.windows(4).any(|w| w == b"\r\n\r\n") && answer.ends_with(b"}") {
                    break;
                }
            }
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

#[actix_web::test]
async fn a_declared_body_over_300_kib_is_refused_before_it_is_sent() {
    let app = spawn_app().await;
    // The client sends only the head: the answer can only come from Content-Length.
    let head = format!(
        "POST /api/pages HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n",
        app.address.trim_start_matches("http://")
    );
    let answer = raw_exchange(&app, &head, b"").await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("application/problem+json"), "{answer}");
    assert!(answer.contains("/problems/payload-too-large"), "{answer}");
}

#[actix_web::test]
async fn a_chunked_body_is_cut_off_at_300_kib() {
    let app = spawn_app().await;
    let head = format!(
        "POST /api/pages HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        app.address.trim_start_matches("http://")
    );
    // Just over 300 KiB in 1 KiB chunks, never terminated: the answer can only come
    // from the server counting what it read.
    let mut body = Vec::new();
    body.extend_from_slice(b"b\r\n{\"title\":\"a\r\n");
    for i in 0..300 {
        if i > 0 {
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(b"400\r\n");
        body.extend_from_slice(&[b'a'; 1024]);
    }
    let answer = raw_exchange(&app, &head, &body).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("/problems/payload-too-large"), "{answer}");
}

#[actix_web::test]
async fn a_body_just_under_the_limit_is_read() {
    let app = spawn_app().await;
    // 130 KiB of quotes: JSON escapes them to 260 KiB on the wire, over the body
    // limit but under the request limit.
    let body = "\"".repeat(130 * 1024);
    let r = app
        .create(serde_json::json!({"title": "quotes", "body": body}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(app.stored("quotes").2.len(), 130 * 1024);
}

#[actix_web::test]
async fn unknown_api_paths_and_methods_are_problems_too() {
    let app = spawn_app().await;
    app.fetch("/api/nothing").await.problem(404, "not-found");
    app.fetch("/api/pages/NOT_A_SLUG")
        .await
        .problem(404, "not-found");
    app.fetch("/api/pages/nope").await.problem(404, "not-found");
    let r = app
        .client
        .delete(app.url("/api/pages/kubernetes"))
        .send()
        .await
        .unwrap();
    let r = Reply {
        status: r.status().as_u16(),
        headers: r.headers().clone(),
        text: r.text().await.unwrap(),
    };
    r.problem(405, "method-not-allowed");
    assert_eq!(r.header("allow"), Some("GET, HEAD, PUT"));
    app.fetch("/api/pages/kubernetes/archive")
        .await
        .problem(405, "method-not-allowed");
}

#[actix_web::test]
async fn a_failure_on_our_side_is_500_internal_with_its_cause_logged_not_sent() {
    crate::helpers::capture_logs();
    let app = spawn_app().await;
    // A fault no answer of the API maps: the database refuses the insert itself.
    let postgres = matches!(app.pages_db, crate::helpers::PagesDb::Postgres { .. });
    app.sql(if postgres {
        "CREATE FUNCTION injected_fault() RETURNS trigger LANGUAGE plpgsql AS
         $$ BEGIN RAISE EXCEPTION 'injected-fault-5e1f'; END $$;
         CREATE TRIGGER injected_fault BEFORE INSERT ON pages
         FOR EACH ROW EXECUTE FUNCTION injected_fault();"
    } else {
        "CREATE TRIGGER injected_fault BEFORE INSERT ON pages
         BEGIN SELECT RAISE(ABORT, 'injected-fault-5e1f'); END;"
    });
    let r = app
        .create(serde_json::json!({"title": "Never stored"}))
        .await;
    let p = r.problem(500, "internal");
    assert!(!r.text.contains("injected-fault-5e1f"), "{p}");
    assert_eq!(app.stored_count(), 8, "nothing was written");
    let logs = crate::helpers::logs();
    assert!(
        logs.lines()
            .any(|l| l.contains("api request failed") && l.contains("injected-fault-5e1f")),
        "the cause is logged"
    );
    // A write the fault does not touch still succeeds.
    app.sql(if postgres {
        "DROP TRIGGER injected_fault ON pages"
    } else {
        "DROP TRIGGER injected_fault"
    });
    let r = app
        .create(serde_json::json!({"title": "Stored after"}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
}
