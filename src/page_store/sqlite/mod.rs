//! The SQLite page store (the default): the service's own database file, read
//! through a deadpool-sqlite pool, written in `BEGIN IMMEDIATE` transactions on it,
//! running [`pages`]' SQL.
//!
//! A write is never acknowledged unless it is kept: the file's identity is checked
//! before and after every write ([`crate::sqlite::storage`]), because SQLite happily
//! writes into a file that was deleted or replaced. Every call, reads included,
//! first checks that SQLite can touch the WAL index it maps into memory without
//! the kernel killing the process (`Storage::check_mapped`). A write that failed
//! for the storage's sake (disk full, I/O) keeps readiness failing until a write
//! succeeds again (readiness tries one), and the first success checkpoints and
//! truncates the WAL. The corpus generation, needed by
//! every budgeted search, comes with the budget decision when the counters are in
//! SQLite too (the RateLimiter reads it once per batch through
//! [`SqlitePages::generation_probe`]); otherwise (Redis) it is read on a dedicated
//! connection on the calling thread: under WAL a reader never waits for a writer,
//! and a pool round trip (a blocking-thread hop) costs more than the read.

use std::any::Any;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_sqlite::Pool;
use futures_util::future::BoxFuture;
use futures_util::FutureExt as _;
use rusqlite::{Connection, Transaction};

pub mod history;
pub mod idempotency;
pub mod pages;
mod rows;

use super::{
    Candidate, CandidateSink, ChangedPages, Claimed, CreateFuture, IdempotencyBackend,
    ImportCounts, ImportPage, KeyClaim, LedgerPage, Page, PageBackend, PageEdit, PageFuture,
    PageHistory, PageStoreError, PageVersion, PinRecord, Restored, StateChange, StateRow,
    StoredAnswer, VersionList, WriteFuture, WriteTerms,
};
use crate::domain::NewPage;
use crate::faults::Fault;
use crate::sqlite::storage::{NotReady, Storage};
use crate::sqlite::{self, DbError};

/// A migrated page database in a fresh temp folder, for unit tests of what runs
/// on a SQLite connection; keep the folder alive as long as the connection.
#[cfg(test)]
pub(crate) use crate::sqlite::temp_db;

/// Read connections in the pool (page writes take them too).
pub const POOL_SIZE: usize = 16;

/// Longest wait of the dedicated generation reader for a lock (only a checkpoint
/// or recovery can make a WAL reader wait) before the pool is asked instead.
const GENERATION_READ_TIMEOUT: Duration = Duration::from_millis(20);

/// The pages in one SQLite file.
pub struct SqlitePages {
    pool: Pool,
    /// The file as opened at start, to tell when it is gone or replaced, and its
    /// WAL index, to tell when touching it would be fatal.
    storage: Arc<Storage>,
    /// Why the last write failed for the storage's sake (`Fault::Unavailable`),
    /// until a write succeeds again: readiness fails meanwhile.
    write_fault: Mutex<Option<String>>,
    /// A read connection of its own for the one-row generation read; `None` when
    /// it could not be opened (then the pool is used).
    generation_conn: Option<Mutex<Connection>>,
}

impl SqlitePages {
    /// The pages in the database at `path`, which must exist and be migrated
    /// ([`sqlite::open_migrated`]); `pool_size` read connections at most.
    ///
    /// Errors: the file's identity cannot be read, or the pool not built.
    pub fn open(path: &Path, pool_size: usize) -> Result<Self, DbError> {
        let storage = Arc::new(Storage::capture(path).map_err(|source| DbError::Metadata {
            path: path.display().to_string(),
            source,
        })?);
        let pool = sqlite::create_pool(path, pool_size)?;
        let generation_conn = sqlite::open_reader(path, GENERATION_READ_TIMEOUT)
            .map_err(|e| tracing::warn!(error = %e, "no dedicated generation reader"))
            .ok()
            .map(Mutex::new);
        Ok(Self {
            pool,
            storage,
            write_fault: Mutex::new(None),
            generation_conn,
        })
    }

