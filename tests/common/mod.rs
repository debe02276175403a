//! `spawn_app()`: a real server on 127.0.0.1:0 over a temp SQLite file, with a manual
//! clock and a fault hook in the scorer, and a typed handle to drive and inspect it.
//! Shared by the test binaries, each of which reaches it as `crate::helpers`: it is
//! included with `#[path]` as `helpers` itself, or by the binary's own `helpers.rs`
//! (`api`, `mcp`, `search_redis`), which re-exports all of it beside its own helpers.
//!
//! [`spawn_app_on`] picks the budget store: the SQLite file (what `spawn_app` uses),
//! a real `redis-server` started for the app (the `search_redis` binary runs the
//! budget tests that way), or PostgreSQL with the pages ([`spawn_app_in`] picks
//! where the pages are: the SQLite file, or a database of its own on the test
//! binary's PostgreSQL server; the `postgres` binary runs the suites that way).
//! Whichever, [`TestApp::counters`] reads the counters where the store keeps them,
//! and [`TestApp::sql`] / [`TestApp::sql_rows`] reach the pages' database as
//! another process would.

// Each binary uses part of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use actix_web::web;
use agent_pages::budget::open::BudgetsAt;
use agent_pages::budget::redis::{key_name, RedisSettings};
use agent_pages::client_ip::ClientIp;
use agent_pages::clock::ManualClock;
use agent_pages::configuration::Settings;
use agent_pages::page_store::open::PagesAt;
use agent_pages::startup::Application;
use agent_pages::state::AppState;
use rusqlite::Connection;

/// The real-program helpers (a test binary that includes this file reaches them as
/// `helpers::support` rather than including them a second time).
#[path = "../support/mod.rs"]
pub mod support;

pub use support::pg_server::{self, PostgresServer};
pub use support::RedisServer;

/// A unix time on an hour boundary, so minute and hour windows start together.
pub const T0: i64 = 1_800_000_000;

/// A small real corpus (Debian package descriptions).
pub const PAGES: &str = r#"{"slug":"kubernetes","title":"Kubernetes container orchestration"}
{"slug":"kubernetes-client","title":"Kubernetes command line client"}
{"slug":"golang","title":"Go programming language compiler"}
{"slug":"nginx","title":"small, powerful, scalable web/proxy server"}
{"slug":"postgresql","title":"object-relational SQL database"}
{"slug":"vim","title":"Vi IMproved - enhanced vi editor"}
{"slug":"redis","title":"Persistent key-value database with network interface"}
{"slug":"curl","title":"command line tool for transferring data with URL syntax"}
"#;

/// What the scorer's fault hook does, chosen by the match copy: a query starting
/// with `block` waits until [`Faults::open`]; one containing `panic` then panics;
/// every scoring is counted.
#[derive(Default)]
pub struct Faults {
    state: Mutex<FaultState>,
    changed: Condvar,
}

#[derive(Default)]
struct FaultState {
    scorings: usize,
    active: usize,
    max_active: usize,
    blocked: usize,
    open: bool,
}

impl Faults {
    fn hook(&self, query: &str) {
        let mut s = self.state.lock().unwrap();
        s.scorings += 1;
        s.active += 1;
        s.max_active = s.max_active.max(s.active);
        if query.starts_with("block") {
            s.blocked += 1;
            self.changed.notify_all();
            while !s.open {
                s = self.changed.wait(s).unwrap();
            }
            s.blocked -= 1;
        }
        s.active -= 1;
        if query.contains("panic") {
            drop(s);
            panic!("injected scoring fault");
        }
    }

    /// The most scorings that were inside the hook at once.
    pub fn max_active(&self) -> usize {
        self.state.lock().unwrap().max_active
    }

    /// Scorings started so far (each ran the hook once).
    pub fn scorings(&self) -> usize {
        self.state.lock().unwrap().scorings
    }

    /// Lets every blocked scoring (and every later `block…` one) finish.
    pub fn open(&self) {
        self.state.lock().unwrap().open = true;
        self.changed.notify_all();
    }

