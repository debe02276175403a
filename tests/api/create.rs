//! `POST /api/pages`: publishing, slug derivation and collisions, field rules.

use serde_json::json;

use crate::helpers::{spawn_app, PIN, T0};

#[actix_web::test]
async fn a_published_page_is_on_the_ledger_and_readable_at_once() {
    let app = spawn_app().await;
    let r = app
        .create(json!({"slug": "zebra-notes", "title": "  Zebra notes  ", "body": "Stripes.", "pin": PIN}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.header("location"), Some("/api/pages/zebra-notes"));
    let created = r.json();
    assert_eq!(created["slug"], "zebra-notes");
    assert_eq!(created["version"], 1);
    assert_eq!(created["url"], app.url("/p/zebra-notes"));
    assert_eq!(created.as_object().unwrap().len(), 3, "{created}");

    let page = app.fetch("/api/pages/zebra-notes").await;
    assert_eq!(page.status, 200);
    let page = page.json();
    assert_eq!(page["title"], "Zebra notes", "titles are stored trimmed");
    assert_eq!(page["body"], "Stripes.");
    assert_eq!(page["version"], 1);
    assert_eq!(page["created_at"], T0);
    assert_eq!(page["updated_at"], T0);

    assert!(app.fetch("/").await.text.contains("/p/zebra-notes\""));
    assert!(app.fetch("/p/zebra-notes").await.text.contains("Stripes."));
}

#[actix_web::test]
async fn without_a_slug_it_is_derived_from_the_title_and_numbered_when_taken() {
    let app = spawn_app().await;
    let mut slugs = Vec::new();
    for _ in 0..3 {
        let r = app.create(json!({"title": "Café Guide!"})).await;
        assert_eq!(r.status, 201, "{}", r.text);
        slugs.push(r.json()["slug"].as_str().unwrap().to_owned());
    }
    assert_eq!(slugs, ["cafe-guide", "cafe-guide-2", "cafe-guide-3"]);
    // A page that already holds a name of the form `-N` moves the numbering past it.
    app.create(json!({"slug": "cafe-guide-9", "title": "Another"}))
        .await;
    let r = app.create(json!({"title": "Cafe guide"})).await;
    assert_eq!(r.json()["slug"], "cafe-guide-10");
    // The import corpus has `kubernetes` already.
    let r = app.create(json!({"title": "Kubernetes"})).await;
    assert_eq!(r.json()["slug"], "kubernetes-2");
    // Other scripts are transliterated; a title with nothing left gives `page`.
    let r = app.create(json!({"title": "日本語"})).await;
    assert_eq!(r.json()["slug"], "ri-ben-yu");
    let r = app.create(json!({"title": "!!!"})).await;
    assert_eq!(r.json()["slug"], "page");
}

#[actix_web::test]
async fn a_long_title_that_collides_keeps_its_slug_within_80_chars() {
    let app = spawn_app().await;
    let title = "word ".repeat(40);
    let first = app.create(json!({"title": title})).await.json();
    let second = app.create(json!({"title": title})).await.json();
    let (a, b) = (
        first["slug"].as_str().unwrap(),
        second["slug"].as_str().unwrap(),
    );
    assert_eq!(a.len(), 79, "{a}");
    assert!(
        b.len() <= 80 && b.ends_with("-2") && a.starts_with(&b[..b.len() - 2]),
        "{b}"
    );
}

#[actix_web::test]
async fn a_taken_slug_is_a_conflict_even_when_its_page_is_archived() {
    let app = spawn_app().await;
    let r = app
        .create(json!({"slug": "kubernetes", "title": "Mine now"}))
        .await;
    let p = r.problem(409, "conflict");
    assert!(p["detail"].as_str().unwrap().contains("kubernetes"));
    assert_eq!(
        app.stored("kubernetes").1,
        "Kubernetes container orchestration"
    );

    app.publish("old-notes", "Old notes").await;
    let archived = app
        .act("old-notes", "archive", Some(PIN), "198.51.100.7")
        .await;
    assert_eq!(archived.status, 200, "{}", archived.text);
    assert_eq!(archived.json()["lifecycle"], "archived");
    app.create(json!({"slug": "old-notes", "title": "New notes"}))
        .await
        .problem(409, "conflict");
}

#[actix_web::test]
async fn each_field_rule_is_a_validation_problem_naming_the_field() {
    let app = spawn_app().await;
    let cases = [
        (json!({"title": ""}), "title"),
        (json!({"title": "   "}), "title"),
        (json!({"title": "é".repeat(201)}), "title"),
        (json!({"slug": "Not_A_Slug", "title": "t"}), "slug"),
        (json!({"slug": "", "title": "t"}), "slug"),
        (json!({"slug": "a".repeat(81), "title": "t"}), "slug"),
        (
            json!({"title": "t", "body": "x".repeat(256 * 1024 + 1)}),
            "body",
        ),
        (json!({"title": "t", "pin": "12345"}), "pin"),
        (json!({"title": "t", "pin": "x".repeat(65)}), "pin"),
        (json!({"title": "t", "pin": " padded pin "}), "pin"),
        (json!({"title": "t", "pin": "line\nbreak"}), "pin"),
        (json!({"title": 5}), "title"),
        (json!({"title": "t", "body": ["not", "text"]}), "body"),
        (json!({"title": "t", "pin": 123456}), "pin"),
        (json!({"title": "t", "colour": "blue"}), "colour"),
        (json!({"body": "no title"}), "title"),
        (json!(["title"]), "body"),
    ];
    for (body, field) in cases {
        let r = app.create(body.clone()).await;
        let p = r.problem(400, "validation");
        assert_eq!(p["field"], field, "{body}: {p}");
        assert!(p["detail"].as_str().unwrap().contains(field), "{p}");
    }
    // The wrongly typed PIN is not echoed back.
    let r = app.create(json!({"title": "t", "pin": 987654})).await;
    assert!(!r.text.contains("987654"), "{}", r.text);
    // At the limits, it is accepted.
    let r = app
        .create(json!({"title": "é".repeat(200), "body": "x".repeat(256 * 1024), "pin": "123456"}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .create(json!({"slug": "a".repeat(80), "title": "t", "pin": "x".repeat(64)}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
}
