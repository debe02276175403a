//! Where pages live: one interface for everything the server and the CLI need of
//! them, chosen once at start-up, as [`crate::budget::store::BudgetStore`] is for
//! budgets. Routes, the search's candidate snapshot, readiness, the background
//! compaction and `import` call [`PageStore`] and never learn which database is
//! behind it.
//!
//! - SQLite (the default, `AGENT_PAGES_DATABASE`): [`sqlite::SqlitePages`], the
//!   service's own file (a read pool, page writes in `BEGIN IMMEDIATE`, the file's
//!   identity checked around every write).
//! - PostgreSQL (`AGENT_PAGES_DATABASE_URL`): [`postgres::PostgresPages`], shared by
//!   replicas on any number of hosts.
//!
//! A backend is one type implementing [`PageBackend`] (with its supertraits
//! [`PageHistory`] and [`IdempotencyBackend`]); adding one is a module beside
//! [`sqlite`] and the line in start-up that builds it.
//!
//! Every backend keeps the same contract: ids are never reused and versions only
//! grow; a corpus **generation** moves on every committed change to a page, from
//! any process, and the pages each generation changed can be asked for
//! ([`PageStore::changes_since`]), so every replica's snapshot follows every
//! committed change exactly once, in order.

pub mod history;
pub mod idempotency;
pub mod moving;
pub mod open;
pub mod postgres;
mod postgres_history;
mod postgres_history_sql;
mod postgres_idempotency;
pub mod sqlite;

use std::any::Any;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::FutureExt as _;

use crate::domain::{NewPage, PageBody, PageTitle};
/// The records live below the store and `db` both, which build them.
pub use crate::page_records as records;
pub use history::{
    PageHistory, PageVersion, Restored, VersionKind, VersionList, VersionMismatch, VersionSummary,
    WriteFuture, WriteTerms,
};
pub use idempotency::{Claimed, IdempotencyBackend, KeyClaim, StoredAnswer};
pub use records::{
    Candidate, CandidateRef, ChangedPages, CreateRefused, CreatedRow, ImportCounts, ImportPage,
    LedgerPage, Page, PageEdit, PageSummary, PinRecord, StateChange, StateRow, Upserted,
};

/// Why the page store has no answer. Callers answer by kind (503 for the first two,
/// 500 for the last); the text is for logs only, never for responses.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PageStoreError {
    /// Another writer held the lock past the busy timeout (SQLite): retry in a
    /// second.
    #[error("page store busy: {0}")]
    Busy(String),
    /// The store cannot keep or serve anything now: the file is gone, replaced or
    /// not writable, its I/O failed. Nothing was written; retry later.
    #[error("page store unavailable: {0}")]
    Unavailable(String),
    /// Anything else (a bug, corruption, a pool that cannot be built).
    #[error("page store: {0}")]
    Failed(String),
}

impl PageStoreError {
    /// Its class, for `crate::faults`' table.
    pub fn fault(&self) -> crate::faults::Fault {
        match self {
            PageStoreError::Busy(_) => crate::faults::Fault::Busy,
            PageStoreError::Unavailable(_) => crate::faults::Fault::Unavailable,
            PageStoreError::Failed(_) => crate::faults::Fault::Bug,
        }
    }
}

/// What every page-store call returns: a boxed future (so [`PageBackend`] is
/// object-safe) of the answer or a [`PageStoreError`].
pub type PageFuture<'a, T> = BoxFuture<'a, Result<T, PageStoreError>>;

/// What [`PageBackend::create`] answers: the new page's row, or why it was
/// refused (nothing written), inside the store's [`PageFuture`].
pub type CreateFuture<'a> = PageFuture<'a, Result<CreatedRow, CreateRefused>>;