    /// Waits (off the async runtime) until `n` scorings are blocked in the hook.
    pub async fn wait_blocked(self: &Arc<Self>, n: usize) {
        let me = self.clone();
        tokio::task::spawn_blocking(move || {
            let s = me.state.lock().unwrap();
            let (s, timeout) = me
                .changed
                .wait_timeout_while(s, Duration::from_secs(30), |s| s.blocked < n)
                .unwrap();
            assert!(
                !timeout.timed_out(),
                "only {} scorings blocked, wanted {n}",
                s.blocked
            );
        })
        .await
        .unwrap();
    }
}

/// Where an app keeps its budget counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// `rate_limit_counters` in the app's SQLite file (the default).
    Sqlite,
    /// A `redis-server` of its own, started with the app and killed with it.
    Redis,
    /// `rate_limit_counters` in the app's PostgreSQL database (pages there too).
    Postgres,
}

/// Where an app keeps its pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pages {
    /// The SQLite file (the default).
    Sqlite,
    /// A database of its own on the test binary's PostgreSQL server.
    Postgres,
}

/// The pages' database of a running test app, as another process reaches it.
#[derive(Debug, Clone)]
pub enum PagesDb {
    Sqlite(PathBuf),
    /// The database's URL (as the superuser) and name.
    Postgres {
        url: String,
        db: String,
    },
}

/// The deadline of one PostgreSQL statement in tests: long, so that a loaded test
/// machine never turns into a 503 (the fault tests lower it).
pub const TEST_PG_TIMEOUT: Duration = Duration::from_secs(5);

/// Settings for pages in `server`'s database `db`, as the tests run them: the test's
/// manual clock for budget windows, [`TEST_PG_TIMEOUT`].
pub fn pg_settings(server: &PostgresServer, db: &str) -> agent_pages::pg::PgSettings {
    let mut pg = agent_pages::pg::PgSettings::parse(&server.url(db)).unwrap();
    pg.statement_timeout = TEST_PG_TIMEOUT;
    pg.pool_size = 8;
    pg.server_clock = false;
    pg
}

