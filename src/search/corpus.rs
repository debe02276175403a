//! Gate 5's candidate fetch: an in-memory snapshot of the candidate pages, its
//! fingerprint and its ranking index, brought up to date only when the corpus
//! generation moves, and then by the pages that changed.
//!
//! Every budgeted search reads the generation (one row, written by triggers on every
//! change to `pages`, from any process) from the page database, on a read
//! connection of its own, after its budget is spent (the budget lives in another
//! file, so no page write can hold it up; under WAL this read never waits for a
//! writer either). When it matches the snapshot's, the snapshot *is* what a fresh
//! fetch would return, so a request costs the same on 10 pages or 100,000. When it
//! moved, one request reads the change log the same triggers write
//! and applies the changed pages to a new snapshot (rows, fingerprint and the spare
//! index of a left-right pair, off the async worker) while the others wait for it;
//! the snapshot is built from all candidates only at start-up, or when the change
//! log no longer reaches back to the snapshot's generation (it keeps
//! `startup::CHANGES_KEPT` generations).

use std::sync::{Arc, RwLock};

use prometheus::IntCounter;
use sha2::{Digest, Sha256};

use crate::page_store::{Candidate, PageStore, PageStoreError};
use crate::search::rank::RankIndex;

/// The corpus fingerprint: the sum, modulo 2²⁵⁶, of SHA-256(id ‖ version) over the
/// candidates (each pair as two big-endian i64s).
///
/// A sum of per-page digests (an incremental multiset hash) rather than one SHA-256
/// over the ordered list, so that a write updates it in time proportional to the
/// pages it changed: subtract the old pair's digest, add the new one. It keeps the
/// guarantee the cache relies on: ids are never reused and versions only grow, so a
/// candidate set with any page added, removed or changed is a different set of
/// pairs, and a different sum except for a SHA-256 coincidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// The fingerprint of `candidates` (any order).
    pub fn of<'a>(candidates: impl IntoIterator<Item = &'a Candidate>) -> Self {
        let mut sum = Self([0; 32]);
        for c in candidates {
            sum.add(c);
        }
        sum
    }

    fn digest(c: &Candidate) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(c.id.to_be_bytes());
        hasher.update(c.version.to_be_bytes());
        hasher.finalize().into()
    }

    /// Adds `c`'s pair.
    pub fn add(&mut self, c: &Candidate) {
        let d = Self::digest(c);
        let mut carry = 0u16;
        for i in (0..32).rev() {
            let v = u16::from(self.0[i]) + u16::from(d[i]) + carry;
            self.0[i] = v as u8;
            carry = v >> 8;
        }
    }

    /// Takes `c`'s pair away again.
    pub fn remove(&mut self, c: &Candidate) {
        let d = Self::digest(c);
        let mut borrow = 0i16;
        for i in (0..32).rev() {
            let mut v = i16::from(self.0[i]) - i16::from(d[i]) - borrow;
            borrow = 0;
            if v < 0 {
                v += 256;
                borrow = 1;
            }
            self.0[i] = v as u8;
        }
    }
}

/// Applies `changes` to `index` in place: upsert each page that is a candidate now,
/// remove the others (about 20 µs a page at 100,000 titles).
fn update_index(index: &mut RankIndex, changes: &[(i64, Option<Candidate>)]) {
    for (id, row) in changes {
        match row {
            Some(row) => index.upsert(*id, &row.title),
            None => {
                index.remove(*id);
            }
        }
    }
}

/// The candidates at one generation. Immutable; shared as `Arc<Snapshot>`.
pub struct Snapshot {
    pub generation: i64,
    pub fingerprint: Fingerprint,
    /// Sorted by id; rows shared with the snapshots before and after this one.
    pages: Vec<Arc<Candidate>>,
    pub index: RankIndex,
}

impl Snapshot {
    /// Builds the fingerprint and index of `pages`, which must be sorted by id.
    pub fn build(generation: i64, pages: Vec<Candidate>) -> Self {
        debug_assert!(pages.windows(2).all(|w| w[0].id < w[1].id));
        let pages: Vec<Arc<Candidate>> = pages.into_iter().map(Arc::new).collect();
        Self::assemble(
            generation,
            Fingerprint::of(pages.iter().map(|p| &**p)),
            pages,
        )
    }

