//! Origins are known, not inferred (SPEC §11): the origin `/mcp` calls its own comes
//! from `AGENT_PAGES_PUBLIC_URL` or from names the service knows are its own (the
//! loopback names, the bound address), never from the request's `Host`. A page on
//! `evil.example` that rebinds its name to the service's address names
//! `evil.example` in both `Host` and `Origin`, so the two agreeing proves nothing.

use serde_json::json;

use crate::helpers::{spawn_app, spawn_app_with, Answer, TestApp, AGENT, VERSION};

fn publish(title: &str) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "publish_page", "arguments": {"title": title}}})
}

fn list() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
}

fn port(app: &TestApp) -> u16 {
    app.address.rsplit(':').next().unwrap().parse().unwrap()
}

async fn post(app: &TestApp, message: &serde_json::Value, headers: &[(&str, &str)]) -> Answer {
    app.mcp_post(message, AGENT, Some(VERSION), headers).await
}

#[actix_web::test]
async fn an_origin_the_service_calls_its_own_never_comes_from_the_request_alone() {
    let app = spawn_app().await;
    let port = port(&app);
    let evil_host = format!("evil.example:{port}");
    let evil_origin = format!("http://evil.example:{port}");
    let before = app.sql_i64("SELECT count(*) FROM pages");

    // The rebinding page: its name in Host and Origin alike.
    let r = post(
        &app,
        &publish("Rebound"),
        &[("Host", &evil_host), ("Origin", &evil_origin)],
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(r.json()["type"], "/problems/host-not-allowed", "{}", r.text);
    // The same name without Origin (a browser's GET, a proxy that drops it), or
    // forwarded by a trusted proxy (the test app trusts 127.0.0.1), is no better.
    for headers in [
        &[("Host", evil_host.as_str())][..],
        &[("X-Forwarded-Host", evil_host.as_str())],
        &[("Forwarded", "host=evil.example")],
    ] {
        let r = post(&app, &publish("Rebound"), headers).await;
        assert_eq!(r.status, 403, "{headers:?}: {}", r.text);
    }
    assert_eq!(app.sql_i64("SELECT count(*) FROM pages"), before, "no page");

    // The names the service knows are its own: loopback on any port (no rebinding
    // page can put them in a browser's Host), with the browser origin of the bound
    // port only.
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        "localhost".to_owned(),
    ] {
        let r = post(&app, &list(), &[("Host", &host)]).await;
        assert_eq!(r.status, 200, "{host}: {}", r.text);
    }
    for origin in [
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
        format!("http://[::1]:{port}"),
    ] {
        let r = post(&app, &list(), &[("Origin", &origin)]).await;
        assert_eq!(r.status, 200, "{origin}: {}", r.text);
    }
    for origin in [
        format!("http://localhost:{}", port.wrapping_add(1)),
        format!("https://localhost:{port}"),
        format!("http://localhost.evil.example:{port}"),
    ] {
        let r = post(&app, &list(), &[("Origin", &origin)]).await;
        assert_eq!(r.status, 403, "{origin}: {}", r.text);
        assert_eq!(r.json()["type"], "/problems/origin-not-allowed");
    }
}

#[actix_web::test]
async fn a_browser_write_to_the_api_from_another_origin_is_refused() {
    let app = spawn_app().await;
    let port = port(&app);
    let before = app.sql_i64("SELECT count(*) FROM pages");
    // A page on any site can send a POST without a Content-Type (a Blob body), which
    // the API reads as JSON; a rebinding page can send anything. Browsers put their
    // Origin on every such write.
    for origin in [
        "https://evil.example".to_owned(),
        format!("http://evil.example:{port}"),
        "null".to_owned(),
    ] {
        let r = app
            .client
            .post(format!("{}/api/pages", app.address))
            .header("Origin", &origin)
            .body(r#"{"title": "Written from a browser"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{origin}");
        let problem: serde_json::Value = r.json().await.unwrap();
        assert_eq!(problem["type"], "/problems/origin-not-allowed", "{origin}");
    }
    assert_eq!(app.sql_i64("SELECT count(*) FROM pages"), before, "no page");
    // The service's own origin, and agents (no Origin), write as before; reads from
    // anywhere are answered as before.
    for headers in [&[("Origin", app.address.as_str())][..], &[]] {
        let mut r = app
            .client
            .post(format!("{}/api/pages", app.address))
            .json(&json!({"title": "Written by an agent"}));
        for (name, value) in headers {
            r = r.header(*name, *value);
        }
        assert_eq!(r.send().await.unwrap().status(), 201, "{headers:?}");
    }
    let r = app
        .client
        .get(format!("{}/api/pages", app.address))
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[actix_web::test]
async fn the_public_url_is_the_services_own_origin_and_the_base_of_its_urls() {
    let app = spawn_app_with(|s| {
        s.public_url = Some("https://pages.example".parse().unwrap());
    })
    .await;
    // As a TLS proxy in front of it passes the visitor's request on.
    let proxied = [
        ("Host", "pages.example"),
        ("X-Forwarded-Proto", "https"),
        ("Origin", "https://pages.example"),
    ];
    let r = post(&app, &publish("Public words"), &proxied).await;
    let created = r.result()["structuredContent"].clone();
    assert_eq!(created["url"], "https://pages.example/p/public-words");
    // The setting, not what a request names, makes the URLs: a trusted proxy's
    // forwarded host and the request's own Host alike.
    let r = app
        .client
        .post(format!("{}/api/pages", app.address))
        .header("X-Forwarded-Host", "other.example")
        .header("X-Forwarded-Proto", "http")
        .json(&json!({"title": "Public again"}))
        .send()
        .await
        .unwrap();
    let created: serde_json::Value = r.json().await.unwrap();
    assert_eq!(created["url"], "https://pages.example/p/public-again");
    // Its origin is exact: another scheme or port is another site.
    for origin in ["http://pages.example", "https://pages.example:8443"] {
        let r = post(&app, &list(), &[("Origin", origin)]).await;
        assert_eq!(r.status, 403, "{origin}: {}", r.text);
    }
    // And a name it was not given is still refused.
    let r = post(&app, &list(), &[("Host", "evil.example")]).await;
    assert_eq!(r.status, 403, "{}", r.text);
}

#[actix_web::test]
async fn without_a_public_url_the_urls_follow_the_known_name_the_request_used() {
    let app = spawn_app().await;
    let port = port(&app);
    let r = post(
        &app,
        &publish("Local words"),
        &[("Host", &format!("localhost:{port}"))],
    )
    .await;
    assert_eq!(
        r.result()["structuredContent"]["url"],
        format!("http://localhost:{port}/p/local-words")
    );
    // Other routes are not checked: the ledger answers whatever name reaches it.
    let r = app
        .client
        .get(format!("{}/", app.address))
        .header("Host", "pages.internal")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}