pub struct TestApp {
    pub address: String,
    pub metrics_address: String,
    pub db_path: PathBuf,
    /// The budget database beside it (its counters; unused with Redis).
    pub budget_db_path: PathBuf,
    pub client: reqwest::Client,
    pub clock: ManualClock,
    pub faults: Arc<Faults>,
    pub state: web::Data<AppState>,
    /// The app's redis-server, when its store is [`Store::Redis`].
    pub redis: Option<RedisServer>,
    /// Where the pages are (and the counters, unless in Redis or, with SQLite
    /// pages, the budget file).
    pub pages_db: PagesDb,
    /// The budget store, as chosen.
    pub store: Store,
    /// The connection holding the budget database's write lock while
    /// [`TestApp::block_budget_store`] is in force.
    locker: Option<Connection>,
    /// The PostgreSQL session holding the counters' table lock meanwhile (a thread
    /// that releases it when told).
    pg_locker: Option<(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
    _dir: tempfile::TempDir,
}

/// The app with default settings over [`PAGES`].
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// The app over [`PAGES`], with `configure` applied to the settings first. The
/// peer 127.0.0.1 is a trusted proxy, so tests pick a client with `X-Forwarded-For`.
pub async fn spawn_app_with(configure: impl FnOnce(&mut Settings)) -> TestApp {
    spawn_app_on(Store::Sqlite, configure).await
}

/// [`spawn_app_with`] with the budget counters in `store`. With Redis the windows
/// follow the test's manual clock (not the server's), and a call may take 5 s before
/// it counts as unavailable, so a loaded test machine never turns into a 503.
pub async fn spawn_app_on(store: Store, configure: impl FnOnce(&mut Settings)) -> TestApp {
    let pages = match store {
        Store::Postgres => Pages::Postgres,
        Store::Sqlite | Store::Redis => Pages::Sqlite,
    };
    spawn_app_in(pages, store, configure).await
}

/// [`spawn_app_on`] with the pages in `pages` (PostgreSQL pages keep the budget in
/// PostgreSQL or Redis, never in SQLite: [`Store::Sqlite`] there means PostgreSQL).
pub async fn spawn_app_in(
    pages: Pages,
    store: Store,
    configure: impl FnOnce(&mut Settings),
) -> TestApp {
    spawn_app_over(tempfile::tempdir().unwrap(), pages, None, store, configure).await
}

/// [`spawn_app_with`] with its databases under `folder` (a [`support::Tmpfs`], say)
/// instead of a fresh temp folder.
pub async fn spawn_app_in_folder(
    folder: &std::path::Path,
    configure: impl FnOnce(&mut Settings),
) -> TestApp {
    let dir = tempfile::tempdir_in(folder).unwrap();
    spawn_app_over(dir, Pages::Sqlite, None, Store::Sqlite, configure).await
}

/// Another app (a replica in this process) on `of`'s PostgreSQL database, its budget
/// there too: the pages and counters are shared, nothing else is.
pub async fn spawn_replica(of: &TestApp, configure: impl FnOnce(&mut Settings)) -> TestApp {
    let PagesDb::Postgres { db, .. } = &of.pages_db else {
        panic!("replicas share a PostgreSQL database")
    };
    let pg = pg_settings(pg_server::shared(), db);
    spawn_app_over(
        tempfile::tempdir().unwrap(),
        Pages::Postgres,
        Some((pg, db.clone())),
        Store::Postgres,
        configure,
    )
    .await
}

/// An app over the (seeded) PostgreSQL database of `pg`, its budget there too.
pub async fn spawn_app_configured(
    pg: agent_pages::pg::PgSettings,
    configure: impl FnOnce(&mut Settings),
) -> TestApp {
    let db = pg.describe().rsplit('/').next().unwrap().to_owned();
    spawn_app_over(
        tempfile::tempdir().unwrap(),
        Pages::Postgres,
        Some((pg, db)),
        Store::Postgres,
        configure,
    )
    .await
}

/// The app over `pages`, its files in `dir`: a fresh SQLite file or PostgreSQL database holding
/// [`PAGES`], or the PostgreSQL database `existing` names (its settings and name).
async fn spawn_app_over(
    dir: tempfile::TempDir,
    pages: Pages,
    existing: Option<(agent_pages::pg::PgSettings, String)>,
    store: Store,
    configure: impl FnOnce(&mut Settings),
) -> TestApp {
    let db_path = dir.path().join("nested").join("agent-pages.sqlite3");
    let (pages_db, postgres, store) = match pages {
        Pages::Sqlite => {
            let mut conn = agent_pages::sqlite::open_migrated(&db_path).unwrap();
            agent_pages::import::import(&mut conn, PAGES.as_bytes(), None, T0 - 100).unwrap();
            (PagesDb::Sqlite(db_path.clone()), None, store)
        }
        Pages::Postgres => {
            let (db, pg) = match existing {
                Some((pg, db)) => (db, pg),
                None => {
                    let server = pg_server::shared();
                    let db = server.create_database();
                    let pg = pg_settings(server, &db);
                    import_into_postgres(&pg, PAGES, T0 - 100).await;
                    (db, pg)
                }
            };
            let store = if store == Store::Redis {
                Store::Redis
            } else {
                Store::Postgres
            };
            (
                PagesDb::Postgres {
                    url: pg.url().to_owned(),
                    db,
                },
                Some(pg),
                store,
            )
        }
    };
    let clock = ManualClock::new(T0);
    let faults = Arc::new(Faults::default());
    let mut settings = Settings::for_tests(db_path.clone());
    let budget_db_path = agent_pages::budget::open::path_beside(&db_path);
    settings.clock = Arc::new(clock.clone());
    settings.trusted_proxies = "127.0.0.1".parse().unwrap();
    let hook_faults = faults.clone();
    settings.scoring_hook = Some(Arc::new(move |q: &str| hook_faults.hook(q)));
    settings.metrics_bind = Some("127.0.0.1:0".parse().unwrap());
    if let Some(pg) = postgres {
        settings.pages = PagesAt::Postgres(pg);
        settings.budgets = BudgetsAt::Postgres;
    }
    let redis = match store {
        Store::Sqlite | Store::Postgres => None,
        Store::Redis => {
            let server = RedisServer::start();
            settings.budgets = BudgetsAt::Redis(RedisSettings {
                call_timeout: Duration::from_secs(5),
                server_clock: false,
                ..RedisSettings::new(server.url())
            });
            Some(server)
        }
    };
    configure(&mut settings);

    let app = Application::build(settings).await.expect("app builds");
    let address = format!("http://{}", app.address());
    let metrics_address = format!("http://{}", app.metrics_address().unwrap());
    let state = app.state();
    app.spawn();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    TestApp {
        address,
        metrics_address,
        db_path,
        budget_db_path,
        client,
        clock,
        faults,
        state,
        redis,
        pages_db,
        store,
        locker: None,
        pg_locker: None,
        _dir: dir,
    }
}

/// Imports `lines` (JSON Lines) into the PostgreSQL database of `pg` (migrated
/// first), as `agent-pages import` would.
pub async fn import_into_postgres(pg: &agent_pages::pg::PgSettings, lines: &str, now: i64) {
    let pages = agent_pages::page_store::postgres::PostgresPages::open(pg)
        .await
        .expect("opening the test database");
    let store = agent_pages::page_store::PageStore::new(pages);
    agent_pages::import::import_into(&store, lines.as_bytes(), None, now)
        .await
        .expect("importing the test pages");
    store.close();
}

impl TestApp {
    /// `GET /search?{raw_query}` (the query string sent exactly as given) from `client`.
    pub async fn search_raw(&self, raw_query: &str, client: &str) -> reqwest::Response {
        self.client
            .get(format!("{}/search?{raw_query}", self.address))
            .header("X-Forwarded-For", client)
            .send()
            .await
            .unwrap()
    }

