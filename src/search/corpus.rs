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
use crate::search::rank::{IndexBuilder, RankIndex};
use crate::search::rows::{CandidateRef, Rows};

/// The corpus fingerprint: the sum, modulo 2²⁵⁶, of SHA-256(id ‖ version) over the
/// candidates (each pair as two big-endian i64s).
///
/// A sum of per-page digests (an incremental multiset hash) rather than one SHA-256
/// over the ordered list, so that a write updates it in time proportional to the
/// pages it changed: subtract the old pair's digest, add the new one. It keeps the
/// guarantee the cache relies on: ids are never reused and versions only grow, so a
/// candidate set with any page added, removed or changed is a different set of
/// pairs, and a different sum except for a SHA-256 coincidence.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
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

    fn digest(id: i64, version: i64) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(id.to_be_bytes());
        hasher.update(version.to_be_bytes());
        hasher.finalize().into()
    }

    /// Adds `c`'s pair.
    pub fn add(&mut self, c: &Candidate) {
        self.add_pair(c.id, c.version);
    }

    /// Adds the pair `(id, version)`.
    pub fn add_pair(&mut self, id: i64, version: i64) {
        self.add_digest(Self::digest(id, version), 1);
    }

    /// Takes `c`'s pair away again.
    pub fn remove(&mut self, c: &Candidate) {
        self.remove_pair(c.id, c.version);
    }

    /// Takes the pair `(id, version)` away again.
    pub fn remove_pair(&mut self, id: i64, version: i64) {
        self.add_digest(Self::digest(id, version), -1);
    }

    /// Adds `sign` (1 or -1) times `d`, modulo 2²⁵⁶: byte by byte from the least
    /// significant, the carry (or, taking away, the borrow: -1) into the next.
    fn add_digest(&mut self, d: [u8; 32], sign: i16) {
        let mut carry = 0i16;
        for i in (0..32).rev() {
            let v = i16::from(self.0[i]) + sign * i16::from(d[i]) + carry;
            self.0[i] = v.rem_euclid(256) as u8;
            carry = v.div_euclid(256);
        }
    }
}

/// The candidates at one generation. Immutable; shared as `Arc<Snapshot>`.
///
/// Its parts share storage with the snapshots before and after it (see
/// [`crate::search::chunked`]): [`Snapshot::apply`] makes the next one as a
/// copy of this one's chunk pointers with the changed pages written in, so a
/// write costs its own pages, whether or not a scoring still reads this one.
pub struct Snapshot {
    pub generation: i64,
    pub fingerprint: Fingerprint,
    /// Each candidate's row, at its slot in `index`.
    rows: Rows,
    pub index: RankIndex,
}

impl Snapshot {
    /// Builds the fingerprint and index of `pages`, which must be sorted by id.
    pub fn build(generation: i64, pages: Vec<Candidate>) -> Self {
        let mut builder = SnapshotBuilder::default();
        for page in &pages {
            builder.push(page.borrowed());
        }
        builder.finish(generation)
    }

    /// This snapshot with `changes` applied (each changed page's id and its
    /// candidate row now, `None` when it is no longer one), at `generation`.
    /// Costs the changed pages (their words' postings, their rows) plus a copy
    /// of the chunk pointers; this snapshot is left as it was.
    pub fn apply(&self, generation: i64, changes: &[(i64, Option<Candidate>)]) -> Self {
        let mut index = self.index.clone();
        let mut rows = self.rows.clone();
        let mut fingerprint = self.fingerprint;
        for (id, row) in changes {
            if let Some(slot) = index.slot(*id) {
                if let Some(old) = rows.get(slot as usize, *id) {
                    fingerprint.remove_pair(old.id, old.version);
                }
                if row.is_none() {
                    index.remove(*id);
                    rows.clear(slot as usize);
                }
            }
            if let Some(row) = row {
                index.upsert(*id, &row.title);
                let slot = index.slot(*id).expect("just upserted") as usize;
                rows.set(slot, row.borrowed());
                fingerprint.add(row);
            }
        }
        Self {
            generation,
            fingerprint,
            rows,
            index,
        }
    }

