//! Every read from the network has a deadline (SPEC §9): a request body that does
//! not arrive in full within `AGENT_PAGES_BODY_TIMEOUT_SECS` is answered 408 and its
//! connection closed; bodies read at once are capped by
//! `AGENT_PAGES_MAX_OPEN_BODIES`. The tests wait for the answer; they do not time it.

use std::time::Duration;

use serde_json::json;

use crate::helpers::spawn_app_with;
use crate::helpers::{read_until_closed, RawReply};

const STALLED_POST: &[u8] = b"POST /api/pages HTTP/1.1\r\nHost: x\r\n\
Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{";

fn assert_problem(r: &RawReply, status: u16, kind: &str) -> serde_json::Value {
    assert_eq!(r.status, status, "{}", r.head);
    let p: serde_json::Value = serde_json::from_slice(&r.after_head)
        .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&r.after_head)));
    assert_eq!(p["type"], format!("/problems/{kind}"), "{p}");
    p
}

#[actix_web::test]
async fn a_body_that_stalls_is_answered_408_and_its_connection_closed() {
    let app = spawn_app_with(|s| s.requests.body_timeout = Duration::from_secs(1)).await;
    app.publish_locked("stalled").await;
    let stalls: [&[u8]; 3] = [
        // Content-Length promised, one byte sent.
        STALLED_POST,
        // Chunked, one chunk, no end.
        b"POST /api/pages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
Transfer-Encoding: chunked\r\n\r\n1\r\n{\r\n",
        // An update, same rule.
        b"PUT /api/pages/stalled HTTP/1.1\r\nHost: x\r\nX-Page-Pin: correct horse battery\r\n\
Content-Length: 50\r\n\r\n{\"bo",
    ];
    for request in stalls {
        // read_until_closed fails the test if the server keeps the connection.
        let r = app.raw_exchange(request).await;
        let p = assert_problem(&r, 408, "request-timeout");
        assert!(p["detail"].as_str().unwrap().contains("1 seconds"), "{p}");
        assert_eq!(r.header("connection"), Some("close"), "{}", r.head);
    }
    assert_eq!(app.stored_count(), 9, "nothing was written");
    assert_eq!(app.state.api.bodies.open(), 0);
}

#[actix_web::test]
async fn bodies_beyond_the_cap_are_answered_503_at_once_naming_it() {
    let app = spawn_app_with(|s| {
        s.requests.max_open_bodies = 2;
        s.requests.body_timeout = Duration::from_secs(60);
    })
    .await;
    let first = app.raw_connect(STALLED_POST).await;
    let second = app.raw_connect(STALLED_POST).await;
    app.wait_until(|| app.state.api.bodies.open() == 2).await;

    let r = app.create(json!({"title": "One too many"})).await;
    let p = r.problem(503, "too-many-open-bodies");
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(p["detail"].as_str().unwrap().contains(" 2 "), "{p}");

    // A client that hangs up gives its slot back.
    drop(first);
    drop(second);
    app.wait_until(|| app.state.api.bodies.open() == 0).await;
    let r = app.create(json!({"title": "Room again"})).await;
    assert_eq!(r.status, 201, "{}", r.text);
}

#[actix_web::test]
async fn an_unread_body_on_a_route_that_takes_none_does_not_hold_the_connection() {
    let app = spawn_app_with(|s| s.requests.body_timeout = Duration::from_secs(60)).await;
    let requests: [(&[u8], u16); 3] = [
        (
            b"POST /api/pages/kubernetes/claim HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{",
            403,
        ),
        // actix drains a dropped chunked body before the next request, without a
        // deadline: the connection must be closed instead.
        (
            b"POST /api/pages/kubernetes/claim HTTP/1.1\r\nHost: x\r\n\
Transfer-Encoding: chunked\r\n\r\n1\r\n{\r\n",
            403,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n",
            200,
        ),
    ];
    for (request, status) in requests {
        // Answered at once, and closed: the body was never read.
        let r = read_until_closed(app.raw_connect(request).await).await;
        assert_eq!(r.status, status, "{}", r.head);
    }
}

#[actix_web::test]
async fn first_headers_that_never_end_are_answered_408_and_closed() {
    // `startup::HEADER_TIMEOUT`: the request line and one header, then nothing.
    let app = crate::helpers::spawn_app().await;
    let r = app.raw_exchange(b"GET / HTTP/1.1\r\nHost: x\r\n").await;
    assert_eq!(r.status, 408, "{}", r.head);
}

#[actix_web::test]
async fn an_idle_keep_alive_connection_is_closed_by_the_server() {
    // `startup::KEEP_ALIVE`: two requests on one connection are both answered (it
    // is kept alive), then the connection idles and the server closes it; a server
    // without the bound would keep it open and read_until_closed would fail.
    let app = crate::helpers::spawn_app().await;
    let r = app
        .raw_exchange(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.head);
    assert_ne!(r.header("connection"), Some("close"), "{}", r.head);
    let rest = String::from_utf8_lossy(&r.after_head);
    assert_eq!(rest.matches("HTTP/1.1 200").count(), 1, "{rest}");
    assert!(
        !rest.contains("408"),
        "closed without another answer: {rest}"
    );
}