    /// `GET /search?q=…` (encoded) from `client`.
    pub async fn search(&self, q: &str, client: &str) -> reqwest::Response {
        self.client
            .get(format!("{}/search", self.address))
            .query(&[("q", q)])
            .header("X-Forwarded-For", client)
            .send()
            .await
            .unwrap()
    }

    /// [`TestApp::search`] on its own task; resolves to the status code.
    pub fn spawn_search(&self, q: &str, client: &str) -> actix_web::rt::task::JoinHandle<u16> {
        let request = self
            .client
            .get(format!("{}/search", self.address))
            .query(&[("q", q)])
            .header("X-Forwarded-For", client);
        actix_web::rt::spawn(async move { request.send().await.unwrap().status().as_u16() })
    }

    /// [`TestApp::search`] on its own task; resolves to (status, `X-Search-Cache`,
    /// body).
    pub fn spawn_search_full(
        &self,
        q: &str,
        client: &str,
    ) -> actix_web::rt::task::JoinHandle<(u16, String, String)> {
        let request = self
            .client
            .get(format!("{}/search", self.address))
            .query(&[("q", q)])
            .header("X-Forwarded-For", client)
            .header("Accept", "application/json");
        actix_web::rt::spawn(async move {
            let r = request.send().await.unwrap();
            let status = r.status().as_u16();
            let cache = header(&r, "x-search-cache").unwrap_or("").to_owned();
            (status, cache, r.text().await.unwrap())
        })
    }

    /// The Cache actor's counts: LRU entries, keys being scored, waiters on them.
    pub async fn cache_stats(&self) -> agent_pages::search::cache::CacheStats {
        self.state
            .search
            .cache
            .send(agent_pages::search::cache::Stats)
            .await
            .unwrap()
    }

    /// Waits until the scorings in flight have `n` waiters in all.
    pub async fn wait_waiters(&self, n: usize) {
        for _ in 0..3000 {
            if self.cache_stats().await.waiters == n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("waiters never reached {n}: {:?}", self.cache_stats().await);
    }

    /// `GET /metrics`, as text.
    pub async fn metrics(&self) -> String {
        self.client
            .get(format!("{}/metrics", self.metrics_address))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// Same as [`TestApp::search`] with `Accept: application/json`, body parsed.
    pub async fn search_json(
        &self,
        q: &str,
        client: &str,
    ) -> (
        reqwest::StatusCode,
        reqwest::header::HeaderMap,
        serde_json::Value,
    ) {
        let r = self
            .client
            .get(format!("{}/search", self.address))
            .query(&[("q", q)])
            .header("X-Forwarded-For", client)
            .header("Accept", "application/json")
            .send()
            .await
            .unwrap();
        let (status, headers) = (r.status(), r.headers().clone());
        (status, headers, r.json().await.unwrap())
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.address))
            .send()
            .await
            .unwrap()
    }