    /// The candidate with this id, if it is one at this generation.
    pub fn page(&self, id: i64) -> Option<CandidateRef<'_>> {
        let slot = self.index.slot(id)?;
        self.rows.get(slot as usize, id)
    }

    /// Approximate heap bytes of the rows and the index (storage shared with
    /// other snapshots counted as this one's).
    pub fn heap_bytes(&self) -> usize {
        self.rows.heap_bytes() + self.index.heap_bytes()
    }

    /// Number of candidates.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

/// How the corpus moved from one snapshot to the next by a known set of changed
/// pages: what the result cache needs to carry its entries across the move
/// (`search::cache::carry`), without holding either snapshot.
#[derive(Debug, Clone)]
pub struct Move {
    /// The fingerprint before and after.
    pub from: Fingerprint,
    pub to: Fingerprint,
    /// The number of candidates before and after (word rarity is measured against
    /// their size class, `rank::size_class`).
    pub len_from: usize,
    pub len_to: usize,
    /// Every changed page: its id and its title before the move and after it
    /// (`None` where it is no candidate: new, or gone), each page once.
    pub changed: Vec<ChangedTitle>,
}

/// One page a [`Move`] changed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ChangedTitle {
    pub page_id: i64,
    pub before: Option<String>,
    pub after: Option<String>,
}

impl Move {
    /// The move from `before` to `after`, which is `before` with `changes`
    /// applied ([`Snapshot::apply`]).
    pub fn of(before: &Snapshot, after: &Snapshot, changes: &[(i64, Option<Candidate>)]) -> Self {
        let changed = changes
            .iter()
            .map(|(id, row)| ChangedTitle {
                page_id: *id,
                before: before.page(*id).map(|old| old.title.to_owned()),
                after: row.as_ref().map(|new| new.title.clone()),
            })
            .collect();
        Self {
            from: before.fingerprint,
            to: after.fingerprint,
            len_from: before.len(),
            len_to: after.len(),
            changed,
        }
    }
}

/// Changed pages at most for which a move is told to the observer set with
/// [`Corpus::on_move`] (a longer batch, an import, leaves the cache to refill).
pub const MOVE_MAX_CHANGES: usize = 64;

/// Builds a [`Snapshot`] one candidate at a time, as the rows are read: the
/// whole table is never held as `Candidate`s (at a million pages those were
/// twice the snapshot's own size).
///
/// Two threads share the work: the caller's (reading the rows) keeps the rows
/// and the fingerprint and copies each title into a batch; a thread of the
/// builder's own indexes the batches as they come (normalizing and interning
/// the words, half the start-up time at a million pages). Slots are still
/// given in the order of the pushes.
#[derive(Debug, Default)]
pub struct SnapshotBuilder {
    rows: Rows,
    fingerprint: Fingerprint,
    /// Titles not yet handed to the indexing thread.
    batch: TitleBatch,
    /// The indexing thread (started with the first full batch) and its queue.
    indexer: Option<Indexer>,
}

/// Titles per batch handed to the indexing thread.
// Tiny in unit tests, so that their snapshots are indexed on the thread too.
const TITLE_BATCH: usize = if cfg!(test) { 3 } else { 4096 };
/// Batches queued for the indexing thread before the reader waits for it.
const BATCHES_QUEUED: usize = 16;

/// Page ids and titles, back to back.
#[derive(Debug, Default)]
struct TitleBatch {
    ids: Vec<i64>,
    text: String,
    ends: Vec<usize>,
}

impl TitleBatch {
    fn push(&mut self, id: i64, title: &str) {
        self.ids.push(id);
        self.text.push_str(title);
        self.ends.push(self.text.len());
    }

    fn index_into(&self, index: &mut IndexBuilder) {
        let mut start = 0;
        for (&id, &end) in self.ids.iter().zip(&self.ends) {
            index.push(id, &self.text[start..end]);
            start = end;
        }
    }
}

#[derive(Debug)]
struct Indexer {
    queue: std::sync::mpsc::SyncSender<TitleBatch>,
    thread: std::thread::JoinHandle<IndexBuilder>,
}

impl Indexer {
    fn start() -> Self {
        let (queue, batches) = std::sync::mpsc::sync_channel::<TitleBatch>(BATCHES_QUEUED);
        let thread = std::thread::Builder::new()
            .name("snapshot-index".into())
            .spawn(move || {
                let mut index = IndexBuilder::default();
                for batch in batches {
                    batch.index_into(&mut index);
                }
                index
            })
            .expect("starting the snapshot's indexing thread");
        Self { queue, thread }
    }

