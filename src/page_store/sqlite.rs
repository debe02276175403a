//! The SQLite page store (the default): the service's own database file, read
//! through a deadpool-sqlite pool, written in `BEGIN IMMEDIATE` transactions on it,
//! running [`crate::db::pages`]'s SQL.
//!
//! A write is never acknowledged unless it is kept: the file's identity is checked
//! before and after every write ([`crate::db::storage`]), because SQLite happily
//! writes into a file that was deleted or replaced. The corpus generation, read on
//! every budgeted search, is read on a dedicated connection on the calling thread:
//! under WAL a reader never waits for a writer, and a pool round trip (a
//! blocking-thread hop) costs more than the read.

use std::any::Any;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use deadpool_sqlite::Pool;
use futures_util::future::BoxFuture;
use futures_util::FutureExt as _;
use rusqlite::{Connection, Transaction};

use super::{
    Candidate, CandidateSink, ChangedPages, CreateRefused, Created, ImportCounts, ImportPage,
    LedgerPage, Page, PageBackend, PageState, PageStoreError, PinRecord, StateChange, StoreFuture,
};
use crate::db::storage::Storage;
use crate::db::{self, pages, DbError};
use crate::domain::{NewPage, PageBody, PageTitle};

/// Read connections in the pool (page writes take them too).
pub const POOL_SIZE: usize = 16;

/// Longest wait of the dedicated generation reader for a lock (only a checkpoint
/// or recovery can make a WAL reader wait) before the pool is asked instead.
const GENERATION_READ_TIMEOUT: Duration = Duration::from_millis(20);

/// The pages in one SQLite file.
pub struct SqlitePages {
    pool: Pool,
    /// The file as opened at start, to tell when it is gone or replaced.
    storage: Storage,
    /// A read connection of its own for the one-row generation read; `None` when
    /// it could not be opened (then the pool is used).
    generation_conn: Option<Mutex<Connection>>,
}

impl SqlitePages {
    /// The pages in the database at `path`, which must exist and be migrated
    /// ([`db::open_migrated`]); `pool_size` read connections at most.
    ///
    /// Errors: the file's identity cannot be read, or the pool not built.
    pub fn open(path: &Path, pool_size: usize) -> Result<Self, DbError> {
        let storage = Storage::capture(path).map_err(|source| DbError::Metadata {
            path: path.display().to_string(),
            source,
        })?;
        let pool = db::create_pool(path, pool_size)?;
        let generation_conn = db::open_reader(path, GENERATION_READ_TIMEOUT)
            .map_err(|e| tracing::warn!(error = %e, "no dedicated generation reader"))
            .ok()
            .map(Mutex::new);
        Ok(Self {
            pool,
            storage,
            generation_conn,
        })
    }

    /// The read pool (tests put it in the states a fault leaves behind).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The file as opened at start.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// Runs `f` in a write transaction ([`db::with_write`]) only while the
    /// database file at the configured path is the one open and is writable, and
    /// checks again after the commit: a write into a deleted or replaced file would
    /// be lost at the next start, so it is never acknowledged.
    async fn write<T, F>(&self, f: F) -> Result<T, PageStoreError>
    where
        F: FnOnce(&Transaction<'_>) -> Result<T, rusqlite::Error> + Send + 'static,
        T: Send + 'static,
    {
        let check = || {
            self.storage.check().map_err(|fault| {
                tracing::error!(%fault, "refusing a write: the database file cannot keep it");
                PageStoreError::Unavailable(fault.to_string())
            })
        };
        check()?;
        let out = db::with_write(&self.pool, f).await.map_err(classify)?;
        check()?;
        Ok(out)
    }

    async fn read<T, F>(&self, f: F) -> Result<T, PageStoreError>
    where
        F: FnOnce(&mut Connection) -> Result<T, rusqlite::Error> + Send + 'static,
        T: Send + 'static,
    {
        db::with_conn(&self.pool, f).await.map_err(classify)
    }
}

/// A lock held past the busy timeout is [`PageStoreError::Busy`], a file that
/// cannot be written or read [`PageStoreError::Unavailable`], anything else
/// [`PageStoreError::Failed`].
pub fn classify(e: DbError) -> PageStoreError {
    if e.is_busy() {
        PageStoreError::Busy(e.to_string())
    } else if e.is_storage_fault() {
        PageStoreError::Unavailable(e.to_string())
    } else {
        PageStoreError::Failed(e.to_string())
    }
}

impl PageBackend for SqlitePages {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn create(
        &self,
        page: NewPage,
        pin_hash: Option<String>,
        now: i64,
    ) -> StoreFuture<'_, Result<Created, CreateRefused>> {
        self.write(move |tx| pages::create(tx, &page, pin_hash.as_deref(), now))
            .boxed()
    }

