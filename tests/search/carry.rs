//! Issue 35: the result cache carries an entry across a write that cannot change
//! its answer (docs/spec.md, "The cache survives writes it cannot affect"), on the
//! replica that wrote and on another one reading the same page store, and every
//! answer, carried or not, equals a cold scoring of the database as it is.
//!
//! Run over SQLite here (the other replica: a second server on the same file) and
//! over PostgreSQL by `tests/postgres` (a replica on the same database).

use std::any::Any;

use agent_pages::search::corpus::Snapshot;
use agent_pages::search::normalize::normalize;
use agent_pages::search::rank;
use serde_json::{json, Value};

use crate::helpers::{header, spawn_app_with, PagesDb, TestApp, T0};

const CLIENT: &str = "203.0.113.35";

fn roomy(s: &mut agent_pages::configuration::Settings) {
    for budget in [&mut s.search_budget, &mut s.publish_budget] {
        budget.set_limit("minute", 1_000_000);
        budget.set_limit("hour", 1_000_000);
    }
}

/// Another server on `app`'s page store (its base URL, and what keeps it alive):
/// a second app on the same SQLite file, or a replica on the same PostgreSQL
/// database.
async fn other_replica(app: &TestApp) -> (String, Box<dyn Any>) {
    match &app.pages_db {
        PagesDb::Sqlite(path) => {
            let mut settings = agent_pages::configuration::Settings::for_tests(path.clone());
            settings.trusted_proxies = "127.0.0.1".parse().unwrap();
            settings.clock = std::sync::Arc::new(app.clock.clone());
            roomy(&mut settings);
            let server = agent_pages::startup::Application::build(settings)
                .await
                .expect("the second server builds");
            let url = format!("http://{}", server.address());
            server.spawn();
            (url, Box::new(()))
        }
        PagesDb::Postgres { .. } => {
            let replica = crate::helpers::spawn_replica(app, roomy).await;
            (replica.address.clone(), Box::new(replica))
        }
    }
}

/// Adds `titles` as pages `{prefix}-{i}` in one import (one write of the store).
async fn import(app: &TestApp, prefix: &str, titles: &[String]) {
    let lines: String = titles
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"slug": format!("{prefix}-{i}"), "title": t}).to_string() + "\n")
        .collect();
    match &app.pages_db {
        PagesDb::Sqlite(_) => {
            agent_pages::import::import(&mut app.conn(), lines.as_bytes(), None, T0).unwrap();
        }
        PagesDb::Postgres { db, .. } => {
            let pg = crate::helpers::pg_settings(crate::helpers::pg_server::shared(), db);
            crate::helpers::import_into_postgres(&pg, &lines, T0).await;
        }
    }
}

/// `GET {url}/search?q=…` as JSON: the cache status and the body.
async fn search(app: &TestApp, url: &str, q: &str) -> (String, Value) {
    let r = app
        .client
        .get(format!("{url}/search"))
        .query(&[("q", q)])
        .header("X-Forwarded-For", CLIENT)
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{q}");
    let status = header(&r, "x-search-cache").unwrap_or("none").to_owned();
    (status, r.json().await.unwrap())
}

/// The first page of a cold scoring of `q` over the candidates as the store holds
/// them now, as the JSON answer shows it: (slugs, scores, total).
async fn cold(app: &TestApp, q: &str, rows: usize) -> (Vec<String>, Vec<f32>, u64) {
    let (generation, candidates) = app.state.pages.store.candidates().await.unwrap();
    let fresh = Snapshot::build(generation, candidates);
    let result = rank::rank(&fresh.index, &normalize(q), rows);
    let slugs = result
        .rows
        .iter()
        .map(|r| fresh.page(r.page_id).unwrap().slug.to_owned())
        .collect();
    let scores = result.rows.iter().map(|r| r.score).collect();
    (slugs, scores, result.total as u64)
}

fn shown(body: &Value) -> (Vec<String>, Vec<f32>, u64) {
    let results = body["results"].as_array().unwrap();
    (
        results
            .iter()
            .map(|r| r["slug"].as_str().unwrap().to_owned())
            .collect(),
        results
            .iter()
            .map(|r| r["score"].as_f64().unwrap() as f32)
            .collect(),
        body["total"].as_u64().unwrap(),
    )
}

/// Three queries of rare words (each weighs 1.0 however the corpus moves) and one
/// that most titles match (more matches than a result keeps; `filler` weighs
/// less, and moves with the corpus size class).
const QUERIES: [&str; 4] = [
    "golang compiler",
    "kubernetes",
    "key value datab",
    "filler gardening",
];