    fn assemble(generation: i64, fingerprint: Fingerprint, pages: Vec<Arc<Candidate>>) -> Self {
        let index = RankIndex::build(pages.iter().map(|p| (p.id, p.title.as_str())));
        Self {
            generation,
            fingerprint,
            pages,
            index,
        }
    }

    /// This snapshot with `changes` applied (each changed page's id and its
    /// candidate row now, `None` when it is no longer one), at `generation`, its
    /// ranking index being `index`: an index equal to this snapshot's, which
    /// `apply` updates in place. Every part costs the changed pages only (plus a
    /// copy of the row pointers).
    pub fn apply(
        &self,
        generation: i64,
        changes: &[(i64, Option<Candidate>)],
        mut index: RankIndex,
    ) -> Self {
        let mut pages = self.pages.clone();
        let mut fingerprint = self.fingerprint;
        for (id, row) in changes {
            let at = pages.binary_search_by_key(id, |p| p.id);
            if let Ok(at) = at {
                fingerprint.remove(&pages[at]);
            }
            match (at, row) {
                (Ok(at), Some(row)) => pages[at] = Arc::new(row.clone()),
                (Ok(at), None) => {
                    pages.remove(at);
                }
                (Err(at), Some(row)) => pages.insert(at, Arc::new(row.clone())),
                (Err(_), None) => {}
            }
            if let Some(row) = row {
                fingerprint.add(row);
            }
        }
        update_index(&mut index, changes);
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
            .map(|i| &*self.pages[i])
    }

    /// Number of candidates.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }
}

/// The other half of a left-right pair of indexes: the snapshot published before
/// the current one, and the changes it lacks. Once no search holds it any more its
/// index is brought up to date in place and becomes the next snapshot's, so a write
/// never copies the whole index (a copy takes tens of milliseconds at 100,000
/// titles; an update, microseconds a page).
#[derive(Default)]
pub struct Spare {
    previous: Option<Arc<Snapshot>>,
    behind: Vec<(i64, Option<Candidate>)>,
}

impl Spare {
    /// An index equal to `current`'s: the spare's, updated in place, when no
    /// search holds it any more; else a copy of `current`'s.
    fn take_index(&mut self, current: &Snapshot) -> RankIndex {
        let behind = std::mem::take(&mut self.behind);
        match self.previous.take().map(Arc::try_unwrap) {
            Some(Ok(previous)) => {
                let mut index = previous.index;
                update_index(&mut index, &behind);
                index
            }
            _ => current.index.clone(),
        }
    }
}

/// The current snapshot and how to refresh it.
pub struct Corpus {
    /// Where the candidates, the generation and the change log are read.
    store: PageStore,
    /// The store's history ([`PageStore::epoch`]) the current snapshot was built
    /// in: generations of another history say nothing about it (a restored backup,
    /// a failover that lost commits), so a different one means a full reload.
    epoch: std::sync::atomic::AtomicU64,
    current: RwLock<Arc<Snapshot>>,
    /// Held while the snapshot is rebuilt or updated; guards the spare index.
    rebuild: tokio::sync::Mutex<Spare>,
    /// Counts [`Corpus::current`] calls (candidate fetches of searches).
    fetches: IntCounter,
}

impl Corpus {
    /// An empty snapshot (generation -1) of the pages in `store`; `fetches` counts
    /// the candidate fetches of searches.
    pub fn new(store: PageStore, fetches: IntCounter) -> Self {
        Self {
            store,
            epoch: std::sync::atomic::AtomicU64::new(u64::MAX),
            current: RwLock::new(Arc::new(Snapshot::build(-1, Vec::new()))),
            rebuild: tokio::sync::Mutex::new(Spare::default()),
            fetches,
        }
    }

    /// Builds the snapshot ahead of the first search; not counted as a fetch.
    pub async fn warm(&self) -> Result<Arc<Snapshot>, PageStoreError> {
        self.refresh().await
    }

    /// The snapshot a fresh fetch would give now: the generation read now, plus a
    /// reload only when it moved.
    ///
    /// Errors: the page store could not be read.
    pub async fn current(&self) -> Result<Arc<Snapshot>, PageStoreError> {
        self.fetches.inc();
        self.refresh().await
    }

