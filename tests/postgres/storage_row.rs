//! The `503-storage` row of the outcome matrix (docs/search.md) with the pages in
//! PostgreSQL, on all four columns: the search answers 503
//! `/problems/storage-unavailable` with `Retry-After: 5`; it reached the budget
//! (`RateLimit` headers, both windows of the client +1 per search); the candidate
//! fetch was tried and no scorer slot taken; and nothing was cached (a query
//! answered before the fault is no hit during it, one first asked during it is a
//! miss afterwards). The budget is in Redis, so that only the page store is cut
//! off: a TCP forwarder between the app and PostgreSQL freezes (a silent network)
//! or cuts the link (connections reset, new ones refused). The same row on SQLite
//! is `tests/storage_faults.rs`.

use std::time::Duration;

use agent_pages::page_store::open::PagesAt;
use serde_json::Value;

use super::forwarder::Forwarder;
use crate::helpers::{pg_server, spawn_app_in, Pages, Store, TestApp};

/// The statement deadline of the pages' connections: short, so a frozen link
/// shows quickly.
const DEADLINE: Duration = Duration::from_millis(700);

const CLIENT: &str = "192.0.2.90";

/// An app whose pages are in a database of their own on the shared server, reached
/// through `forwarder`, and whose budget is in a redis-server of its own.
pub(super) async fn app_with_pages_behind(forwarder: &Forwarder) -> TestApp {
    let port = forwarder.port();
    spawn_app_in(Pages::Postgres, Store::Redis, move |s| {
        let PagesAt::Postgres(direct) = &s.pages else {
            panic!("the pages are in PostgreSQL")
        };
        let db = direct.describe().rsplit('/').next().unwrap().to_owned();
        let mut pg = agent_pages::pg::PgSettings::parse(&format!(
            "postgres://postgres@127.0.0.1:{port}/{db}"
        ))
        .unwrap();
        pg.statement_timeout = DEADLINE;
        pg.pool_size = 4;
        pg.server_clock = false;
        s.pages = PagesAt::Postgres(pg);
    })
    .await
}

/// A JSON search from [`CLIENT`]: (status, headers, body).
async fn search(app: &TestApp, q: &str) -> (u16, reqwest::header::HeaderMap, Value) {
    let (status, headers, body) = app.search_json(q, CLIENT).await;
    (status.as_u16(), headers, body)
}

/// How the link is broken, and mended again.
#[derive(Clone, Copy, Debug)]
enum Break {
    Freeze,
    Cut,
}

async fn the_storage_row_holds_with_the_link(how: Break) {
    let forwarder = Forwarder::start(pg_server::shared().port());
    let app = app_with_pages_behind(&forwarder).await;
    assert_eq!(app.state.budgets.store.kind(), "redis");
    // Before the fault: "kubernetes" is scored, then cached.
    let (status, headers, _) = search(&app, "kubernetes").await;
    assert_eq!(
        (status, &headers["x-search-cache"]),
        (200, &"miss".parse().unwrap())
    );
    let (status, headers, _) = search(&app, "kubernetes").await;
    assert_eq!(
        (status, &headers["x-search-cache"]),
        (200, &"hit".parse().unwrap())
    );

    match how {
        Break::Freeze => forwarder.freeze(),
        Break::Cut => forwarder.cut(),
    }
    let counters = app.counters(CLIENT);
    let (fetches, slots) = app.work().await;
    let failed = app.outcome_count("503-storage").await;
    // "kubernetes" was cached before, "guide" never asked.
    for q in ["kubernetes", "guide", "kubernetes", "guide"] {
        let (status, headers, body) = search(&app, q).await;
        assert_eq!(status, 503, "{how:?}, search {q}: {body}");
        assert_eq!(body["type"], "/problems/storage-unavailable", "{body}");
        assert_eq!(headers["retry-after"], "5", "search {q}");
        assert_eq!(headers["content-type"], "application/problem+json");
        for name in ["ratelimit-policy", "ratelimit"] {
            assert!(
                headers.contains_key(name),
                "search {q}: no {name}: {headers:?}"
            );
        }
        assert!(
            headers.get("x-search-cache").is_none(),
            "search {q}: answered from the cache: {headers:?}"
        );
    }
    assert_eq!(
        app.counters(CLIENT),
        (counters.0 + 4, counters.1 + 4),
        "{how:?}: both windows +1 per search"
    );
    assert_eq!(app.outcome_count("503-storage").await, failed + 4);
    let (fetches_after, slots_after) = app.work().await;
    assert_eq!(
        fetches_after - fetches,
        4,
        "{how:?}: each candidate fetch tried"
    );
    assert_eq!(slots_after, slots, "{how:?}: no scorer slot tried");
    // Readiness fails with it, liveness holds.
    assert_eq!(app.fetch("/readyz").await.status, 503);
    assert_eq!(app.fetch("/healthz").await.status, 200);

    match how {
        Break::Freeze => forwarder.thaw(),
        Break::Cut => forwarder.mend(),
    }
    // Back without a restart (pooled connections the fault broke are replaced);
    // nothing of the failed searches was cached: "guide" is scored afresh.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while app.fetch("/readyz").await.status != 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "{how:?}: never ready again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, headers, body) = search(&app, "guide").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["x-search-cache"], "miss");
}

#[actix_web::test]
async fn a_frozen_link_to_the_pages_is_the_503_storage_row_on_all_four_columns() {
    the_storage_row_holds_with_the_link(Break::Freeze).await;
}

#[actix_web::test]
async fn a_cut_link_to_the_pages_is_the_503_storage_row_on_all_four_columns() {
    the_storage_row_holds_with_the_link(Break::Cut).await;
}