    /// (minute, hour) search counters of `client` as stored (0 when there is none;
    /// any store error fails the test).
    pub fn counters(&self, client: &str) -> (i64, i64) {
        let read = |window| {
            self.window_row(client, window)
                .map_or(0, |(_, count)| count)
        };
        (read(0), read(1))
    }

    /// (window start, count) of search window number `window` (0 = minute, 1 = hour)
    /// of `client`, as stored: the SQLite or PostgreSQL row, or the Redis value
    /// `"start:count"`.
    pub fn window_row(&self, client: &str, window: usize) -> Option<(i64, i64)> {
        let keys = self
            .state
            .budgets
            .search
            .keys(&ClientIp::from_addr(client.parse().unwrap()));
        match &self.redis {
            None => self.counter_row(&keys.0[window]),
            Some(redis) => {
                let value = redis.get(&key_name(&keys.0[0], &keys.0[window]))?;
                let (start, count) = value.split_once(':').expect("start:count");
                Some((start.parse().unwrap(), count.parse().unwrap()))
            }
        }
    }

    /// (window start, count) of the counter row of `bucket` in the SQLite budget
    /// file's or PostgreSQL's table (`None` without a row, or with a row PostgreSQL made for a
    /// peek only: window start 0, count 0, which counts as no row).
    pub fn counter_row(&self, bucket: &str) -> Option<(i64, i64)> {
        let rows = self.budget_sql_rows(&format!(
            "SELECT window_start, count FROM rate_limit_counters WHERE bucket = '{bucket}'"
        ));
        let row = rows.first()?;
        let read = |i: usize| row[i].as_deref().unwrap().parse::<i64>().unwrap();
        let (start, count) = (read(0), read(1));
        (start, count).ne(&(0, 0)).then_some((start, count))
    }

    /// Runs `statements` (SQL, no results) on the pages' database from a
    /// connection of its own, as another process would.
    pub fn sql(&self, statements: &str) {
        match &self.pages_db {
            PagesDb::Sqlite(_) => self.conn().execute_batch(statements).unwrap(),
            PagesDb::Postgres { url, .. } => pg_server::sql_at(url, statements),
        }
    }

    /// The rows of `query` on the pages' database, every value as text (`None`
    /// for NULL).
    pub fn sql_rows(&self, query: &str) -> Vec<Vec<Option<String>>> {
        match &self.pages_db {
            PagesDb::Sqlite(_) => sqlite_text_rows(&self.conn(), query),
            PagesDb::Postgres { url, .. } => pg_server::text_rows_at(url, query),
        }
    }

    /// The rows of `query` on the budget counters' database (the budget file with
    /// SQLite pages, else PostgreSQL), every value as text (`None` for NULL).
    pub fn budget_sql_rows(&self, query: &str) -> Vec<Vec<Option<String>>> {
        match &self.pages_db {
            PagesDb::Sqlite(_) => sqlite_text_rows(&self.budget_conn(), query),
            PagesDb::Postgres { url, .. } => pg_server::text_rows_at(url, query),
        }
    }

    /// The first column of the first row of `query`, as a whole number.
    pub fn sql_i64(&self, query: &str) -> i64 {
        self.sql_rows(query)[0][0]
            .as_deref()
            .expect("not NULL")
            .parse()
            .unwrap()
    }

    /// Makes the budget store stop answering, as in an outage: another connection
    /// takes the budget database's write lock (held past the busy timeout), or the
    /// app's redis-server is stopped. [`TestApp::unblock_budget_store`] ends it.
    pub fn block_budget_store(&mut self) {
        match (&mut self.redis, &self.pages_db) {
            (Some(redis), _) => redis.stop(),
            (None, PagesDb::Sqlite(_)) => {
                let locker = self.budget_conn();
                locker.execute_batch("BEGIN IMMEDIATE").unwrap();
                self.locker = Some(locker);
            }
            (None, PagesDb::Postgres { url, .. }) => {
                // Another session holds the counters' table lock past the statement
                // deadline (a call waits on it, then times out).
                let url = url.clone();
                let (release, released) = std::sync::mpsc::channel::<()>();
                let (locked, is_locked) = std::sync::mpsc::channel::<()>();
                let holder = std::thread::spawn(move || {
                    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
                    let mut tx = client.transaction().unwrap();
                    tx.batch_execute("LOCK TABLE rate_limit_counters IN ACCESS EXCLUSIVE MODE")
                        .unwrap();
                    locked.send(()).unwrap();
                    let _ = released.recv();
                    tx.rollback().unwrap();
                });
                is_locked.recv().unwrap();
                self.pg_locker = Some((release, holder));
            }
        }
    }

