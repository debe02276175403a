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

/// The current snapshot and how to refresh it.
pub struct Corpus {
    pool: Pool,
    current: RwLock<Arc<Snapshot>>,
    rebuild: tokio::sync::Mutex<()>,
    /// Counts [`Corpus::current`] calls (candidate fetches of searches).
    fetches: IntCounter,
}

impl Corpus {
    /// An empty snapshot (generation -1) over `pool`; `fetches` counts the
    /// candidate fetches of searches.
    pub fn new(pool: Pool, fetches: IntCounter) -> Self {
        Self {
            pool,
            current: RwLock::new(Arc::new(Snapshot::build(-1, Vec::new()))),
            rebuild: tokio::sync::Mutex::new(()),
            fetches,
        }
    }

    /// Builds the snapshot ahead of the first search; not counted as a fetch.
    pub async fn warm(&self) -> Result<Arc<Snapshot>, DbError> {
        self.refresh().await
    }

    /// The snapshot a fresh fetch would give now: one generation read, plus a full
    /// reload only when the generation moved.
    ///
    /// Errors: the database could not be read.
    pub async fn current(&self) -> Result<Arc<Snapshot>, DbError> {
        self.fetches.inc();
        self.refresh().await
    }

    async fn refresh(&self) -> Result<Arc<Snapshot>, DbError> {
        let generation = db::with_conn(&self.pool, |c| pages::generation(c)).await?;
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