    fn update(
        &self,
        id: i64,
        title: Option<PageTitle>,
        body: Option<PageBody>,
        now: i64,
    ) -> StoreFuture<'_, i64> {
        self.write(move |tx| pages::update(tx, id, title.as_ref(), body.as_ref(), now))
            .boxed()
    }

    fn change_state(&self, id: i64, change: StateChange, now: i64) -> StoreFuture<'_, PageState> {
        self.write(move |tx| pages::change_state(tx, id, change, now))
            .boxed()
    }

    fn page(&self, slug: String) -> StoreFuture<'_, Option<Page>> {
        self.read(move |c| pages::candidate_by_slug(c, &slug))
            .boxed()
    }

    fn ledger(&self, offset: i64, limit: i64) -> StoreFuture<'_, LedgerPage> {
        self.read(move |c| pages::ledger_page(c, offset, limit))
            .boxed()
    }

    fn pin_record(&self, slug: String) -> StoreFuture<'_, Option<PinRecord>> {
        self.read(move |c| pages::pin_hash(c, &slug)).boxed()
    }

    fn generation(&self) -> StoreFuture<'_, i64> {
        async move {
            if let Some(conn) = &self.generation_conn {
                let read = conn
                    .lock()
                    .map_err(|_| ())
                    .and_then(|c| pages::generation(&c).map_err(|_| ()));
                if let Ok(generation) = read {
                    return Ok(generation);
                }
            }
            self.read(|c| pages::generation(c)).await
        }
        .boxed()
    }

    fn candidates(&self) -> StoreFuture<'_, (i64, Vec<Candidate>)> {
        self.read(pages::candidates).boxed()
    }

    fn each_candidate(&self, mut each: CandidateSink) -> StoreFuture<'_, i64> {
        self.read(move |c| {
            // On a thread of its own that ends with the read: the allocator
            // returns the scratch of whatever `each` builds (at start-up, about
            // as large as the snapshot) to the system when its thread exits,
            // where a pooled thread would keep it.
            std::thread::scope(|scope| {
                scope
                    .spawn(|| pages::each_candidate(c, &mut each))
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        })
        .boxed()
    }

    fn changes_since(&self, since: i64) -> StoreFuture<'_, Option<(i64, ChangedPages)>> {
        self.read(move |c| pages::changes_since(c, since)).boxed()
    }

    fn compact_changes(&self, keep: i64) -> StoreFuture<'_, usize> {
        self.read(move |c| pages::compact_changes(c, keep)).boxed()
    }

    fn count_all(&self) -> StoreFuture<'_, i64> {
        self.read(|c| pages::count_all(c)).boxed()
    }

    fn import(&self, batch: Vec<ImportPage>, now: i64) -> StoreFuture<'_, ImportCounts> {
        self.write(move |tx| pages::upsert_all(tx, &batch, now))
            .boxed()
    }

    fn check_ready(&self) -> BoxFuture<'_, Result<(), String>> {
        let checked = self.storage.check().map_err(|fault| {
            tracing::error!(%fault, "readiness: database file");
            format!("the database file is {}", fault.short())
        });
        futures_util::future::ready(checked).boxed()
    }

    fn close(&self) {
        self.pool.close();
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
