//! Page history (issue 32 §1) and conditional writes (§2) through real HTTP: every
//! write keeps its version, the history is bounded, readable and restorable, a gone
//! page's history is its PIN holder's only, and `If-Match` makes a stale write
//! change nothing. `tests/postgres` runs this file again over PostgreSQL.

use serde_json::{json, Value};

use crate::helpers::{spawn_app, spawn_app_with, Reply, TestApp, AGENT, PIN};

impl TestApp {
    /// `GET path` with `X-Page-Pin: pin`.
    async fn fetch_with_pin(&self, path: &str, pin: &str) -> Reply {
        Reply::of(
            self.client
                .get(self.url(path))
                .header("X-Forwarded-For", AGENT)
                .header("X-Page-Pin", pin)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// `POST /api/pages/{slug}/restore` with the PIN, and `If-Match` when given.
    async fn restore(&self, slug: &str, body: Value, if_match: Option<&str>) -> Reply {
        let mut r = self
            .client
            .post(self.url(&format!("/api/pages/{slug}/restore")))
            .header("X-Forwarded-For", AGENT)
            .header("X-Page-Pin", PIN)
            .json(&body);
        if let Some(tag) = if_match {
            r = r.header("If-Match", tag);
        }
        Reply::of(r.send().await.unwrap()).await
    }

    /// `PUT /api/pages/{slug}` with the PIN and `If-Match: tag`.
    async fn put_if_match(&self, slug: &str, tag: &str, body: Value) -> Reply {
        Reply::of(
            self.client
                .put(self.url(&format!("/api/pages/{slug}")))
                .header("X-Forwarded-For", AGENT)
                .header("X-Page-Pin", PIN)
                .header("If-Match", tag)
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// Rows of `slug`'s history as stored.
    fn history_rows(&self, slug: &str) -> i64 {
        self.sql_i64(&format!(
            "SELECT count(*) FROM page_versions WHERE page_id =
                 (SELECT id FROM pages WHERE slug = '{slug}')"
        ))
    }

    /// The corpus generation as stored.
    fn generation(&self) -> i64 {
        self.sql_i64("SELECT generation FROM corpus_generation WHERE id = 1")
    }
}

fn versions(list: &Value) -> Vec<(i64, String)> {
    list["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["version"].as_i64().unwrap(),
                v["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[actix_web::test]
async fn every_write_keeps_its_version_newest_first_and_each_can_be_read() {
    let app = spawn_app().await;
    app.create(json!({"slug": "notes", "title": "Notes", "body": "one", "pin": PIN}))
        .await;
    app.clock.advance(10);
    app.put_page("notes", Some(PIN), AGENT, json!({"body": "two"}))
        .await;
    app.put_page("notes", Some(PIN), AGENT, json!({"title": "Better notes"}))
        .await;
    let list = app.fetch("/api/pages/notes/versions").await;
    assert_eq!(list.status, 200, "{}", list.text);
    let list = list.json();
    assert_eq!(
        versions(&list),
        [
            (3, "update".to_owned()),
            (2, "update".to_owned()),
            (1, "publish".to_owned())
        ]
    );
    assert_eq!(
        (list["total"].as_i64(), list["next_page"].is_null()),
        (Some(3), true)
    );
    assert!(list["versions"][2]["url"]
        .as_str()
        .unwrap()
        .ends_with("/p/notes/v/1"));
    assert_eq!(list["versions"][0]["body_bytes"], 3);

    // Paged like the ledger.
    let first = app
        .fetch("/api/pages/notes/versions?per_page=2")
        .await
        .json();
    assert_eq!(
        (versions(&first).len(), first["next_page"].as_i64()),
        (2, Some(2))
    );
    let second = app
        .fetch("/api/pages/notes/versions?per_page=2&page=2")
        .await
        .json();
    assert_eq!(versions(&second), [(1, "publish".to_owned())]);
    app.fetch("/api/pages/notes/versions?per_page=0")
        .await
        .problem(400, "validation");

    let v1 = app.fetch("/api/pages/notes/versions/1").await.json();
    assert_eq!(
        (
            v1["title"].as_str(),
            v1["body"].as_str(),
            v1["kind"].as_str()
        ),
        (Some("Notes"), Some("one"), Some("publish"))
    );
    let v3 = app.fetch("/api/pages/notes/versions/3").await.json();
    assert_eq!(
        (v3["title"].as_str(), v3["body"].as_str()),
        (Some("Better notes"), Some("two"))
    );
    for missing in ["4", "0", "x", "-1"] {
        app.fetch(&format!("/api/pages/notes/versions/{missing}"))
            .await
            .problem(404, "not-found");
    }
    app.fetch("/api/pages/nobody/versions")
        .await
        .problem(404, "not-found");
}

#[actix_web::test]
async fn a_restore_is_a_new_version_with_the_old_text_and_the_rules_of_an_update() {
    let app = spawn_app().await;
    app.create(json!({"slug": "notes", "title": "Notes", "body": "one", "pin": PIN}))
        .await;
    app.put_page(
        "notes",
        Some(PIN),
        AGENT,
        json!({"title": "Vandalised", "body": "gone"}),
    )
    .await;
    let before = app.stored("notes");

    // Without the PIN, with a wrong one, an unknown version: nothing changes.
    let r = Reply::of(
        app.client
            .post(app.url("/api/pages/notes/restore"))
            .header("X-Forwarded-For", AGENT)
            .json(&json!({"version": 1}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    r.problem(403, "pin-required");
    let r = Reply::of(
        app.client
            .post(app.url("/api/pages/notes/restore"))
            .header("X-Forwarded-For", AGENT)
            .header("X-Page-Pin", "wrong pin!")
            .json(&json!({"version": 1}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    r.problem(403, "wrong-pin");
    app.restore("notes", json!({"version": 9}), None)
        .await
        .problem(404, "not-found");
    app.restore("notes", json!({"version": 0}), None)
        .await
        .problem(400, "validation");
    app.restore("notes", json!({"version": 1, "extra": 1}), None)
        .await
        .problem(400, "validation");
    assert_eq!(app.stored("notes"), before);
    assert_eq!(app.history_rows("notes"), 2);

    let r = app.restore("notes", json!({"version": 1}), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json(), json!({"slug": "notes", "version": 3}));
    assert!(
        r.header("ratelimit").is_some(),
        "a restore spends the publish budget"
    );
    assert_eq!(app.stored("notes"), (3, "Notes".into(), "one".into()));
    let list = app.fetch("/api/pages/notes/versions").await.json();
    assert_eq!(versions(&list)[0], (3, "restore".to_owned()));
}

#[actix_web::test]
async fn the_history_keeps_the_newest_page_history_versions_and_prunes_in_the_write() {
    let app = spawn_app_with(|s| s.history_versions = 3).await;
    app.publish("notes", "Notes").await;
    for n in 0..5 {
        let r = app
            .put_page(
                "notes",
                Some(PIN),
                AGENT,
                json!({"body": format!("body {n}")}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert!(app.history_rows("notes") <= 3);
    }
    let list = app.fetch("/api/pages/notes/versions").await.json();
    assert_eq!(
        versions(&list).iter().map(|v| v.0).collect::<Vec<_>>(),
        [6, 5, 4]
    );
    app.fetch("/api/pages/notes/versions/3")
        .await
        .problem(404, "not-found");
    app.restore("notes", json!({"version": 1}), None)
        .await
        .problem(404, "not-found");
    let v4 = app.fetch("/api/pages/notes/versions/4").await.json();
    assert_eq!(v4["body"], "body 2");
}

#[actix_web::test]
async fn a_gone_pages_history_is_404_to_everyone_without_its_pin() {
    let app = spawn_app().await;
    app.publish("notes", "Notes").await;
    let r = app.act("notes", "archive", Some(PIN), AGENT).await;
    assert_eq!(r.status, 200, "{}", r.text);
    for path in [
        "/api/pages/notes/versions",
        "/api/pages/notes/versions/1",
        "/api/pages/notes/versions/2",
    ] {
        app.fetch(path).await.problem(404, "not-found");
        app.fetch_with_pin(path, "wrong pin!")
            .await
            .problem(404, "not-found");
        let r = app.fetch_with_pin(path, PIN).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
    }
    let list = app
        .fetch_with_pin("/api/pages/notes/versions", PIN)
        .await
        .json();
    assert_eq!(versions(&list)[0], (2, "archive".to_owned()));
    for path in ["/p/notes/history", "/p/notes/v/1"] {
        assert_eq!(app.fetch(path).await.status, 404, "{path}");
        assert_eq!(app.fetch_with_pin(path, PIN).await.status, 200, "{path}");
    }
}

#[actix_web::test]
async fn the_html_history_lists_versions_and_a_version_shows_its_escaped_diff() {
    let app = spawn_app().await;
    app.create(json!({
        "slug": "notes", "title": "Notes <b>", "body": "keep\nold line\n", "pin": PIN
    }))
    .await;
    app.put_page(
        "notes",
        Some(PIN),
        AGENT,
        json!({"body": "keep\n<script>alert(1)</script>\n"}),
    )
    .await;
    let history = app.fetch("/p/notes/history").await;
    assert_eq!(history.status, 200, "{}", history.text);
    assert!(
        history.text.contains("href=\"/p/notes/v/1\""),
        "{}",
        history.text
    );
    assert!(history.text.contains("href=\"/p/notes/v/2\""));
    assert!(history.text.contains("Notes &lt;b&gt;"));
    assert!(!history.text.contains("Notes <b>"));

    let v2 = app.fetch("/p/notes/v/2").await;
    assert_eq!(v2.status, 200, "{}", v2.text);
    assert!(!v2.text.contains("<script>alert"), "{}", v2.text);
    assert!(
        v2.text.contains(
            "<span class=\"line line--insert\">&lt;script&gt;alert(1)&lt;&#x2F;script&gt;</span>"
        ) || v2.text.contains(
            "<span class=\"line line--insert\">&lt;script&gt;alert(1)&lt;/script&gt;</span>"
        ),
        "{}",
        v2.text
    );
    assert!(v2
        .text
        .contains("<span class=\"line line--delete\">old line</span>"));
    assert!(v2
        .text
        .contains("<span class=\"line line--equal\">keep</span>"));
    assert_eq!(app.fetch("/p/notes/v/3").await.status, 404);
    assert_eq!(app.fetch("/p/notes/v/zero").await.status, 404);
    assert_eq!(app.fetch("/p/nobody/history").await.status, 404);
}

#[actix_web::test]
async fn page_reads_carry_the_version_as_a_strong_etag() {
    let app = spawn_app().await;
    app.publish("notes", "Notes").await;
    app.put_page("notes", Some(PIN), AGENT, json!({"body": "two"}))
        .await;
    assert_eq!(
        app.fetch("/api/pages/notes").await.header("etag"),
        Some("\"v2\"")
    );
    assert_eq!(app.fetch("/p/notes").await.header("etag"), Some("\"v2\""));
}

#[actix_web::test]
async fn a_stale_if_match_is_412_with_the_current_version_and_changes_nothing() {
    let app = spawn_app().await;
    app.publish("notes", "Notes").await;
    app.put_page("notes", Some(PIN), AGENT, json!({"body": "two"}))
        .await;
    let before = app.stored("notes");
    let generation = app.generation();

    let p = app
        .put_if_match("notes", "\"v1\"", json!({"body": "lost update"}))
        .await
        .problem(412, "version-mismatch");
    assert_eq!(p["current_version"], 2);
    app.put_if_match("notes", "W/\"v2\"", json!({"body": "weak"}))
        .await
        .problem(412, "version-mismatch");
    app.restore("notes", json!({"version": 1}), Some("\"v1\""))
        .await
        .problem(412, "version-mismatch");
    for action in ["archive", "claim"] {
        let r = Reply::of(
            app.client
                .post(app.url(&format!("/api/pages/notes/{action}")))
                .header("X-Forwarded-For", AGENT)
                .header("X-Page-Pin", PIN)
                .header("If-Match", "\"v1\"")
                .send()
                .await
                .unwrap(),
        )
        .await;
        r.problem(412, "version-mismatch");
    }
    assert_eq!(app.stored("notes"), before);
    assert_eq!(app.history_rows("notes"), 2);
    assert_eq!(app.generation(), generation, "no corpus change");

    let r = app
        .put_if_match("notes", "\"v2\"", json!({"body": "three"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["version"], 3);
    let r = app
        .put_if_match("notes", "*", json!({"body": "four"}))
        .await;
    assert_eq!(r.json()["version"], 4);
    let r = app
        .restore("notes", json!({"version": 1}), Some("\"v4\""))
        .await;
    assert_eq!(r.json()["version"], 5);
}

#[actix_web::test]
async fn two_concurrent_updates_with_the_same_if_match_make_one_version_and_one_412() {
    let app = spawn_app().await;
    app.publish("notes", "Notes").await;
    for round in 1..=5 {
        let tag = format!("\"v{round}\"");
        // Two spawned requests from two clients, sent together past a barrier.
        let start = std::sync::Arc::new(tokio::sync::Barrier::new(2));
        let writer = |client: &str, text: &'static str| {
            let request = app
                .client
                .put(app.url("/api/pages/notes"))
                .header("X-Forwarded-For", client)
                .header("X-Page-Pin", PIN)
                .header("If-Match", tag.as_str())
                .json(&json!({ "body": text }));
            let start = start.clone();
            actix_web::rt::spawn(async move {
                start.wait().await;
                let r = request.send().await.unwrap();
                let status = r.status().as_u16();
                (status, r.json::<Value>().await.unwrap(), text)
            })
        };
        let a = writer("192.0.2.21", "from a");
        let b = writer("192.0.2.22", "from b");
        let (a, b) = (a.await.unwrap(), b.await.unwrap());
        let mut statuses = [a.0, b.0];
        statuses.sort();
        assert_eq!(statuses, [200, 412], "{} / {}", a.1, b.1);
        let (won, lost) = if a.0 == 200 { (a, b) } else { (b, a) };
        assert_eq!(won.1["version"], round + 1, "{}", won.1);
        assert_eq!(lost.1["type"], "/problems/version-mismatch", "{}", lost.1);
        assert_eq!(lost.1["current_version"], round + 1, "{}", lost.1);
        let (version, _, stored) = app.stored("notes");
        assert_eq!((version, stored.as_str()), (round + 1, won.2));
        assert_eq!(app.history_rows("notes"), round + 1, "exactly one new row");
    }
}

#[actix_web::test]
async fn a_rotated_pin_replaces_the_old_one_at_once() {
    let app = spawn_app().await;
    app.publish("notes", "Notes").await;
    let rotate = |current: &'static str, new_pin: Value| {
        let app = &app;
        async move {
            Reply::of(
                app.client
                    .post(app.url("/api/pages/notes/pin"))
                    .header("X-Forwarded-For", AGENT)
                    .header("X-Page-Pin", current)
                    .json(&json!({ "new_pin": new_pin }))
                    .send()
                    .await
                    .unwrap(),
            )
            .await
        }
    };
    rotate("wrong pin!", json!("battery staple horse"))
        .await
        .problem(403, "wrong-pin");
    rotate(PIN, json!("short")).await.problem(400, "validation");
    let r = rotate(PIN, json!("battery staple horse")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json(), json!({"slug": "notes", "version": 1}));
    app.put_page("notes", Some(PIN), AGENT, json!({"body": "old pin"}))
        .await
        .problem(403, "wrong-pin");
    let r = app
        .put_page(
            "notes",
            Some("battery staple horse"),
            AGENT,
            json!({"body": "new pin"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(app.stored("notes").2, "new pin");
}

/// A slug's path segment is percent-decoded on every page route as `web::Path`
/// decodes it: `c%2B%2B-notes` names `c++-notes` for the reads, the writes and the
/// HTML history alike (the Schemathesis run found `/versions` answering 404 for one).
#[actix_web::test]
async fn a_percent_encoded_slug_names_its_page_on_every_page_route() {
    let app = spawn_app().await;
    app.publish("c++-notes", "C++ notes").await;
    let encoded = "c%2B%2B-notes";
    for path in [
        format!("/api/pages/{encoded}"),
        format!("/api/pages/{encoded}/versions"),
        format!("/api/pages/{encoded}/versions/1"),
        format!("/p/{encoded}/history"),
        format!("/p/{encoded}/v/1"),
    ] {
        let r = app.fetch(&path).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
    }
    let r = app
        .put_page(encoded, Some(PIN), AGENT, json!({"body": "edited"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app
        .restore(encoded, json!({"version": 1}), Some("\"v2\""))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.act(encoded, "archive", Some(PIN), AGENT).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(app.stored("c++-notes").0, 4);
}