    async fn refresh(&self) -> Result<Arc<Snapshot>, PageStoreError> {
        use std::sync::atomic::Ordering;
        let generation = self.store.generation().await?;
        // Read after the generation, which it belongs to.
        let epoch = self.store.epoch();
        let same_history = || self.epoch.load(Ordering::Acquire) == epoch;
        if same_history() {
            if let Some(s) = self.at_least(generation) {
                return Ok(s);
            }
        }
        // One rebuild at a time; the others find its result when they get the lock.
        let mut guard = self.rebuild.lock().await;
        if same_history() {
            if let Some(s) = self.at_least(generation) {
                return Ok(s);
            }
        }
        let base = self.peek();
        let since = base.generation;
        let changed = if since >= 0 && same_history() {
            self.store.changes_since(since).await?
        } else {
            None
        };
        let snapshot = match changed {
            Some((generation, changes)) => {
                let started = std::time::Instant::now();
                let n = changes.len();
                let mut spare = std::mem::take(&mut *guard);
                // CPU work: off the async worker, which serves other requests meanwhile.
                let (snapshot, spare) = tokio::task::spawn_blocking(move || {
                    let index = spare.take_index(&base);
                    let next = Arc::new(base.apply(generation, &changes, index));
                    spare.previous = Some(base);
                    spare.behind = changes;
                    (next, spare)
                })
                .await
                .map_err(|e| PageStoreError::Failed(format!("applying corpus changes: {e}")))?;
                *guard = spare;
                tracing::debug!(
                    generation,
                    changed = n,
                    ms = started.elapsed().as_secs_f64() * 1000.0,
                    "applied changes to the candidate snapshot"
                );
                snapshot
            }
            None => {
                *guard = Spare::default();
                let (generation, list) = self.store.candidates().await?;
                // CPU work (the index of every title): off the async worker.
                let snapshot = tokio::task::spawn_blocking(move || {
                    Arc::new(Snapshot::build(generation, list))
                })
                .await
                .map_err(|e| PageStoreError::Failed(format!("building the snapshot: {e}")))?;
                self.epoch.store(epoch, Ordering::Release);
                tracing::info!(
                    generation = snapshot.generation,
                    candidates = snapshot.len(),
                    "built the candidate snapshot"
                );
                snapshot
            }
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn page(id: i64, version: i64, title: &str) -> Candidate {
        Candidate {
            id,
            version,
            slug: format!("p{id}"),
            title: title.to_owned(),
            updated_at: 0,
        }
    }

    #[test]
    fn applying_changes_gives_the_snapshot_a_fresh_build_would_give() {
        let before = Snapshot::build(
            5,
            vec![
                page(1, 1, "Kubernetes container orchestration"),
                page(2, 1, "Go programming language compiler"),
                page(4, 3, "Vi IMproved"),
            ],
        );
        let after = before.apply(
            9,
            &[
                (2, Some(page(2, 2, "Go compiler, renamed"))),
                (3, Some(page(3, 1, "Persistent key-value database"))),
                (4, None),
                (7, None),
            ],
            before.index.clone(),
        );
        let fresh = Snapshot::build(
            9,
            vec![
                page(1, 1, "Kubernetes container orchestration"),
                page(2, 2, "Go compiler, renamed"),
                page(3, 1, "Persistent key-value database"),
            ],
        );
        assert_eq!(after.fingerprint, fresh.fingerprint);
        assert_eq!(after.generation, 9);
        let ids = |s: &Snapshot| {
            s.pages
                .iter()
                .map(|p| (p.id, p.version))
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&after), ids(&fresh));
        assert_eq!(after.page(2).unwrap().title, "Go compiler, renamed");
        assert!(after.page(4).is_none());
        assert_ne!(after.fingerprint, before.fingerprint);
        let rank = |s: &Snapshot, q: &str| {
            crate::search::rank::rank(&s.index, q, 10)
                .rows
                .iter()
                .map(|r| (r.page_id, r.score.to_bits()))
                .collect::<Vec<_>>()
        };
        for q in [
            "go compiler",
            "persistent database",
            "vi improved",
            "kubernetes",
        ] {
            assert_eq!(rank(&after, q), rank(&fresh, q), "{q}");
        }
    }

    #[test]
    fn the_fingerprint_moves_with_any_version_and_returns_when_undone() {
        let a = page(1, 1, "A");
        let mut f = Fingerprint::of([&a]);
        let start = f;
        f.remove(&a);
        f.add(&page(1, 2, "A"));
        assert_ne!(f, start);
        f.remove(&page(1, 2, "A"));
        f.add(&a);
        assert_eq!(f, start);
        assert_eq!(Fingerprint::of([]), Fingerprint([0; 32]));
    }
}
