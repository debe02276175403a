//! The fixtures of the contract suites: one freshly opened store per test, of the
//! backend the constructor names, opened through the seam's own `open`
//! ([`agent_pages::page_store::open::open`], [`agent_pages::budget::open::open`]) as
//! `serve` opens it. A fixture can open another handle on the same data
//! ([`PagesFixture::another`], [`BudgetsFixture::another`]): what a second replica
//! or process sees.
//!
//! A new backend is one more constructor here (named as in the suite's backend
//! list) and one more variant of the seam's `…At` choice.

use std::time::Duration;

use agent_pages::budget::open::BudgetsAt;
use agent_pages::budget::redis::RedisSettings;
use agent_pages::budget::store::BudgetStore;
use agent_pages::page_store::open::PagesAt;
use agent_pages::page_store::PageStore;

use crate::helpers::{pg_server, pg_settings, RedisServer};

/// Read connections of a SQLite page store in the suites.
const READERS: usize = 2;

/// A page store of one backend, empty and migrated.
pub struct PagesFixture {
    /// The store under test.
    pub store: PageStore,
    at: PagesAt,
    /// Every store opened, closed when the fixture goes.
    opened: std::sync::Mutex<Vec<PageStore>>,
    /// The SQLite file's folder, removed with the fixture.
    _dir: Option<tempfile::TempDir>,
}

impl PagesFixture {
    /// Pages in a SQLite file of a temp folder of their own.
    pub async fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let at = PagesAt::Sqlite(dir.path().join("pages.sqlite3"));
        Self::open(at, Some(dir)).await
    }

    /// Pages in a database of their own on the binary's PostgreSQL server.
    pub async fn postgres() -> Self {
        let server = pg_server::shared();
        let db = server.create_database();
        Self::open(PagesAt::Postgres(pg_settings(server, &db)), None).await
    }

    async fn open(at: PagesAt, dir: Option<tempfile::TempDir>) -> Self {
        let store = agent_pages::page_store::open::open(&at, READERS)
            .await
            .unwrap_or_else(|e| panic!("opening {at:?}: {e:#}"));
        Self {
            opened: std::sync::Mutex::new(vec![store.clone()]),
            store,
            at,
            _dir: dir,
        }
    }

    /// Another store on the same pages, with pools of its own: a second replica.
    pub async fn another(&self) -> PageStore {
        let store = agent_pages::page_store::open::open(&self.at, READERS)
            .await
            .unwrap_or_else(|e| panic!("opening {:?} again: {e:#}", self.at));
        self.opened.lock().unwrap().push(store.clone());
        store
    }
}

impl Drop for PagesFixture {
    fn drop(&mut self) {
        for store in self.opened.lock().unwrap().drain(..) {
            store.close();
        }
    }
}

/// A budget store of one backend, no counter yet, windows following the caller's
/// clock (the `now` each call passes), as the tests' manual clock needs.
pub struct BudgetsFixture {
    /// The store under test.
    pub store: BudgetStore,
    at: BudgetsAt,
    /// The pages it is opened beside (PostgreSQL counters live in their database).
    pages: PagesFixture,
    /// The Redis server of a Redis fixture, killed with it.
    _redis: Option<RedisServer>,
    _dir: Option<tempfile::TempDir>,
}

impl BudgetsFixture {
    /// Counters in a SQLite budget file of their own, beside SQLite pages.
    pub async fn sqlite() -> Self {
        let pages = PagesFixture::sqlite().await;
        let dir = tempfile::tempdir().unwrap();
        let at = BudgetsAt::Sqlite(dir.path().join("budget.sqlite3"));
        Self::open(at, pages, None, Some(dir))
    }

    /// Counters in the PostgreSQL database of the pages.
    pub async fn postgres() -> Self {
        Self::open(
            BudgetsAt::Postgres,
            PagesFixture::postgres().await,
            None,
            None,
        )
    }

    /// Counters in a `redis-server` of their own (pages in SQLite), with a call
    /// deadline a loaded test machine never reaches (the service's is 50 ms).
    pub async fn redis() -> Self {
        let server = RedisServer::start();
        let at = BudgetsAt::Redis(RedisSettings {
            call_timeout: Duration::from_secs(5),
            server_clock: false,
            ..RedisSettings::new(server.url())
        });
        Self::open(at, PagesFixture::sqlite().await, Some(server), None)
    }

    fn open(
        at: BudgetsAt,
        pages: PagesFixture,
        redis: Option<RedisServer>,
        dir: Option<tempfile::TempDir>,
    ) -> Self {
        let store = agent_pages::budget::open::open(&at, &pages.store)
            .unwrap_or_else(|e| panic!("opening {at:?}: {e:#}"));
        Self {
            store,
            at,
            pages,
            _redis: redis,
            _dir: dir,
        }
    }

    /// The pages beside the counters.
    pub fn pages(&self) -> &PagesFixture {
        &self.pages
    }

    /// Another store on the same counters (beside another handle on the pages),
    /// with connections and memo of its own: a second replica.
    pub async fn another(&self) -> BudgetStore {
        let pages = self.pages.another().await;
        agent_pages::budget::open::open(&self.at, &pages)
            .unwrap_or_else(|e| panic!("opening {:?} again: {e:#}", self.at))
    }
}
