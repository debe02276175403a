//! SQLite, for the stores that keep their data in a SQLite file (the page store's
//! default backend, `crate::page_store::sqlite`, and the budget counters'), as
//! `crate::pg` is PostgreSQL: opening a file, a pool of connections and calls on
//! it, migrations, what each of SQLite's result codes means ([`fault`]) and the
//! checks that keep a file usable ([`storage`]).
//!
//! Every connection is opened through [`open`], which sets the pragmas the service
//! relies on (WAL, `busy_timeout`, foreign keys). Reads in the server go through a
//! deadpool-sqlite pool ([`create_pool`]).
//!
//! The budget counters live in a second file, the budget database ([`open_budget`],
//! by default `crate::budget::open::path_beside` the page database), whose one write
//! connection belongs to the RateLimiter actor: a file has one write lock, and a
//! page write of any size (an import's transaction, from any process) must never
//! make a budget write wait for it.

pub mod fault;
pub mod migrations;
pub mod storage;

use std::path::Path;
use std::time::Duration;

use deadpool_sqlite::{Config, Hook, HookError, Object, Pool, Runtime};
use rusqlite::{Connection, ErrorCode, Transaction, TransactionBehavior};

use crate::faults::Fault;

/// How long a statement waits for another writer before failing with `SQLITE_BUSY`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest wait for a pooled connection before the request fails.
pub const POOL_WAIT: Duration = Duration::from_secs(10);

/// Errors of the database boundary. The cause is kept for logs; responses never
/// show it. [`DbError::fault`] says how it is answered.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// No pooled connection could be had, or the pool itself failed.
    #[error("connection pool: {cause}")]
    Pool { fault: Fault, cause: String },
    /// The file cannot take the operation now, found before SQLite was asked
    /// ([`storage::Storage`]: gone, replaced, not writable, its WAL index not safe
    /// to touch).
    #[error("{0}")]
    Storage(#[from] storage::StorageFault),
    #[error("creating the database folder {path}: {source}")]
    CreateDir {
        path: String,
        source: std::io::Error,
    },
    #[error("reading the metadata of {path}: {source}")]
    Metadata {
        path: String,
        source: std::io::Error,
    },
}

impl DbError {
    /// How this error is to be answered: SQLite's code through
    /// [`fault::SQLITE_CODES`]; a pool that timed out is busy; a file that cannot
    /// be used is unavailable.
    pub fn fault(&self) -> Fault {
        match self {
            DbError::Sqlite(e) => fault::class(e),
            DbError::Pool { fault, .. } => *fault,
            DbError::Storage(_) | DbError::CreateDir { .. } | DbError::Metadata { .. } => {
                Fault::Unavailable
            }
        }
    }

    /// Another connection or process held the lock this statement needed for
    /// longer than [`BUSY_TIMEOUT`], or no pooled connection was free in time:
    /// worth a retry in a second.
    pub fn is_busy(&self) -> bool {
        self.fault() == Fault::Busy
    }

    /// A few words for `/readyz` and logs (`full`, `read-only`, `gone`, …).
    pub fn words(&self) -> String {
        match self {
            DbError::Sqlite(e) => fault::sqlite_words(e).unwrap_or("failing").to_owned(),
            DbError::Storage(fault) => fault.short().to_owned(),
            DbError::Pool { .. } => "without a free connection".to_owned(),
            DbError::CreateDir { .. } | DbError::Metadata { .. } => "not reachable".to_owned(),
        }
    }

    /// A failed `pool.get()`: a timeout is busy, a connection SQLite could not
    /// open is classed by its code, a closed pool (shutting down) is unavailable.
    fn pool_get(e: deadpool_sqlite::PoolError) -> Self {
        use deadpool_sqlite::PoolError;
        let fault = match &e {
            PoolError::Timeout(_) => Fault::Busy,
            PoolError::Backend(e) => fault::class(e),
            PoolError::Closed | PoolError::PostCreateHook(_) => Fault::Unavailable,
            PoolError::NoRuntimeSpecified => Fault::Bug,
        };
        DbError::Pool {
            fault,
            cause: e.to_string(),
        }
    }

    /// A closure on a pooled connection that panicked: a bug.
    fn interact(e: deadpool_sqlite::InteractError) -> Self {
        DbError::Pool {
            fault: Fault::Bug,
            cause: e.to_string(),
        }
    }

    /// The pool could not be built: a bug of configuration.
    fn build(e: impl std::fmt::Display) -> Self {
        DbError::Pool {
            fault: Fault::Bug,
            cause: e.to_string(),
        }
    }
}