    /// Ends [`TestApp::block_budget_store`]: the lock is released, or Redis is started
    /// again on its port (empty: every window starts afresh).
    pub fn unblock_budget_store(&mut self) {
        if let Some(redis) = &mut self.redis {
            return redis.start_again();
        }
        if let Some((release, holder)) = self.pg_locker.take() {
            release.send(()).unwrap();
            return holder.join().unwrap();
        }
        let locker = self.locker.take().expect("the store was blocked");
        locker.execute_batch("ROLLBACK").unwrap();
    }

    /// A separate connection to the page database, as another process would have.
    pub fn conn(&self) -> Connection {
        agent_pages::sqlite::open(&self.db_path).unwrap()
    }

    /// A separate connection to the budget database (`rate_limit_counters`).
    pub fn budget_conn(&self) -> Connection {
        agent_pages::sqlite::open(&self.budget_db_path).unwrap()
    }

    /// Candidate fetches and (slots taken, slots refused) so far, read from
    /// `/metrics` as an operator would.
    pub async fn work(&self) -> (u64, (u64, u64)) {
        let m = self.metric_values().await;
        let get = |name: &str| {
            m.get(name)
                .copied()
                .unwrap_or_else(|| panic!("{name} missing")) as u64
        };
        (
            get("agent_pages_search_candidate_fetches_total"),
            (
                get("agent_pages_search_scorer_slots_acquired_total"),
                get("agent_pages_search_scorer_slots_refused_total"),
            ),
        )
    }

