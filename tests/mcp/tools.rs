//! Each tool's success and its main errors, checked against what the HTTP API
//! shows of the same pages.

use serde_json::json;

use crate::helpers::{spawn_app, AGENT, PIN};

#[actix_web::test]
async fn publish_read_list_update_archive_and_claim() {
    let app = spawn_app().await;
    let created = app
        .call(
            "publish_page",
            json!({"title": "Walrus field notes", "body": "# Tusks\nLong ones.", "pin": PIN}),
        )
        .await;
    let page = created.ok();
    assert_eq!(page["slug"], "walrus-field-notes");
    assert_eq!(page["version"], 1);
    assert_eq!(page["url"], format!("{}/p/walrus-field-notes", app.address));
    assert!(created.text().contains("walrus-field-notes"));
    assert!(!created.text().contains(PIN) && !created.0.to_string().contains(PIN));

    let read = app
        .call("read_page", json!({"slug": "walrus-field-notes"}))
        .await;
    let view = read.ok();
    assert_eq!(view["title"], "Walrus field notes");
    assert_eq!(view["body"], "# Tusks\nLong ones.");
    let http: serde_json::Value = app
        .get("/api/pages/walrus-field-notes")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(view, http, "the same document as GET /api/pages/{{slug}}");
    assert!(
        read.text().contains("Long ones."),
        "the body for models that read text"
    );

    let list = app.call("list_pages", json!({})).await.ok();
    assert_eq!(
        list["pages"][0]["slug"], "walrus-field-notes",
        "newest first"
    );
    assert_eq!(list["total"], 9);
    assert_eq!(list["page"], 1);
    let past = app.call("list_pages", json!({"page": 2})).await.ok();
    assert_eq!(past["pages"], json!([]));

    let updated = app
        .call(
            "update_page",
            json!({"slug": "walrus-field-notes", "pin": PIN, "title": "Walrus notes"}),
        )
        .await
        .ok();
    assert_eq!(updated, json!({"slug": "walrus-field-notes", "version": 2}));
    assert_eq!(app.stored_title("walrus-field-notes"), "Walrus notes");

    let archived = app
        .call(
            "archive_page",
            json!({"slug": "walrus-field-notes", "pin": PIN}),
        )
        .await
        .ok();
    assert_eq!(archived["lifecycle"], "archived");
    assert_eq!(archived["version"], 3);
    let again = app
        .call(
            "archive_page",
            json!({"slug": "walrus-field-notes", "pin": PIN}),
        )
        .await
        .ok();
    assert_eq!(again["version"], 3, "archiving again changes nothing");
    app.call("read_page", json!({"slug": "walrus-field-notes"}))
        .await
        .problem(404, "not-found");

    let claimed = app
        .call(
            "claim_page",
            json!({"slug": "walrus-field-notes", "pin": PIN}),
        )
        .await
        .ok();
    assert!(claimed["claimed_at"].is_i64(), "{claimed}");
    assert_eq!(
        app.stored_state("walrus-field-notes"),
        (4, "archived".into(), true)
    );
}

#[actix_web::test]
async fn search_pages_answers_what_json_search_answers() {
    let app = spawn_app().await;
    let found = app
        .call_as(
            "search_pages",
            json!({"query": "kubernetes"}),
            "203.0.113.20",
        )
        .await;
    let answer = found.ok();
    let (status, _, http) = app.search_json("kubernetes", "203.0.113.21").await;
    assert_eq!(status, 200);
    for field in [
        "query",
        "results",
        "total",
        "truncated",
        "page",
        "pages",
        "capped",
        "close_matches",
    ] {
        assert_eq!(answer[field], http[field], "{field}");
    }
    assert_eq!(answer["results"][0]["slug"], "kubernetes");
    assert!(found.text().contains("kubernetes"), "{}", found.text());

    // A typo is corrected, and the answer says so.
    let typo = app
        .call("search_pages", json!({"query": "kubernets", "page": 1}))
        .await
        .ok();
    assert_eq!(typo["results"][0]["slug"], "kubernetes");
    assert_eq!(typo["close_matches"], true, "{typo}");
    // Too short: guidance, not an error.
    let short = app.call("search_pages", json!({"query": "k"})).await.ok();
    assert_eq!(short["total"], 0);
    assert!(short["message"].is_string(), "{short}");
}

#[actix_web::test]
async fn the_main_errors_are_tool_errors_with_the_api_problem_documents() {
    let app = spawn_app().await;
    let p = app
        .call("publish_page", json!({"title": "x".repeat(201)}))
        .await
        .problem(400, "validation");
    assert_eq!(p["field"], "title");
    let p = app
        .call("publish_page", json!({"title": "Notes", "colour": "red"}))
        .await
        .problem(400, "validation");
    assert_eq!(p["field"], "colour");
    let p = app
        .call("publish_page", json!({"title": "Notes", "pin": "short"}))
        .await
        .problem(400, "validation");
    assert_eq!(p["field"], "pin");
    app.call("publish_page", json!({"title": "Vim again", "slug": "vim"}))
        .await
        .problem(409, "conflict");
    app.call("read_page", json!({"slug": "no-such-page"}))
        .await
        .problem(404, "not-found");
    app.call("read_page", json!({"slug": "Not A Slug"}))
        .await
        .problem(404, "not-found");
    let p = app
        .call("read_page", json!({}))
        .await
        .problem(400, "validation");
    assert_eq!(p["field"], "slug");
    app.call("list_pages", json!({"page": 0}))
        .await
        .problem(400, "validation");
    // Imported pages have no PIN: nobody can change them.
    app.call(
        "update_page",
        json!({"slug": "vim", "pin": PIN, "body": "x"}),
    )
    .await
    .problem(403, "page-locked");
    app.mcp_publish("mine", "Mine").await;
    app.call("update_page", json!({"slug": "mine", "pin": PIN}))
        .await
        .problem(400, "validation");
    let wrong = app
        .call("archive_page", json!({"slug": "mine", "pin": "not my pin"}))
        .await;
    wrong.problem(403, "wrong-pin");
    assert!(!wrong.0.to_string().contains("not my pin"), "{}", wrong.0);
    app.call("search_pages", json!({"query": "x".repeat(65)}))
        .await
        .problem(400, "invalid-query");
    app.call("search_pages", json!({"query": "   "}))
        .await
        .problem(400, "invalid-query");
    app.call("search_pages", json!({"query": "kubernetes", "page": 0}))
        .await
        .problem(400, "invalid-query");
    assert_eq!(app.stored_state("mine"), (1, "active".into(), false));
    let _ = AGENT;
}
