//! Forwarded host and scheme (SPEC §9): believed only from a trusted proxy, and a
//! scheme only when it is `http` or `https`; otherwise URLs use the request's own
//! Host.

use serde_json::json;

use crate::helpers::spawn_app_with;
use crate::helpers::{spawn_app, Reply, TestApp};

async fn create_with(app: &TestApp, title: &str, headers: &[(&str, &str)]) -> Reply {
    let mut r = app
        .client
        .post(app.url("/api/pages"))
        .json(&json!({ "title": title }));
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    let r = r.send().await.unwrap();
    Reply {
        status: r.status().as_u16(),
        headers: r.headers().clone(),
        text: r.text().await.unwrap(),
    }
}

#[actix_web::test]
async fn forwarded_host_and_scheme_from_an_untrusted_peer_are_ignored() {
    let app = spawn_app_with(|s| s.trusted_proxies = Default::default()).await;
    let own = app.address.clone(); // http://127.0.0.1:PORT
    let cases: [&[(&str, &str)]; 3] = [
        &[
            ("X-Forwarded-Host", "evil.example"),
            ("X-Forwarded-Proto", "https"),
        ],
        &[("Forwarded", "host=evil.example;proto=https")],
        &[("X-Forwarded-Proto", "javascript")],
    ];
    for (n, headers) in cases.into_iter().enumerate() {
        let r = create_with(&app, &format!("Host check {n}"), headers).await;
        assert_eq!(r.status, 201, "{}", r.text);
        assert_eq!(
            r.json()["url"],
            format!("{own}/p/host-check-{n}"),
            "{headers:?}"
        );
    }
    // Reads too.
    let r = app
        .client
        .get(app.url("/api/pages/host-check-0"))
        .header("X-Forwarded-Host", "evil.example")
        .send()
        .await
        .unwrap();
    let page: serde_json::Value = r.json().await.unwrap();
    assert_eq!(page["url"], format!("{own}/p/host-check-0"));
}

#[actix_web::test]
async fn a_trusted_proxy_sets_host_and_scheme_but_only_http_or_https() {
    // The test app trusts its peer, 127.0.0.1.
    let app = spawn_app().await;
    let own = app.address.clone();
    let r = create_with(
        &app,
        "Proxied",
        &[
            ("X-Forwarded-Host", "pages.example"),
            ("X-Forwarded-Proto", "https"),
        ],
    )
    .await;
    assert_eq!(r.json()["url"], "https://pages.example/p/proxied");
    let r = create_with(
        &app,
        "Proxied again",
        &[("Forwarded", "for=192.0.2.1;host=pages.example;proto=https")],
    )
    .await;
    assert_eq!(r.json()["url"], "https://pages.example/p/proxied-again");
    let r = create_with(
        &app,
        "Bad scheme",
        &[
            ("X-Forwarded-Proto", "javascript"),
            ("X-Forwarded-Host", "evil.example/x?"),
        ],
    )
    .await;
    assert_eq!(r.json()["url"], format!("{own}/p/bad-scheme"));
}