    /// Polls [`TestApp::work`] until `condition` holds; fails the test after 30 s.
    pub async fn wait_work(&self, condition: impl Fn((u64, (u64, u64))) -> bool) {
        for _ in 0..3000 {
            if condition(self.work().await) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("work never reached the condition: {:?}", self.work().await);
    }

    /// Every unlabelled sample of `/metrics`, and each search outcome counter as
    /// `agent_pages_search_requests_total{outcome="…"}`.
    pub async fn metric_values(&self) -> std::collections::HashMap<String, f64> {
        let text = self.metrics().await;
        let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
            .expect("metrics parse");
        scrape
            .samples
            .into_iter()
            .filter_map(|s| {
                let value = match s.value {
                    prometheus_parse::Value::Counter(v)
                    | prometheus_parse::Value::Gauge(v)
                    | prometheus_parse::Value::Untyped(v) => v,
                    _ => return None,
                };
                let name = match s.labels.get("outcome") {
                    Some(o) => format!("{}{{outcome=\"{o}\"}}", s.metric),
                    None => s.metric,
                };
                Some((name, value))
            })
            .collect()
    }

    /// The count of search answers with `outcome` (a metric label such as `join`).
    pub async fn outcome_count(&self, outcome: &str) -> u64 {
        let m = self.metric_values().await;
        m[&format!("agent_pages_search_requests_total{{outcome=\"{outcome}\"}}")] as u64
    }

    /// Waits until no scorer slot is held (a slot is released just after its
    /// scoring returns, on the scorer thread).
    pub async fn wait_slots_free(&self) {
        self.wait_until(|| self.state.search.scorers.busy() == 0)
            .await;
    }

    /// Polls the async `condition` until it holds; fails the test after 30 s.
    pub async fn wait_until_async<F, Fut>(&self, condition: F)
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        for _ in 0..3000 {
            if condition().await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("condition not reached in 30 s");
    }

    /// Polls `condition` until it holds; fails the test after 30 s.
    pub async fn wait_until(&self, condition: impl Fn() -> bool) {
        for _ in 0..3000 {
            if condition() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("condition not reached in 30 s");
    }
}

impl TestApp {
    /// Sends `GET /search?q={query}` (`query` already encoded) over a raw socket, so
    /// the test can hang up, and returns the socket.
    pub fn raw_search(&self, query: &str, client: &str) -> std::net::TcpStream {
        raw_search_at(&self.address, query, client)
    }

    /// Proof that the server dropped the handlers whose clients hung up while waiting
    /// on the running scoring of `query`, leaving `live` waiters on it: probe searches
    /// join that scoring one at a time (each from a fresh client), and each join makes
    /// the Cache actor forget waiters whose receiver is gone, i.e. whose handler was
    /// dropped. Done when the waiters are exactly `live` plus the probes; the probes'
    /// handles are returned (they answer when the scoring ends). Fails after 100.
    pub async fn probe_until_hung_up_handlers_dropped(
        &self,
        query: &str,
        live: usize,
    ) -> Vec<actix_web::rt::task::JoinHandle<(u16, String, String)>> {
        let max = self.state.search.settings.max_in_flight;
        let mut probes = Vec::new();
        for k in 1..=100 {
            let held = max - self.state.search.admission.available_permits();
            let client = format!("198.18.0.{k}");
            probes.push(self.spawn_search_full(query, &client));
            // The probe spent its budget (so it holds an admission permit) and gave the
            // permit back (so the Cache actor has handled its join).
            self.wait_until_async(|| async {
                self.counters(&client) == (1, 1)
                    && max - self.state.search.admission.available_permits() == held
            })
            .await;
            if self.cache_stats().await.waiters == live + k {
                return probes;
            }
        }
        panic!(
            "the hung-up handlers were never dropped: {:?}",
            self.cache_stats().await
        );
    }

    /// Waits until no search holds an admission permit (`agent_pages_search_in_flight`
    /// back to 0) and no scorer slot is taken.
    pub async fn wait_idle(&self) {
        let max = self.state.search.settings.max_in_flight;
        self.wait_until(|| {
            self.state.search.admission.available_permits() == max
                && self.state.search.scorers.busy() == 0
        })
        .await;
    }
}

/// [`TestApp::raw_search`] against `address` (`http://host:port`).
pub fn raw_search_at(address: &str, query: &str, client: &str) -> std::net::TcpStream {
    use std::io::Write;
    let addr = address.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET /search?q={query} HTTP/1.1\r\nHost: {addr}\r\nX-Forwarded-For: {client}\r\n\r\n"
    )
    .unwrap();
    stream
}

/// Closes `stream` with a reset (`SO_LINGER` 0: an RST, as a client that crashed
/// sends). actix-web allows half-closed connections, so a plain close (FIN) lets the
/// handler run to its end; a reset makes the server drop the handler at once.
pub fn reset(stream: std::net::TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket descriptor and a correctly sized `linger` value.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            std::ptr::addr_of!(linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt SO_LINGER");
    drop(stream);
}

impl Drop for TestApp {
    fn drop(&mut self) {
        // Drop pooled connections while the runtime still runs: deadpool hands each
        // one to `spawn_blocking` on drop, which panics once the runtime shuts down
        // (and the server task is only dropped then).
        self.state.pages.store.close();
    }
}

pub fn header<'a>(r: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    r.headers().get(name).and_then(|v| v.to_str().ok())
}

/// The rows of `query` on `conn`, every value as text (`None` for NULL).
fn sqlite_text_rows(conn: &Connection, query: &str) -> Vec<Vec<Option<String>>> {
    let mut stmt = conn.prepare(query).unwrap();
    let columns = stmt.column_count();
    stmt.query_map([], |r| {
        (0..columns)
            .map(|i| {
                Ok(match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => None,
                    rusqlite::types::ValueRef::Integer(n) => Some(n.to_string()),
                    rusqlite::types::ValueRef::Real(x) => Some(x.to_string()),
                    rusqlite::types::ValueRef::Text(t) => {
                        Some(String::from_utf8_lossy(t).into_owned())
                    }
                    rusqlite::types::ValueRef::Blob(_) => Some("<blob>".into()),
                })
            })
            .collect()
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}
