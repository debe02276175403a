//! HEAD on every GET route (SPEC §9): GET's status and headers, no body.

use crate::common::header;
use crate::helpers::spawn_app;

/// Headers that must be the same on HEAD as on GET, when GET has them.
const SAME: [&str; 6] = [
    "content-type",
    "content-length",
    "cache-control",
    "location",
    "allow",
    "x-content-type-options",
];

#[actix_web::test]
async fn head_is_answered_like_get_on_every_get_route() {
    let app = spawn_app().await;
    let paths = [
        ("/healthz", 200),
        ("/readyz", 200),
        ("/", 200),
        ("/?page=x", 400),
        ("/p/kubernetes", 200),
        ("/p/kubernetes/raw", 200),
        ("/p/nope", 404),
        ("/static/style.css", 200),
        ("/static/nope.css", 404),
        ("/theme/dark", 303),
        ("/theme/neon", 404),
        ("/search", 303),
        ("/search?q=x", 200),
        ("/api/pages", 200),
        ("/api/pages/kubernetes", 200),
        ("/api/pages/nope", 404),
        ("/api/openapi.json", 200),
        ("/nowhere", 404),
    ];
    for (path, status) in paths {
        let get = app.get(path).await;
        let head = app
            .client
            .head(format!("{}{path}", app.address))
            .send()
            .await
            .unwrap();
        assert_eq!(get.status(), status, "GET {path}");
        assert_eq!(head.status(), status, "HEAD {path}");
        for name in SAME {
            assert_eq!(header(&head, name), header(&get, name), "{name} of {path}");
        }
        assert_eq!(
            header(&head, "set-cookie").is_some(),
            header(&get, "set-cookie").is_some(),
            "{path}"
        );
    }
    let metrics = app
        .client
        .head(format!("{}/metrics", app.metrics_address))
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), 200);
    // On the wire, nothing follows the head of a HEAD answer.
    for path in [
        "/p/kubernetes",
        "/api/pages/kubernetes",
        "/static/style.css",
    ] {
        let raw = app
            .raw_exchange(
                format!("HEAD {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
            )
            .await;
        assert_eq!(raw.status, 200, "{path}");
        assert!(raw.after_head.is_empty(), "{path}: {:?}", raw.after_head);
    }
}

#[actix_web::test]
async fn head_on_search_is_one_search_and_spends_the_budget_once() {
    let app = spawn_app().await;
    let client = "203.0.113.77";
    let head = app
        .client
        .head(format!("{}/search?q=kubernetes", app.address))
        .header("X-Forwarded-For", client)
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(header(&head, "x-search-cache"), Some("miss"));
    assert_eq!(header(&head, "cache-control"), Some("no-store"));
    assert_eq!(app.counters(client), (1, 1));
    // The GET after it finds what the HEAD scored.
    let get = app.search("kubernetes", client).await;
    assert_eq!(header(&get, "x-search-cache"), Some("hit"));
    assert_eq!(app.counters(client), (2, 2));
}

#[actix_web::test]
async fn head_on_a_post_only_api_route_is_405_listing_post() {
    let app = spawn_app().await;
    let r = app
        .client
        .head(format!("{}/api/pages/kubernetes/archive", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(header(&r, "allow"), Some("POST"));
}