    /// The index of every batch sent, once the thread is done.
    fn finish(self) -> IndexBuilder {
        drop(self.queue);
        self.thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

impl SnapshotBuilder {
    /// Adds `c`; candidates must come in increasing id order.
    pub fn push(&mut self, c: CandidateRef<'_>) {
        self.rows.set(self.rows.len(), c);
        self.fingerprint.add_pair(c.id, c.version);
        self.batch.push(c.id, c.title);
        if self.batch.ids.len() >= TITLE_BATCH {
            let batch = std::mem::take(&mut self.batch);
            let indexer = self.indexer.get_or_insert_with(Indexer::start);
            if indexer.queue.send(batch).is_err() {
                // The thread is gone (it panicked): `finish` says why.
                let indexer = self.indexer.take().expect("just used");
                indexer.finish();
            }
        }
    }

    /// The snapshot of every candidate pushed, at `generation`.
    pub fn finish(self, generation: i64) -> Snapshot {
        let SnapshotBuilder {
            mut rows,
            fingerprint,
            batch,
            indexer,
        } = self;
        let mut index = indexer.map(Indexer::finish).unwrap_or_default();
        batch.index_into(&mut index);
        // The index's last steps on this thread while the rows' slack is given
        // back on another.
        let (index, rows) = std::thread::scope(|scope| {
            let shrunk = scope.spawn(move || {
                rows.shrink_to_fit();
                rows
            });
            let index = index.finish();
            let rows = shrunk
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (index, rows)
        });
        Snapshot {
            generation,
            fingerprint,
            rows,
            // Slots are given in the order of the pushes, as the rows were kept.
            index,
        }
    }
}

/// Changes applied on the calling (async) thread; a longer batch is applied on a
/// blocking thread.
const INLINE_CHANGES: usize = 64;
const _: () = assert!(MOVE_MAX_CHANGES <= INLINE_CHANGES);

/// The current snapshot and how to refresh it.
pub struct Corpus {
    /// Where the candidates, the generation and the change log are read.
    store: PageStore,
    /// The store's history ([`PageStore::epoch`]) the current snapshot was built
    /// in: generations of another history say nothing about it (a restored backup,
    /// a failover that lost commits), so a different one means a full reload.
    epoch: std::sync::atomic::AtomicU64,
    /// How many times the history changed under a snapshot of this process (mixed
    /// into every fingerprint built after, see [`Corpus::current`]).
    histories: std::sync::atomic::AtomicU64,
    current: RwLock<Arc<Snapshot>>,
    /// Held while the snapshot is rebuilt or updated.
    rebuild: tokio::sync::Mutex<()>,
    /// Counts [`Corpus::current`] calls (candidate fetches of searches).
    fetches: IntCounter,
    /// Told of every move by at most [`MOVE_MAX_CHANGES`] changed pages, before
    /// the new snapshot is published (see [`Corpus::on_move`]).
    on_move: std::sync::OnceLock<Box<dyn Fn(Move) + Send + Sync>>,
}

impl Corpus {
    /// An empty snapshot (generation -1) of the pages in `store`; `fetches` counts
    /// the candidate fetches of searches.
    pub fn new(store: PageStore, fetches: IntCounter) -> Self {
        Self {
            store,
            epoch: std::sync::atomic::AtomicU64::new(u64::MAX),
            histories: std::sync::atomic::AtomicU64::new(0),
            current: RwLock::new(Arc::new(Snapshot::build(-1, Vec::new()))),
            rebuild: tokio::sync::Mutex::new(()),
            fetches,
            on_move: std::sync::OnceLock::new(),
        }
    }

    /// Sets what is told of each move of the snapshot by a known set of at most
    /// [`MOVE_MAX_CHANGES`] changed pages (the result cache carries its entries
    /// across it). Called before the new snapshot is published, under the rebuild
    /// lock, so it sees the moves one at a time and in order; it must not block.
    /// A second call is ignored.
    pub fn on_move(&self, observer: impl Fn(Move) + Send + Sync + 'static) {
        let _ = self.on_move.set(Box::new(observer));
    }

    /// Builds the snapshot ahead of the first search; not counted as a fetch.
    pub async fn warm(&self) -> Result<Arc<Snapshot>, PageStoreError> {
        self.refresh(None).await
    }

    /// The snapshot a fresh fetch would give now: the generation (`known` when the
    /// caller read it moments ago, in its budget transaction on the pages' own
    /// database; else read now), plus a reload only when it moved.
    ///
    /// Errors: the page store could not be read.
    pub async fn current(&self, known: Option<i64>) -> Result<Arc<Snapshot>, PageStoreError> {
        self.fetches.inc();
        self.refresh(known).await
    }

    async fn refresh(&self, known: Option<i64>) -> Result<Arc<Snapshot>, PageStoreError> {
        use std::sync::atomic::Ordering;
        let generation = match known {
            Some(generation) => generation,
            None => self.store.generation().await?,
        };
        // Read after the generation, which it belongs to.
        let mut epoch = self.store.epoch();
        let same_history = |epoch: u64| self.epoch.load(Ordering::Acquire) == epoch;
        if same_history(epoch) {
            if let Some(s) = self.exactly(generation) {
                return Ok(s);
            }
        }
        // One rebuild at a time; the others find its result when they get the lock.
        let _guard = self.rebuild.lock().await;
        let base = self.peek();
        let mut generation = generation;
        if same_history(epoch) && base.generation > generation {
            // Behind the snapshot: a read that raced the one the snapshot came from,
            // or a history that went back (Issue 31 §1). A read that starts now
            // tells which: within one history it is at least the snapshot's.
            generation = self.store.generation().await?;
            epoch = self.store.epoch();
        }
        if same_history(epoch) && base.generation == generation {
            return Ok(base);
        }
        let since = base.generation;
        // Generations of another history, or lower than the snapshot's, say nothing
        // about what changed since it: a full rebuild.
        let new_history = since >= 0 && (!same_history(epoch) || generation < since);
        let changed = if since >= 0 && !new_history {
            self.store.changes_since(since).await?
        } else {
            None
        };
        if new_history {
            // Ids and versions may repeat in the new history (a restored identity
            // gives the removed pages' ids again), so the fingerprint of the
            // rebuilt snapshot carries how many histories this process has seen:
            // no cached answer of an earlier one is found under it.
            self.histories.fetch_add(1, Ordering::AcqRel);
            tracing::warn!(
                generation,
                since,
                "the page store's history changed: rebuilding the candidate snapshot in full"
            );
        }
        let histories = self.histories.load(Ordering::Acquire);
        let snapshot = match changed {
            Some((generation, changes)) => {
                let started = std::time::Instant::now();
                let n = changes.len();
                // A few pages cost microseconds: applied here. A long batch (an
                // import by another process) is CPU work for off the async
                // worker, which serves other requests meanwhile.
                let snapshot = if n <= INLINE_CHANGES {
                    let snapshot = Arc::new(base.apply(generation, &changes));
                    if n <= MOVE_MAX_CHANGES {
                        if let Some(observer) = self.on_move.get() {
                            observer(Move::of(&base, &snapshot, &changes));
                        }
                    }
                    snapshot
                } else {
                    tokio::task::spawn_blocking(move || Arc::new(base.apply(generation, &changes)))
                        .await
                        .map_err(|e| {
                            PageStoreError::Failed(format!("applying corpus changes: {e}"))
                        })?
                };
                tracing::debug!(
                    generation,
                    changed = n,
                    ms = started.elapsed().as_secs_f64() * 1000.0,
                    "applied changes to the candidate snapshot"
                );
                snapshot
            }
            None => {
                let started = std::time::Instant::now();
                // Built as the store reads the rows (on a blocking thread): the
                // whole table is never held as `Candidate`s.
                let builder = Arc::new(std::sync::Mutex::new(SnapshotBuilder::default()));
                let sink = builder.clone();
                let generation = self
                    .store
                    .each_candidate(Box::new(move |row| {
                        sink.lock().expect("snapshot builder poisoned").push(row)
                    }))
                    .await?;
                let builder = Arc::try_unwrap(builder)
                    .map_err(|_| {
                        PageStoreError::Failed("the snapshot builder is still held".into())
                    })?
                    .into_inner()
                    .expect("snapshot builder poisoned");
                // CPU work (the index's last steps): off the async worker, on a
                // thread that ends with it, so its scratch goes back to the system.
                let snapshot = tokio::task::spawn_blocking(move || {
                    std::thread::spawn(move || {
                        let mut snapshot = builder.finish(generation);
                        if histories > 0 {
                            // Ids are positive: no page's pair.
                            snapshot.fingerprint.add_pair(-1, histories as i64);
                        }
                        Arc::new(snapshot)
                    })
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .await
                .map_err(|e| PageStoreError::Failed(format!("building the snapshot: {e}")))?;
                tracing::info!(
                    generation = snapshot.generation,
                    candidates = snapshot.len(),
                    heap_mb = (snapshot.heap_bytes() as f64 / 1e6).round(),
                    ms = started.elapsed().as_millis() as u64,
                    "built the candidate snapshot"
                );
                snapshot
            }
        };
        *self.current.write().expect("snapshot lock poisoned") = snapshot.clone();
        // After the snapshot, never before: a search that finds this history must
        // find the snapshot built from it, not the old one of another history.
        self.epoch.store(epoch, Ordering::Release);
        Ok(snapshot)
    }

    /// The snapshot held now if it is at `generation`.
    fn exactly(&self, generation: i64) -> Option<Arc<Snapshot>> {
        let s = self.current.read().expect("snapshot lock poisoned");
        (s.generation == generation).then(|| s.clone())
    }

    /// The snapshot held now, without reading the database (for metrics).
    pub fn peek(&self) -> Arc<Snapshot> {
        self.current.read().expect("snapshot lock poisoned").clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::testing::page;

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
            (0..10)
                .filter_map(|id| s.page(id))
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

    /// The scorings of one query over `s`, as (page id, score bits).
    fn ranking(s: &Snapshot, q: &str) -> Vec<(i64, u32)> {
        crate::search::rank::rank(&s.index, q, usize::MAX)
            .rows
            .iter()
            .map(|r| (r.page_id, r.score.to_bits()))
            .collect()
    }

    #[test]
    fn a_write_while_a_scoring_reads_the_snapshot_leaves_that_snapshot_as_it_was() {
        let words = [
            "data", "tool", "for", "parser", "json", "fast", "client", "rest",
        ];
        let title = |i: usize| {
            (0..1 + i % 4)
                .map(|k| words[(i * 7 + k * 3) % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        };
        let pages: Vec<Candidate> = (1..=400).map(|i| page(i, 1, &title(i as usize))).collect();
        let before = Arc::new(Snapshot::build(1, pages.clone()));
        let queries = ["data tool", "json parsre", "fast", "rest client for"];
        let expected: Vec<_> = queries.iter().map(|q| ranking(&before, q)).collect();
        // Every second page changes, every fifth goes, and 100 are new.
        let changes: Vec<(i64, Option<Candidate>)> = (1..=500)
            .filter(|i| i % 2 == 0 || i % 5 == 0 || *i > 400)
            .map(|i| {
                let row = (i % 5 != 0).then(|| page(i, 2, &title(i as usize + 1)));
                (i, row)
            })
            .collect();
        let after = std::thread::scope(|scope| {
            // Scorings read `before` on another thread while the write lands.
            let reader = scope.spawn(|| {
                for _ in 0..20 {
                    for (q, want) in queries.iter().zip(&expected) {
                        assert_eq!(&ranking(&before, q), want, "{q}");
                    }
                }
            });
            let after = before.apply(2, &changes);
            reader
                .join()
                .expect("the reader saw the snapshot it started with");
            after
        });
        for (q, want) in queries.iter().zip(&expected) {
            assert_eq!(&ranking(&before, q), want, "{q} after the write");
        }
        let mut now: std::collections::BTreeMap<i64, Candidate> =
            pages.into_iter().map(|p| (p.id, p)).collect();
        for (id, row) in &changes {
            match row {
                Some(row) => now.insert(*id, row.clone()),
                None => now.remove(id),
            };
        }
        let fresh = Snapshot::build(2, now.into_values().collect());
        assert_eq!(after.fingerprint, fresh.fingerprint);
        assert_eq!(after.len(), fresh.len());
        for q in queries {
            assert_eq!(ranking(&after, q), ranking(&fresh, q), "{q}");
        }
        assert_eq!(before.len(), 400);
        assert_eq!(before.page(2).map(|p| p.version), Some(1));
        assert_eq!(after.page(2).map(|p| p.version), Some(2));
        assert!(after.page(5).is_none() && before.page(5).is_some());
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