/// Whether a connection that failed with `e` must not be used again: SQLite opened
/// it read-only (it does so silently when the file is not writable at open time,
/// and such a connection never writes again), or its file handle failed. A new
/// connection may well work once the fault is gone.
pub fn poisons_connection(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::ReadOnly | ErrorCode::SystemIoFailure | ErrorCode::CannotOpen)
    )
}

/// Takes `conn` out of the pool for good (it is closed; the pool opens a new one
/// when it needs one).
fn discard(conn: Object, why: &str) {
    tracing::warn!(why, "dropping a database connection from the pool");
    drop(Object::take(conn));
}

/// Turns off SQLite's global memory statistics, which take a process-wide mutex
/// on every allocation SQLite makes: a tenth of the budget thread's time under
/// load, for numbers nothing here reads.
///
/// Must run before the first connection opens and while no other thread uses
/// SQLite (SQLite's rule for `sqlite3_config`), so `main` calls it first thing;
/// once SQLite is initialized it is a no-op (SQLite answers `SQLITE_MISUSE`, which
/// is ignored). Tests that do not call it only run slower.
pub fn tune_sqlite_library() {
    // SAFETY: `sqlite3_config` is sound before `sqlite3_initialize` with no other
    // thread in SQLite, which is how `main` calls it; later it returns
    // SQLITE_MISUSE without touching anything.
    unsafe {
        rusqlite::ffi::sqlite3_config(
            rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS,
            std::ffi::c_int::from(0u8),
        );
    }
}

/// Opens `path` (creating parent folders), in WAL mode with [`BUSY_TIMEOUT`] set.
///
/// Errors: the folder cannot be created, the WAL index of an existing file is not
/// safe to touch ([`storage::Storage::check_mapped`]: SQLite would die of `SIGBUS`
/// on it), or SQLite cannot open the file.
pub fn open(path: &Path) -> Result<Connection, DbError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| DbError::CreateDir {
            path: parent.display().to_string(),
            source,
        })?;
    }
    if path.exists() {
        storage::Storage::capture(path)
            .map_err(|source| DbError::Metadata {
                path: path.display().to_string(),
                source,
            })?
            .check_mapped()?;
    }
    let conn = Connection::open(path)?;
    configure(&conn)?;
    // WAL is a property of the file: set once, every later connection inherits it.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    Ok(conn)
}

/// [`open`], then every migration not yet applied: the one way the service, the
/// CLI and the tests get a usable database.
///
/// Errors: as [`open`], or a migration failed.
pub fn open_migrated(path: &Path) -> Result<Connection, DbError> {
    let mut conn = open(path)?;
    migrations::run(&mut conn)?;
    Ok(conn)
}

/// [`open`] for the budget database at `path`, then its migrations
/// ([`migrations::run_budget`]).
///
/// Errors: as [`open`], or a migration failed.
pub fn open_budget(path: &Path) -> Result<Connection, DbError> {
    let mut conn = open(path)?;
    migrations::run_budget(&mut conn)?;
    Ok(conn)
}

/// A read-only connection to the existing database at `path` that waits at most
/// `busy_timeout` for a lock.
///
/// Errors: SQLite cannot open the file.
pub fn open_reader(path: &Path, busy_timeout: Duration) -> Result<Connection, DbError> {
    let conn = Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(busy_timeout)?;
    Ok(conn)
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(())
}

/// A pool of read connections to `path` (which [`open`] must have created), each with
/// the same pragmas. `max_size` connections at most.
pub fn create_pool(path: &Path, max_size: usize) -> Result<Pool, DbError> {
    let mut config = Config::new(path);
    let mut pool = deadpool_sqlite::PoolConfig::new(max_size);
    // A request never waits on the pool without end: its wait queue is bounded in
    // time, so a flood of readers cannot pile up behind it.
    pool.timeouts.wait = Some(POOL_WAIT);
    pool.timeouts.create = Some(POOL_WAIT);
    config.pool = Some(pool);
    config
        .builder(Runtime::Tokio1)
        .map_err(DbError::build)?
        .post_create(Hook::async_fn(|conn, _| {
            Box::pin(async move {
                conn.interact(|c| configure(c))
                    .await
                    .map_err(|e| HookError::message(e.to_string()))?
                    .map_err(|e| HookError::message(e.to_string()))
            })
        }))
        .build()
        .map_err(DbError::build)
}