    /// A reader of the corpus generation on a read connection of its own, for the
    /// SQLite budget's RateLimiter to call once per committed batch of spends
    /// (`crate::budget::rate_limiter::GenerationProbe`): `None` from it when the
    /// WAL index is unsafe to touch or the read failed (the search then asks the
    /// store, which answers the fault). `None` when no connection could be opened.
    pub fn generation_probe(&self) -> Option<impl FnMut() -> Option<i64> + Send + 'static> {
        let conn = sqlite::open_reader(self.storage.path(), GENERATION_READ_TIMEOUT)
            .map_err(|e| tracing::warn!(error = %e, "no generation reader for the budget"))
            .ok()?;
        let storage = self.storage.clone();
        Some(move || {
            storage.check_mapped().ok()?;
            pages::generation(&conn).ok()
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

    /// Runs `f` in a write transaction ([`sqlite::with_write`]) only while the
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
        match sqlite::with_write(&self.pool, f).await {
            Ok(out) => {
                check()?;
                self.write_kept();
                Ok(out)
            }
            Err(e) => {
                if e.fault() == Fault::Unavailable {
                    tracing::error!(error = %e, "a page write could not be kept");
                    *self.write_fault.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.words());
                }
                Err(classify(e))
            }
        }
    }

    /// A write was kept. The first after a storage fault ends the fault and
    /// checkpoints the WAL in the background (truncating it, so the space a full
    /// disk left in it goes back).
    fn write_kept(&self) {
        let ended = self
            .write_fault
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(fault) = ended else { return };
        tracing::info!(was = fault, "page writes are kept again");
        let pool = self.pool.clone();
        let storage = self.storage.clone();
        tokio::spawn(async move {
            if storage.check_mapped().is_err() {
                return;
            }
            let done = sqlite::with_conn(&pool, |c| {
                c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                    ))
                })
            })
            .await;
            match done {
                Ok((busy, frames, copied)) => tracing::info!(
                    busy,
                    frames,
                    copied,
                    "checkpointed the WAL after the storage fault"
                ),
                Err(e) => tracing::warn!(error = %e, "checkpoint after the storage fault failed"),
            }
        });
    }

    async fn read<T, F>(&self, f: F) -> Result<T, PageStoreError>
    where
        F: FnOnce(&mut Connection) -> Result<T, rusqlite::Error> + Send + 'static,
        T: Send + 'static,
    {
        self.mapped()?;
        sqlite::with_conn(&self.pool, f).await.map_err(classify)
    }

    /// [`Storage::check_mapped`] as a page-store error.
    fn mapped(&self) -> Result<(), PageStoreError> {
        self.storage
            .check_mapped()
            .map_err(|fault| classify(DbError::Storage(fault)))
    }

    /// Readiness of the database: the file is the one open and writable, its
    /// filesystem has room ([`Storage::check_ready`]), and when the last write
    /// failed for the storage's sake (or readiness found the disk full), a write
    /// that changes nothing is kept now.
    async fn ready(&self) -> Result<(), String> {
        match self.storage.check_ready("database") {
            Ok(None) => {}
            Ok(Some(e)) => tracing::warn!(error = %e, "readiness: free space unknown"),
            Err(NotReady::Full(reason)) => {
                // Writes may have left the WAL long (its checkpoint could not grow
                // the database file): once space is back, the probe below and the
                // checkpoint after it run as after a failed write.
                *self.write_fault.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some("full".to_owned());
                return Err(reason);
            }
            Err(NotReady::File(reason)) => return Err(reason),
        }
        let failing = self
            .write_fault
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(fault) = failing {
            self.write(|tx| {
                tx.execute(
                    "UPDATE corpus_generation SET generation = generation WHERE id = 1",
                    [],
                )
            })
            .await
            .map_err(|_| format!("the database cannot keep a write: {fault}"))?;
        }
        Ok(())
    }
}

/// The page-store error of `e`, by its class (`crate::sqlite::fault`): a lock held
/// past the busy timeout is [`PageStoreError::Busy`], storage that cannot keep or
/// serve anything now [`PageStoreError::Unavailable`], a bug
/// [`PageStoreError::Failed`].
pub fn classify(e: DbError) -> PageStoreError {
    match e.fault() {
        Fault::Busy => PageStoreError::Busy(e.to_string()),
        Fault::Unavailable => PageStoreError::Unavailable(e.to_string()),
        Fault::Bug => PageStoreError::Failed(e.to_string()),
    }
}

