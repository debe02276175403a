//! Gate 5's candidate fetch: an in-memory snapshot of the candidate pages, its
//! fingerprint and its ranking index, rebuilt only when the corpus generation moves.
//!
//! Every budgeted search reads the generation (one row, written by triggers on every
//! change to `pages`, from any process). When it matches the snapshot's, the snapshot
//! *is* what a fresh fetch would return, so a request costs the same on 10 pages or
//! 100,000; when it moved, one request rebuilds while the others wait for it.

use std::sync::{Arc, RwLock};

use deadpool_sqlite::Pool;
use prometheus::IntCounter;
use sha2::{Digest, Sha256};

use crate::db::{self, pages, pages::Candidate, DbError};
use crate::search::rank::RankIndex;

/// SHA-256 over the ordered `(id, current_version)` list of the candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// Each pair is hashed as two big-endian i64s, in id order.
    pub fn of(candidates: &[Candidate]) -> Self {
        let mut hasher = Sha256::new();
        for c in candidates {
            hasher.update(c.id.to_be_bytes());
            hasher.update(c.version.to_be_bytes());
        }
        Self(hasher.finalize().into())
    }
}

/// The candidates at one generation. Immutable; shared as `Arc<Snapshot>`.
pub struct Snapshot {
    pub generation: i64,
    pub fingerprint: Fingerprint,
    /// Sorted by id.
    pages: Vec<Candidate>,
    pub index: RankIndex,
}

impl Snapshot {
    /// Builds the fingerprint and index of `pages`, which must be sorted by id.
    pub fn build(generation: i64, pages: Vec<Candidate>) -> Self {
        debug_assert!(pages.windows(2).all(|w| w[0].id < w[1].id));
        let fingerprint = Fingerprint::of(&pages);
        let index = RankIndex::build(pages.iter().map(|p| (p.id, p.title.as_str())));
        Self {
            generation,
            fingerprint,
            pages,
            index,
        }
    }

    /// The candidate with this id, if it is one at this generation.
    pub fn page(&self, id: i64) -> Option<&Candidate> {
        self.pages
            .binary_search_by_key(&id, |p| p.id)
            .ok()
            .map(|i| &self.pages[i])
    }

    /// Number of candidates.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }
}

/// Longest wait of the dedicated generation reader for a lock (only a checkpoint
/// or recovery can make a WAL reader wait) before the pool is asked instead.
const GENERATION_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(20);

/// The current snapshot and how to refresh it.
pub struct Corpus {
    pool: Pool,
    /// A read connection of its own for the one-row generation read every budgeted
    /// search makes, done on the calling thread: under WAL a reader never waits
    /// for a writer, and a pool round trip (a blocking-thread hop) cost more than
    /// the read. `None` when it could not be opened; then the pool is used.
    generation_conn: Option<std::sync::Mutex<rusqlite::Connection>>,
    current: RwLock<Arc<Snapshot>>,
    rebuild: tokio::sync::Mutex<()>,
    /// Counts [`Corpus::current`] calls (candidate fetches of searches).
    fetches: IntCounter,
}

impl Corpus {
    /// An empty snapshot (generation -1) over `pool`, whose database is at `path`;
    /// `fetches` counts the candidate fetches of searches.
    pub fn new(pool: Pool, path: &std::path::Path, fetches: IntCounter) -> Self {
        let generation_conn = db::open_reader(path, GENERATION_READ_TIMEOUT)
            .map_err(|e| tracing::warn!(error = %e, "no dedicated generation reader"))
            .ok()
            .map(std::sync::Mutex::new);
        Self {
            pool,
            generation_conn,
            current: RwLock::new(Arc::new(Snapshot::build(-1, Vec::new()))),
            rebuild: tokio::sync::Mutex::new(()),
            fetches,
        }
    }

    /// Builds the snapshot ahead of the first search; not counted as a fetch.
    pub async fn warm(&self) -> Result<Arc<Snapshot>, DbError> {
        self.refresh(None).await
    }

    /// The snapshot a fresh fetch would give now: the generation (`generation` when
    /// the caller read it moments ago, in its budget transaction; else read now),
    /// plus a reload only when it moved.
    ///
    /// Errors: the database could not be read.
    pub async fn current(&self, generation: Option<i64>) -> Result<Arc<Snapshot>, DbError> {
        self.fetches.inc();
        self.refresh(generation).await
    }

    /// The corpus generation now: on the dedicated reader when it answers, else
    /// through the pool.
    async fn generation(&self) -> Result<i64, DbError> {
        if let Some(conn) = &self.generation_conn {
            let read = conn
                .lock()
                .map_err(|_| ())
                .and_then(|c| pages::generation(&c).map_err(|_| ()));
            if let Ok(generation) = read {
                return Ok(generation);
            }
        }
        db::with_conn(&self.pool, |c| pages::generation(c)).await
    }

    async fn refresh(&self, known: Option<i64>) -> Result<Arc<Snapshot>, DbError> {
        let generation = match known {
            Some(generation) => generation,
            None => self.generation().await?,
        };
        if let Some(s) = self.at_least(generation) {
            return Ok(s);
        }
        // One rebuild at a time; the others find its result when they get the lock.
        let _guard = self.rebuild.lock().await;
        if let Some(s) = self.at_least(generation) {
            return Ok(s);
        }
        let snapshot = db::with_conn(&self.pool, |c| {
            let (generation, list) = pages::candidates(c)?;
            Ok(Arc::new(Snapshot::build(generation, list)))
        })
        .await?;
        tracing::info!(
            generation = snapshot.generation,
            candidates = snapshot.len(),
            "rebuilt the candidate snapshot"
        );
        *self.current.write().expect("snapshot lock poisoned") = snapshot.clone();
        Ok(snapshot)
    }

    /// The snapshot held now, without reading the database (for metrics).
    pub fn peek(&self) -> Arc<Snapshot> {
        self.current.read().expect("snapshot lock poisoned").clone()
    }

    fn at_least(&self, generation: i64) -> Option<Arc<Snapshot>> {
        let s = self.current.read().expect("snapshot lock poisoned");
        (s.generation >= generation).then(|| s.clone())
    }
}
