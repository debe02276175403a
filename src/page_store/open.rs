//! The page store configuration chose, opened: the one way `serve`, `import`,
//! `migrate` and `copy` get it. [`PagesAt`] is the choice (configuration makes it
//! from `AGENT_PAGES_DATABASE_URL` or `AGENT_PAGES_DATABASE`); [`open`] turns it
//! into a migrated [`PageStore`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use super::postgres::PostgresPages;
use super::sqlite::SqlitePages;
use super::PageStore;
use crate::pg::PgSettings;

/// Where the pages are.
// Made once per process: the size of the PostgreSQL settings does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum PagesAt {
    /// A SQLite file (`AGENT_PAGES_DATABASE`; created, with its folders, when
    /// missing).
    Sqlite(PathBuf),
    /// A PostgreSQL database (`AGENT_PAGES_DATABASE_URL`), shared by replicas.
    Postgres(PgSettings),
}

impl PagesAt {
    /// The SQLite file, when the pages are in one.
    pub fn sqlite_file(&self) -> Option<&Path> {
        match self {
            PagesAt::Sqlite(path) => Some(path),
            PagesAt::Postgres(_) => None,
        }
    }
}

/// How long opening waits for PostgreSQL to answer (it may start after us, as
/// in `docker compose up`) before giving up.
pub const POSTGRES_START_WAIT: Duration = Duration::from_secs(60);

/// The pages `at` names, every migration applied; `readers` is the size of a SQLite
/// store's read pool (a PostgreSQL pool's size is its settings'). Call inside a
/// Tokio runtime.
///
/// Errors: the file cannot be opened or migrated; PostgreSQL does not answer
/// within [`POSTGRES_START_WAIT`], or refuses us, or a migration failed.
pub async fn open(at: &PagesAt, readers: usize) -> anyhow::Result<PageStore> {
    match at {
        PagesAt::Sqlite(path) => {
            drop(
                crate::sqlite::open_migrated(path)
                    .with_context(|| format!("opening and migrating {}", path.display()))?,
            );
            let pages = SqlitePages::open(path, readers)
                .with_context(|| format!("reading {}", path.display()))?;
            Ok(PageStore::new(pages))
        }
        PagesAt::Postgres(pg) => Ok(PageStore::new(open_postgres(pg).await?)),
    }
}

/// [`PostgresPages::open`], retried each second for [`POSTGRES_START_WAIT`] while
/// the server does not take connections (not running or starting up yet; the
/// first failure is logged). Anything else (a refused password, an untrusted
/// certificate, a failed migration) stops at once.
async fn open_postgres(pg: &PgSettings) -> anyhow::Result<PostgresPages> {
    let started = std::time::Instant::now();
    let mut logged = false;
    loop {
        match PostgresPages::open(pg).await {
            Ok(pages) => return Ok(pages),
            Err(e) if e.is_down() && started.elapsed() < POSTGRES_START_WAIT => {
                if !logged {
                    tracing::warn!(
                        postgres = %pg.describe(),
                        error = %e,
                        "PostgreSQL does not answer yet; trying again each second"
                    );
                    logged = true;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => {
                return Err(e).with_context(|| format!("opening PostgreSQL at {}", pg.describe()))
            }
        }
    }
}