impl PageBackend for SqlitePages {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn create(&self, page: NewPage, pin_hash: Option<String>, now: i64) -> CreateFuture<'_> {
        // Version 1 is the only one: the bound does not matter.
        self.write(move |tx| history::create(tx, &page, pin_hash.as_deref(), now, 1))
            .boxed()
    }

    fn set_pin_hash(&self, id: i64, pin_hash: String) -> PageFuture<'_, ()> {
        self.write(move |tx| {
            tx.execute(
                "UPDATE pages SET pin_hash = ?2 WHERE id = ?1",
                rusqlite::params![id, pin_hash],
            )
            .map(drop)
        })
        .boxed()
    }

    fn page(&self, slug: String) -> PageFuture<'_, Option<Page>> {
        self.read(move |c| pages::candidate_by_slug(c, &slug))
            .boxed()
    }

    fn ledger(&self, offset: i64, limit: i64) -> PageFuture<'_, LedgerPage> {
        self.read(move |c| pages::ledger_page(c, offset, limit))
            .boxed()
    }

    fn pin_record(&self, slug: String) -> PageFuture<'_, Option<PinRecord>> {
        self.read(move |c| pages::pin_hash(c, &slug)).boxed()
    }

    fn generation(&self) -> PageFuture<'_, i64> {
        async move {
            self.mapped()?;
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

    fn candidates(&self) -> PageFuture<'_, (i64, Vec<Candidate>)> {
        self.read(pages::candidates).boxed()
    }

    fn each_candidate(&self, mut each: CandidateSink) -> PageFuture<'_, i64> {
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

    fn changes_since(&self, since: i64) -> PageFuture<'_, Option<(i64, ChangedPages)>> {
        self.read(move |c| pages::changes_since(c, since)).boxed()
    }

    fn compact_changes(&self, keep: i64) -> PageFuture<'_, usize> {
        self.read(move |c| pages::compact_changes(c, keep)).boxed()
    }

    fn count_all(&self) -> PageFuture<'_, i64> {
        self.read(|c| pages::count_all(c)).boxed()
    }

    fn import(&self, batch: Vec<ImportPage>, now: i64, keep: i64) -> PageFuture<'_, ImportCounts> {
        self.write(move |tx| history::import_all(tx, &batch, now, keep))
            .boxed()
    }

    fn check_ready(&self) -> BoxFuture<'_, Result<(), String>> {
        self.ready().boxed()
    }

    fn close(&self) {
        self.pool.close();
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl PageHistory for SqlitePages {
    fn update(&self, id: i64, edit: PageEdit, terms: WriteTerms) -> WriteFuture<'_, i64> {
        self.write(move |tx| history::update(tx, id, &edit, terms))
            .boxed()
    }

    fn change_state(
        &self,
        id: i64,
        change: StateChange,
        terms: WriteTerms,
    ) -> WriteFuture<'_, StateRow> {
        self.write(move |tx| history::change_state(tx, id, change, terms))
            .boxed()
    }

    fn restore(&self, id: i64, version: i64, terms: WriteTerms) -> PageFuture<'_, Restored> {
        self.write(move |tx| history::restore(tx, id, version, terms))
            .boxed()
    }

    fn versions(&self, id: i64, offset: i64, limit: i64) -> PageFuture<'_, VersionList> {
        self.read(move |c| history::versions(c, id, offset, limit))
            .boxed()
    }

    fn version(&self, id: i64, version: i64, before: bool) -> PageFuture<'_, Option<PageVersion>> {
        self.read(move |c| {
            if before {
                history::version_before(c, id, version)
            } else {
                history::version_of(c, id, version)
            }
        })
        .boxed()
    }
}

impl IdempotencyBackend for SqlitePages {
    fn claim_key(&self, claim: KeyClaim) -> PageFuture<'_, Claimed> {
        self.write(move |tx| idempotency::claim(tx, &claim)).boxed()
    }

    fn finish_key(
        &self,
        key_hash: String,
        started_at: i64,
        answer: StoredAnswer,
    ) -> PageFuture<'_, ()> {
        self.write(move |tx| idempotency::finish(tx, &key_hash, started_at, &answer))
            .boxed()
    }

    fn release_key(&self, key_hash: String, started_at: i64) -> PageFuture<'_, ()> {
        self.write(move |tx| idempotency::release(tx, &key_hash, started_at))
            .boxed()
    }
}
