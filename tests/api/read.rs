//! `GET /api/pages` and `GET /api/pages/{slug}`.

use crate::helpers::spawn_app;

#[actix_web::test]
async fn a_page_reads_as_json_without_its_pin_hash() {
    let app = spawn_app().await;
    let r = app.fetch("/api/pages/curl").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let page = r.json();
    let mut keys: Vec<_> = page.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "body",
            "created_at",
            "slug",
            "title",
            "updated_at",
            "url",
            "version"
        ]
    );
    assert_eq!(
        page["title"],
        "command line tool for transferring data with URL syntax"
    );
    assert_eq!(page["url"], app.url("/p/curl"));
}

#[actix_web::test]
async fn the_list_pages_through_the_candidates_newest_first() {
    let app = spawn_app().await;
    let first = app.fetch("/api/pages?per_page=3").await.json();
    assert_eq!(first["total"], 8);
    assert_eq!(
        (first["page"].as_i64(), first["per_page"].as_i64()),
        (Some(1), Some(3))
    );
    assert_eq!(first["next_page"], 2);
    assert_eq!(first["pages"].as_array().unwrap().len(), 3);
    assert!(first["pages"][0].get("body").is_none());

    app.clock.advance(5);
    app.publish("fresh", "Fresh page").await;
    let all = app.fetch("/api/pages").await.json();
    assert_eq!(all["total"], 9);
    assert_eq!(all["per_page"], 50);
    assert_eq!(all["next_page"], serde_json::Value::Null);
    assert_eq!(all["pages"][0]["slug"], "fresh");
    assert_eq!(all["pages"][0]["url"], app.url("/p/fresh"));

    let last = app.fetch("/api/pages?page=3&per_page=4").await.json();
    assert_eq!(last["pages"].as_array().unwrap().len(), 1);
    assert_eq!(last["next_page"], serde_json::Value::Null);
    let past = app.fetch("/api/pages?page=9").await.json();
    assert!(past["pages"].as_array().unwrap().is_empty());
}

#[actix_web::test]
async fn bad_list_parameters_are_validation_problems_naming_them() {
    let app = spawn_app().await;
    for (query, field) in [
        ("page=0", "page"),
        ("page=x", "page"),
        ("page=-1", "page"),
        ("per_page=101", "per_page"),
        ("per_page=0", "per_page"),
    ] {
        let p = app
            .fetch(&format!("/api/pages?{query}"))
            .await
            .problem(400, "validation");
        assert_eq!(p["field"], field, "{query}");
    }
    // The list never touches the search budget.
    assert_eq!(app.counters("127.0.0.1"), (0, 0));
}
