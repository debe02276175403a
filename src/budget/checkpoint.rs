//! The budget file's WAL checkpoints, run on a thread of their own rather than by
//! the RateLimiter's commits.
//!
//! Why: SQLite checkpoints a WAL file from the connection whose commit took it past
//! `wal_autocheckpoint` pages (1,000), inside that commit's call. With
//! `synchronous = NORMAL` a commit itself never syncs, but a checkpoint syncs the
//! WAL and the database file. On the RateLimiter's thread that meant: under load,
//! about ten checkpoints a second, each holding up every search waiting on its
//! spend for as long as two `fsync`s take (0.25 ms typically, 3.8 ms at the 90th
//! percentile, 4.8 ms at worst, measured under the busy workload of
//! `scripts/bench.sh` on a shared VM). So the RateLimiter's connection turns
//! automatic checkpoints off ([`disable_auto_checkpoints`]) and a [`Checkpointer`]
//! thread runs a `PASSIVE` checkpoint every [`CHECKPOINT_EVERY`] on its own
//! connection. A passive checkpoint never waits for a lock and never blocks a
//! writer: commits go on appending to the WAL while it copies pages, and once it
//! has copied them all the next commit starts the WAL again from its beginning.
//! With nothing new to copy it syncs nothing.
//!
//! Another process sharing the budget file runs its own checkpoints; any of them
//! copying frames is enough. A checkpoint that fails (a full disk, a file made
//! read-only) is logged once per run of failures and tried again next time; the
//! WAL then grows until one succeeds, which is what SQLite's own checkpoints would
//! do.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;

use crate::sqlite::storage::Storage;
use crate::sqlite::DbError;

/// How often the [`Checkpointer`] copies the budget WAL into the database file.
/// At the busiest (about 2,300 commits a second of four pages each) the WAL grows
/// by about 1,800 pages (7 MB) between two checkpoints; idle, a checkpoint costs
/// a few lock calls.
pub const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

/// Turns SQLite's automatic checkpoints off on `conn` (the RateLimiter's write
/// connection), for a [`Checkpointer`] to run them instead.
///
/// Errors: SQLite refused the pragma.
pub fn disable_auto_checkpoints(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "wal_autocheckpoint", 0)
}

/// The checkpoint thread of one budget file. Dropping it stops the thread (at
/// its next wake-up, without waiting for it).
pub struct Checkpointer {
    _stop: mpsc::Sender<()>,
}

impl Checkpointer {
    /// Opens a connection to the budget file at `path` (its files as captured in
    /// `storage`, checked before each checkpoint like every transaction on the
    /// file) and starts a thread that checkpoints it every `every`.
    ///
    /// Errors: SQLite cannot open the file; the thread cannot be started.
    pub fn start(path: &Path, storage: Arc<Storage>, every: Duration) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let conn = crate::sqlite::open(path)
            .with_context(|| format!("opening {} for its checkpoints", path.display()))?;
        let (stop, stopped) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("budget-checkpoint".into())
            .spawn(move || {
                let mut failing = false;
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    match checkpoint(&conn, &storage) {
                        Ok(()) if failing => {
                            failing = false;
                            tracing::info!("budget WAL checkpoints work again");
                        }
                        Ok(()) => {}
                        Err(e) if !failing => {
                            failing = true;
                            tracing::warn!(error = %e, "budget WAL checkpoint failed; retrying");
                        }
                        Err(_) => {}
                    }
                }
            })
            .context("starting the budget checkpoint thread")?;
        Ok(Self { _stop: stop })
    }
}

/// One passive checkpoint of `conn`'s database, once its WAL index is known to be
/// safe to touch.
fn checkpoint(conn: &Connection, storage: &Storage) -> Result<(), DbError> {
    storage.check_mapped()?;
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A migrated budget file in a temporary folder, and its connection with
    /// automatic checkpoints off.
    fn budget_file() -> (tempfile::TempDir, std::path::PathBuf, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pages.budget.sqlite3");
        let conn = crate::sqlite::open_budget(&path).unwrap();
        disable_auto_checkpoints(&conn).unwrap();
        (dir, path, conn)
    }

    fn wal_frames(conn: &Connection) -> (i64, i64) {
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get(1)?, r.get(2)?))
        })
        .unwrap()
    }

    #[test]
    fn a_connection_without_auto_checkpoints_keeps_every_frame_in_the_wal_until_one_runs() {
        let (_dir, path, conn) = budget_file();
        // Past the 1,000 pages at which SQLite would have checkpointed by itself.
        for i in 0..1_200 {
            conn.execute(
                "INSERT INTO rate_limit_counters (bucket, window_start, count) VALUES (?1, 0, 1)",
                [format!("key-{i}")],
            )
            .unwrap();
        }
        let observer = crate::sqlite::open(&path).unwrap();
        let (frames, copied) = wal_frames(&observer);
        assert!(frames >= 1_200, "{frames} frames in the WAL");
        assert_eq!(copied, frames, "a passive checkpoint copies every frame");
    }

    #[test]
    fn the_checkpointer_copies_the_wal_into_the_database_file() {
        let (_dir, path, conn) = budget_file();
        let storage = Arc::new(Storage::capture(&path).unwrap());
        conn.execute(
            "INSERT INTO rate_limit_counters (bucket, window_start, count) VALUES ('k', 0, 7)",
            [],
        )
        .unwrap();
        let before = std::fs::metadata(&path).unwrap().len();
        let _checkpoints = Checkpointer::start(&path, storage, Duration::from_millis(1)).unwrap();
        // The database file grows when the row's page is copied into it; wait for
        // that (bounded), not for a guessed time.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::fs::metadata(&path).unwrap().len() == before {
            assert!(std::time::Instant::now() < deadline, "no checkpoint ran");
            std::thread::sleep(Duration::from_millis(5));
        }
        let (frames, copied) = wal_frames(&crate::sqlite::open(&path).unwrap());
        assert_eq!(copied, frames);
    }
}