/// Runs `f` on a pooled connection on the pool's blocking thread. A connection that
/// fails with an error that [`poisons_connection`] is dropped from the pool.
///
/// Errors: no connection could be had, `f` panicked, or `f` itself failed.
pub async fn with_conn<T, F>(pool: &Pool, f: F) -> Result<T, DbError>
where
    F: FnOnce(&mut Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    T: Send + 'static,
{
    let conn = pool.get().await.map_err(DbError::pool_get)?;
    let result = conn.interact(f).await.map_err(DbError::interact)?;
    if let Err(e) = &result {
        if poisons_connection(e) {
            discard(conn, "storage error");
        }
    }
    result.map_err(DbError::from)
}

/// Runs `f` inside a `BEGIN IMMEDIATE` transaction on a pooled connection and
/// commits when it returns `Ok` (rolls back on `Err`). IMMEDIATE takes the write lock
/// up front, so read-then-write code in `f` (a version bump, a free-slug search)
/// never races another writer; a writer that finds the lock taken waits up to
/// [`BUSY_TIMEOUT`].
///
/// A pooled connection that SQLite opened read-only (the file was not writable at
/// that moment: it stays read-only for good) is dropped before `f` runs and another
/// one taken, up to the pool's size plus one times; so once the file is writable
/// again, the next write succeeds.
///
/// Errors: as [`with_conn`]; `SQLITE_READONLY` when every try found a read-only
/// connection (the file is still not writable).
pub async fn with_write<T, F>(pool: &Pool, f: F) -> Result<T, DbError>
where
    F: FnOnce(&Transaction<'_>) -> Result<T, rusqlite::Error> + Send + 'static,
    T: Send + 'static,
{
    let mut f = f;
    for _ in 0..=pool.status().max_size {
        let conn = pool.get().await.map_err(DbError::pool_get)?;
        let outcome = conn
            .interact(move |c| {
                if c.is_readonly(rusqlite::MAIN_DB)? {
                    return Ok(Err(f));
                }
                let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let out = f(&tx)?;
                tx.commit()?;
                Ok(Ok(out))
            })
            .await
            .map_err(DbError::interact)?;
        match outcome {
            Ok(Ok(out)) => return Ok(out),
            Ok(Err(unused)) => {
                discard(conn, "opened read-only");
                f = unused;
            }
            Err(e) => {
                if poisons_connection(&e) {
                    discard(conn, "storage error");
                }
                return Err(e.into());
            }
        }
    }
    Err(DbError::Sqlite(rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_READONLY),
        Some("every database connection opened read-only".into()),
    )))
}

/// `SELECT 1`: does the database answer?
pub fn ping(conn: &Connection) -> rusqlite::Result<()> {
    conn.query_row("SELECT 1", [], |_| Ok(()))
}

/// A migrated database in a fresh temp folder, for unit tests; keep the folder alive
/// as long as the connection.
#[cfg(test)]
pub(crate) fn temp_db() -> (tempfile::TempDir, Connection) {
    let dir = tempfile::tempdir().expect("temp dir");
    let conn = open_migrated(&dir.path().join("test.sqlite3")).expect("open");
    (dir, conn)
}

/// [`temp_db`] for the budget database.
#[cfg(test)]
pub(crate) fn temp_budget_db() -> (tempfile::TempDir, Connection) {
    let dir = tempfile::tempdir().expect("temp dir");
    let conn = open_budget(&dir.path().join("test.budget.sqlite3")).expect("open");
    (dir, conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool_of_read_only_connections(path: &Path, size: usize) -> Pool {
        let pool = create_pool(path, size).unwrap();
        let path = path.to_owned();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let mut held = Vec::new();
                for _ in 0..size {
                    held.push(pool.get().await.unwrap());
                }
                for conn in &held {
                    let path = path.clone();
                    conn.interact(move |c| {
                        *c = Connection::open_with_flags(
                            &path,
                            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
                        )
                        .unwrap();
                    })
                    .await
                    .unwrap();
                }
            });
        pool
    }

    #[test]
    fn a_connection_that_fails_with_a_storage_error_leaves_the_pool() {
        let (dir, _conn) = temp_db();
        let path = dir.path().join("test.sqlite3");
        let pool = pool_of_read_only_connections(&path, 2);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            assert_eq!(pool.status().size, 2);
            let err = with_conn(&pool, |c| {
                c.execute("INSERT INTO corpus_changes VALUES (1000, 1)", [])
            })
            .await
            .unwrap_err();
            assert_eq!(err.fault(), Fault::Unavailable, "{err}");
            assert_eq!(pool.status().size, 1, "the read-only connection is gone");
            // A write skips the other read-only one and succeeds on a fresh one.
            with_write(&pool, |tx| {
                tx.execute("INSERT INTO corpus_changes VALUES (1000, 1)", [])
            })
            .await
            .unwrap();
            pool.close();
        });
    }
}
