//! SQLite access: plain rusqlite functions taking `&Connection` or `&Transaction`.
//!
//! Every connection is opened through [`open`], which sets the pragmas the service
//! relies on (WAL, `busy_timeout`, foreign keys). Reads in the server go through a
//! deadpool-sqlite pool ([`create_pool`]); the one write connection of the search
//! budget belongs to the RateLimiter actor.

pub mod migrations;
pub mod pages;

use std::path::Path;
use std::time::Duration;

use deadpool_sqlite::{Config, Hook, HookError, Pool, Runtime};
use rusqlite::{Connection, Transaction, TransactionBehavior};

/// How long a statement waits for another writer before failing with `SQLITE_BUSY`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest wait for a pooled connection before the request fails.
pub const POOL_WAIT: Duration = Duration::from_secs(10);

/// Errors of the database boundary. The cause is kept for logs; responses never show it.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("connection pool: {0}")]
    Pool(String),
    #[error("creating the database folder {path}: {source}")]
    CreateDir {
        path: String,
        source: std::io::Error,
    },
}

impl DbError {
    /// Whether another connection held the lock past [`BUSY_TIMEOUT`]
    /// (`SQLITE_BUSY` or `SQLITE_LOCKED`): the write may succeed when retried.
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            DbError::Sqlite(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                )
        )
    }
}

/// Opens `path` (creating parent folders), in WAL mode with [`BUSY_TIMEOUT`] set.
///
/// Errors: the folder cannot be created, or SQLite cannot open the file.
pub fn open(path: &Path) -> Result<Connection, DbError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| DbError::CreateDir {
            path: parent.display().to_string(),
            source,
        })?;
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
        .map_err(|e| DbError::Pool(e.to_string()))?
        .post_create(Hook::async_fn(|conn, _| {
            Box::pin(async move {
                conn.interact(|c| configure(c))
                    .await
                    .map_err(|e| HookError::message(e.to_string()))?
                    .map_err(|e| HookError::message(e.to_string()))
            })
        }))
        .build()
        .map_err(|e| DbError::Pool(e.to_string()))
}

/// Runs `f` on a pooled connection on the pool's blocking thread.
///
/// Errors: no connection could be had, `f` panicked, or `f` itself failed.
pub async fn with_conn<T, F>(pool: &Pool, f: F) -> Result<T, DbError>
where
    F: FnOnce(&mut Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    T: Send + 'static,
{
    let conn = pool.get().await.map_err(|e| DbError::Pool(e.to_string()))?;
    conn.interact(f)
        .await
        .map_err(|e| DbError::Pool(e.to_string()))?
        .map_err(DbError::from)
}

/// Runs `f` inside a `BEGIN IMMEDIATE` transaction on a pooled connection and
/// commits when it returns `Ok` (rolls back on `Err`). IMMEDIATE takes the write lock
/// up front, so read-then-write code in `f` (a version bump, a free-slug search)
/// never races another writer; a writer that finds the lock taken waits up to
/// [`BUSY_TIMEOUT`].
///
/// Errors: as [`with_conn`].
pub async fn with_write<T, F>(pool: &Pool, f: F) -> Result<T, DbError>
where
    F: FnOnce(&Transaction<'_>) -> Result<T, rusqlite::Error> + Send + 'static,
    T: Send + 'static,
{
    with_conn(pool, move |conn| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    })
    .await
}

/// `SELECT 1`: does the database answer? Used by `/healthz`.
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