/// One page database. Implementations hold their own pools and run their own SQL;
/// [`PageStore`] is the handle everything else uses. The versioned writes and the
/// history reads are [`PageHistory`]'s, the idempotency keys
/// [`IdempotencyBackend`]'s, each declared beside its rules; the rest is here.
pub trait PageBackend: PageHistory + IdempotencyBackend + Send + Sync + 'static {
    /// Which store this is, for logs: `sqlite`, …
    fn kind(&self) -> &'static str;

    /// Inserts a new page at version 1, created and updated at `now`, and keeps
    /// that version in its history (a `publish`). A slug the writer gave must be
    /// free in any state; a derived one takes the first free `slug`, `slug-2`, …
    /// ([`crate::page_store::sqlite::pages::free_slug`] is the rule).
    fn create(&self, page: NewPage, pin_hash: Option<String>, now: i64) -> CreateFuture<'_>;

    /// Replaces page `id`'s PIN hash with `pin_hash` (an argon2id PHC string): the
    /// old PIN stops working at the next check, on every process (PIN checks read
    /// the hash from the store each time). Not a version: title and body stay.
    fn set_pin_hash(&self, id: i64, pin_hash: String) -> PageFuture<'_, ()>;

    /// The candidate page with this slug, or `None` (unknown, archived or claimed).
    fn page(&self, slug: String) -> PageFuture<'_, Option<Page>>;

    /// The candidate count and `limit` candidates from `offset`, newest first
    /// (`updated_at DESC, id DESC`).
    fn ledger(&self, offset: i64, limit: i64) -> PageFuture<'_, LedgerPage>;

    /// Id, PIN hash and state of the page with this slug in any state, for a PIN
    /// check (the only read of a PIN hash).
    fn pin_record(&self, slug: String) -> PageFuture<'_, Option<PinRecord>>;

    /// The corpus generation now (committed changes only).
    fn generation(&self) -> PageFuture<'_, i64>;

    /// Which history the generations read last belong to: a number that changes
    /// when the database may have lost or rewritten generations already seen (a
    /// server restored from a backup, a failover to a copy that had not received
    /// every commit), so snapshots built before must be rebuilt in full rather than
    /// followed. A store whose history cannot fork answers a constant.
    fn epoch(&self) -> u64 {
        0
    }

    /// Every candidate ordered by id, with the generation they were read at (one
    /// snapshot of the database).
    fn candidates(&self) -> PageFuture<'_, (i64, Vec<Candidate>)>;

    /// Hands every candidate to `each`, ordered by id, and returns the generation
    /// they were read at (one snapshot of the database), as [`Self::candidates`]
    /// does; a backend that can hands each row over as it is read, so the whole
    /// table is never held as `Candidate`s (at a million pages those were twice
    /// the search snapshot's size). The default reads them all first.
    fn each_candidate(&self, mut each: CandidateSink) -> PageFuture<'_, i64> {
        async move {
            let (generation, list) = self.candidates().await?;
            list.iter().for_each(|c| each(c.borrowed()));
            Ok(generation)
        }
        .boxed()
    }

    /// The generation now and the pages changed after `since`, read in one
    /// snapshot; `None` when the change log no longer reaches back to `since`
    /// (reload in full).
    fn changes_since(&self, since: i64) -> PageFuture<'_, Option<(i64, ChangedPages)>>;

    /// Deletes change-log rows more than `keep` generations old, the oldest
    /// first; returns how many. A backend may stop after
    /// [`COMPACT_BATCH`] rows (SQLite does): callers repeat while a call
    /// deleted that many or more.
    fn compact_changes(&self, keep: i64) -> PageFuture<'_, usize>;

    /// Number of pages in any state.
    fn count_all(&self) -> PageFuture<'_, i64>;

    /// Upserts `pages` by slug in one transaction: all of them or, on any error,
    /// none ([`crate::page_store::sqlite::pages::upsert`] is the rule). Each page
    /// inserted or changed keeps its new version (an `import`), its history pruned
    /// to `keep` versions.
    fn import(&self, pages: Vec<ImportPage>, now: i64, keep: i64) -> PageFuture<'_, ImportCounts>;

    /// Whether a write could be kept now, for `/readyz`: `Err` with a few words
    /// for the answer (the details go to the log).
    fn check_ready(&self) -> BoxFuture<'_, Result<(), String>>;

    /// Closes the pools (call inside the runtime, before it shuts down).
    fn close(&self);

    /// The backend itself, for tests that reach into it ([`PageStore::backend`]).
    fn as_any(&self) -> &dyn Any;
}

/// Most change-log rows one [`PageBackend::compact_changes`] may delete.
pub use crate::page_store::sqlite::pages::COMPACT_BATCH;