/// Each query's cache status on `url`, each answer checked against a cold scoring.
async fn statuses(app: &TestApp, url: &str) -> Vec<String> {
    let rows = app.state.search.settings.result_limit;
    let mut out = Vec::new();
    for q in QUERIES {
        let (status, body) = search(app, url, q).await;
        assert_eq!(shown(&body), cold(app, q, rows).await, "{q} ({status})");
        out.push(status);
    }
    out
}

#[actix_web::test]
async fn a_write_that_cannot_change_an_answer_carries_it_on_every_replica() {
    let app = spawn_app_with(roomy).await;
    let (other, _alive) = other_replica(&app).await;
    let replicas = [app.address.clone(), other];
    // 1,026 pages in all: in the size class of 1,024 to 1,055 (docs/spec.md), which
    // the create, the archive and the claim below stay inside.
    let filler: Vec<String> = (0..1026 - 8)
        .map(|i| format!("Filler note {} about gardening", i % 97))
        .collect();
    import(&app, "filler", &filler).await;
    for url in &replicas {
        assert_eq!(statuses(&app, url).await, ["miss"; 4]);
        assert_eq!(statuses(&app, url).await, ["hit"; 4]);
    }

    // A create and a retitle that match none of the queries, each written on the
    // first replica: every entry is carried, on both.
    let create = app
        .client
        .post(format!("{}/api/pages", app.address))
        .header("X-Forwarded-For", "198.51.100.35")
        .json(&json!({"slug": "lua", "title": "Lua scripting language", "pin": "correct horse battery"}))
        .send()
        .await
        .unwrap();
    assert_eq!(create.status(), 201);
    for url in &replicas {
        assert_eq!(statuses(&app, url).await, ["hit"; 4], "{url}");
    }
    app.sql(
        "UPDATE pages SET title = 'Vi IMproved, renamed', current_version = current_version + 1
         WHERE slug = 'vim'",
    );
    for url in &replicas {
        assert_eq!(statuses(&app, url).await, ["hit"; 4], "{url}");
    }
    // An archive of a page among the rows of a result cut to its limit: what
    // takes its place is past the cut, unknown to the cache, so that entry is
    // dropped (and scored again); the others are carried.
    app.sql(
        "UPDATE pages SET lifecycle = 'archived', current_version = current_version + 1
         WHERE slug = 'filler-3'",
    );
    for url in &replicas {
        assert_eq!(
            statuses(&app, url).await,
            ["hit", "hit", "hit", "miss"],
            "{url}"
        );
    }

    // A retitle that a query matches (by a prefix of its last word) patches that
    // query's entry: still a hit, with the retitled page in its answer, equal to
    // a cold scoring. (The old title was among the cut rows of the fourth.) A
    // claim of a page another query shows takes it out of that answer, patched
    // too.
    app.sql(
        "UPDATE pages SET title = 'Key-value database for tests', current_version = current_version + 1
         WHERE slug = 'filler-5'",
    );
    for url in &replicas {
        assert_eq!(
            statuses(&app, url).await,
            ["hit", "hit", "hit", "miss"],
            "{url}"
        );
        let (_, body) = search(&app, url, "key value datab").await;
        assert_eq!(body["results"][0]["slug"], "filler-5", "{url}");
    }
    app.sql(
        "UPDATE pages SET claimed_at = 1, current_version = current_version + 1
         WHERE slug = 'kubernetes-client'",
    );
    for url in &replicas {
        assert_eq!(statuses(&app, url).await, ["hit"; 4], "{url}");
    }

    // Enough pages to move the size class (1,065 pages) in one write, matching
    // no query: no entry is unaffected (word rarity is measured against the
    // class), but no weight moved (the rare words weigh 1.0 and `filler`, in
    // nearly every title, the least there is, 0.1), so every entry is patched.
    let more: Vec<String> = (0..40).map(|i| format!("Another note {i}")).collect();
    import(&app, "more", &more).await;
    for url in &replicas {
        assert_eq!(statuses(&app, url).await, ["hit"; 4], "{url}");
    }

    // The first replica's metrics count each entry of each of the six moves once.
    let metrics = app.metrics().await;
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in {metrics}"))
    };
    let carries = "agent_pages_search_cache_carries_total";
    assert_eq!(value(&format!("{carries}{{result=\"carried\"}}")), 16.0);
    assert_eq!(value(&format!("{carries}{{result=\"patched\"}}")), 6.0);
    assert_eq!(value(&format!("{carries}{{result=\"dropped\"}}")), 2.0);
    assert_eq!(value(&format!("{carries}{{result=\"unchecked\"}}")), 0.0);
    assert_eq!(value("agent_pages_search_cache_carry_seconds_count"), 6.0);
}