/// What [`PageBackend::each_candidate`] hands each candidate to; it may run on
/// a blocking thread.
pub type CandidateSink = Box<dyn FnMut(CandidateRef<'_>) + Send>;

/// A cheap, cloneable handle on the page database. It tracks the store's health:
/// the log says once when it stops answering ([`PageStoreError::Unavailable`]) and
/// once when it answers again, not once per request.
#[derive(Clone)]
pub struct PageStore {
    backend: Arc<dyn PageBackend>,
    /// Whether it answers, for the log; shared by clones.
    health: crate::faults::StoreHealth,
    /// Where each call is counted and timed, once start-up has set it
    /// (`agent_pages_page_store_calls_total`); shared by clones.
    calls: crate::metrics::StoreCallsSlot,
    /// Versions kept per page (`PAGE_HISTORY_VERSIONS`).
    history_versions: i64,
}

impl PageStore {
    /// The handle on `backend`.
    pub fn new(backend: impl PageBackend) -> Self {
        Self {
            backend: Arc::new(backend),
            health: crate::faults::StoreHealth::new(crate::faults::Store::Pages),
            calls: Default::default(),
            history_versions: history::DEFAULT_HISTORY_VERSIONS,
        }
    }

    /// This handle keeping `versions` versions per page (at least 1) from now on.
    pub fn with_history_versions(mut self, versions: i64) -> Self {
        self.history_versions = versions.max(1);
        self
    }

    /// Versions kept per page.
    pub fn history_versions(&self) -> i64 {
        self.history_versions
    }

    /// The terms of a write at `now` expecting `expected`.
    fn terms(&self, now: i64, expected: Option<i64>) -> WriteTerms {
        WriteTerms {
            now,
            keep: self.history_versions,
            expected,
        }
    }

    /// Counts and times every call (its clones' too) in `calls` from now on.
    pub fn count_calls_in(&self, calls: crate::metrics::StoreCalls) {
        self.calls.set(calls);
    }

    /// Awaits `call`, then [`PageStore::observe`]s its result with its time.
    async fn timed<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, PageStoreError>>,
    ) -> Result<T, PageStoreError> {
        let started = std::time::Instant::now();
        let result = call.await;
        self.observe_timed(result, Some(started.elapsed()))
    }

    /// Notes the result of a call: the first [`PageStoreError::Unavailable`] after
    /// an answer logs a warning, the first answer after one logs the recovery; and
    /// counts it (`agent_pages_page_store_calls_total`, without a time). For a
    /// result awaited elsewhere; a call made here goes through [`PageStore::timed`].
    #[allow(dead_code)]
    fn observe<T>(&self, result: Result<T, PageStoreError>) -> Result<T, PageStoreError> {
        self.observe_timed(result, None)
    }

    /// [`PageStore::observe`], with the call's time when it was measured.
    fn observe_timed<T>(
        &self,
        result: Result<T, PageStoreError>,
        took: Option<std::time::Duration>,
    ) -> Result<T, PageStoreError> {
        use crate::metrics::CallResult;
        self.calls.record(
            match &result {
                Ok(_) => CallResult::Ok,
                Err(PageStoreError::Busy(_)) => CallResult::Busy,
                Err(_) => CallResult::Failed,
            },
            took,
        );
        match &result {
            Err(PageStoreError::Unavailable(e)) => self.health.unavailable(self.kind(), e),
            Ok(_) => self.health.answered(self.kind()),
            Err(_) => {}
        }
        result
    }

    /// Which store this is, for logs: `sqlite`, …
    pub fn kind(&self) -> &'static str {
        self.backend.kind()
    }

    /// The backend as its own type, when it is a `T` (tests look inside).
    pub fn backend<T: PageBackend>(&self) -> Option<&T> {
        self.backend.as_any().downcast_ref()
    }

    /// [`PageBackend::create`].
    pub async fn create(
        &self,
        page: NewPage,
        pin_hash: Option<String>,
        now: i64,
    ) -> Result<Result<CreatedRow, CreateRefused>, PageStoreError> {
        self.timed(self.backend.create(page, pin_hash, now)).await
    }

    /// [`PageHistory::update`], whatever version the page is at.
    pub async fn update(
        &self,
        id: i64,
        title: Option<PageTitle>,
        body: Option<PageBody>,
        now: i64,
    ) -> Result<i64, PageStoreError> {
        self.update_expecting(id, title, body, now, None)
            .await?
            .map_err(|_| PageStoreError::Failed(format!("no page {id} to update")))
    }

    /// [`PageHistory::update`], expecting the page at `expected` when given.
    pub async fn update_expecting(
        &self,
        id: i64,
        title: Option<PageTitle>,
        body: Option<PageBody>,
        now: i64,
        expected: Option<i64>,
    ) -> Result<Result<i64, VersionMismatch>, PageStoreError> {
        let terms = self.terms(now, expected);
        let edit = PageEdit { title, body };
        self.timed(self.backend.update(id, edit, terms)).await
    }

    /// [`PageHistory::change_state`], whatever version the page is at.
    pub async fn change_state(
        &self,
        id: i64,
        change: StateChange,
        now: i64,
    ) -> Result<StateRow, PageStoreError> {
        self.change_state_expecting(id, change, now, None)
            .await?
            .map_err(|_| PageStoreError::Failed(format!("no page {id} to change")))
    }

    /// [`PageHistory::change_state`], expecting the page at `expected` when given.
    pub async fn change_state_expecting(
        &self,
        id: i64,
        change: StateChange,
        now: i64,
        expected: Option<i64>,
    ) -> Result<Result<StateRow, VersionMismatch>, PageStoreError> {
        let terms = self.terms(now, expected);
        self.timed(self.backend.change_state(id, change, terms))
            .await
    }

    /// [`PageHistory::restore`], expecting the page at `expected` when given.
    pub async fn restore(
        &self,
        id: i64,
        version: i64,
        now: i64,
        expected: Option<i64>,
    ) -> Result<Restored, PageStoreError> {
        let terms = self.terms(now, expected);
        self.timed(self.backend.restore(id, version, terms)).await
    }

    /// [`PageBackend::set_pin_hash`].
    pub async fn set_pin_hash(&self, id: i64, pin_hash: String) -> Result<(), PageStoreError> {
        self.observe(self.backend.set_pin_hash(id, pin_hash).await)
    }

    /// [`IdempotencyBackend::claim_key`].
    pub async fn claim_key(&self, claim: KeyClaim) -> Result<Claimed, PageStoreError> {
        self.timed(self.backend.claim_key(claim)).await
    }

    /// [`IdempotencyBackend::finish_key`].
    pub async fn finish_key(
        &self,
        key_hash: &str,
        started_at: i64,
        answer: StoredAnswer,
    ) -> Result<(), PageStoreError> {
        self.timed(
            self.backend
                .finish_key(key_hash.to_owned(), started_at, answer),
        )
        .await
    }

    /// [`IdempotencyBackend::release_key`].
    pub async fn release_key(&self, key_hash: &str, started_at: i64) -> Result<(), PageStoreError> {
        self.timed(self.backend.release_key(key_hash.to_owned(), started_at))
            .await
    }

    /// [`PageHistory::versions`].
    pub async fn versions(
        &self,
        id: i64,
        offset: i64,
        limit: i64,
    ) -> Result<VersionList, PageStoreError> {
        self.timed(self.backend.versions(id, offset, limit)).await
    }

    /// [`PageHistory::version`]: version `version` of page `id`.
    pub async fn version(
        &self,
        id: i64,
        version: i64,
    ) -> Result<Option<PageVersion>, PageStoreError> {
        self.timed(self.backend.version(id, version, false)).await
    }

    /// [`PageHistory::version`]: the newest kept version of page `id` older than
    /// `version`.
    pub async fn version_before(
        &self,
        id: i64,
        version: i64,
    ) -> Result<Option<PageVersion>, PageStoreError> {
        self.timed(self.backend.version(id, version, true)).await
    }

    /// [`PageBackend::page`].
    pub async fn page(&self, slug: &str) -> Result<Option<Page>, PageStoreError> {
        self.timed(self.backend.page(slug.to_owned())).await
    }

    /// [`PageBackend::ledger`].
    pub async fn ledger(&self, offset: i64, limit: i64) -> Result<LedgerPage, PageStoreError> {
        self.timed(self.backend.ledger(offset, limit)).await
    }

    /// [`PageBackend::pin_record`].
    pub async fn pin_record(&self, slug: &str) -> Result<Option<PinRecord>, PageStoreError> {
        self.timed(self.backend.pin_record(slug.to_owned())).await
    }

    /// [`PageBackend::generation`].
    pub async fn generation(&self) -> Result<i64, PageStoreError> {
        self.timed(self.backend.generation()).await
    }

    /// [`PageBackend::epoch`].
    pub fn epoch(&self) -> u64 {
        self.backend.epoch()
    }

    /// [`PageBackend::candidates`].
    pub async fn candidates(&self) -> Result<(i64, Vec<Candidate>), PageStoreError> {
        self.timed(self.backend.candidates()).await
    }

    /// [`PageBackend::each_candidate`].
    pub async fn each_candidate(&self, each: CandidateSink) -> Result<i64, PageStoreError> {
        self.timed(self.backend.each_candidate(each)).await
    }

    /// [`PageBackend::changes_since`].
    pub async fn changes_since(
        &self,
        since: i64,
    ) -> Result<Option<(i64, ChangedPages)>, PageStoreError> {
        self.timed(self.backend.changes_since(since)).await
    }

    /// [`PageBackend::compact_changes`].
    pub async fn compact_changes(&self, keep: i64) -> Result<usize, PageStoreError> {
        self.timed(self.backend.compact_changes(keep)).await
    }

    /// [`PageBackend::count_all`].
    pub async fn count_all(&self) -> Result<i64, PageStoreError> {
        self.timed(self.backend.count_all()).await
    }

    /// [`PageBackend::import`].
    pub async fn import(
        &self,
        pages: Vec<ImportPage>,
        now: i64,
    ) -> Result<ImportCounts, PageStoreError> {
        self.timed(self.backend.import(pages, now, self.history_versions))
            .await
    }

    /// [`PageBackend::check_ready`].
    pub async fn check_ready(&self) -> Result<(), String> {
        self.backend.check_ready().await
    }

    /// [`PageBackend::close`].
    pub fn close(&self) {
        self.backend.close()
    }
}
