//! The read side of the Cache actor's LRU: the entries it holds, published for
//! handlers to find without a message, and the uses (hits) they record for it.
//!
//! Why: a cache hit is the most common search answer, and asking the actor for it
//! cost a message, a reply channel and two thread wake-ups — a sixth of a hit's CPU
//! time under load (`scripts/bench.sh`). Entries are immutable once scored, so
//! sharing them is safe; what must stay with one owner is *which* entries exist
//! and their LRU order. So:
//!
//! - only the actor writes the map (a scoring stored, the least recently used
//!   entry evicted), under the write lock, rarely;
//! - a handler reads it under the read lock; on a hit it records the entry's id in
//!   the touch log, and the actor moves those entries to the LRU's recent end, in
//!   the order they were used, before it evicts anything (and whenever the log
//!   grows past [`TOUCH_LOG_FLUSH`]). Eviction therefore picks exactly the entry a
//!   single-owner LRU would have picked;
//! - a miss still goes to the actor ([`super::Lookup`]), which decides joins and
//!   new scorings alone, as before; but a miss that would be refused is answered
//!   here ([`CacheView::busy`]), because the view also publishes the keys being
//!   scored and sees the scorer slots. The actor takes a slot and publishes its
//!   key under the write lock, and publishes a result and ends its key under one
//!   write lock; so a reader holding the read lock that sees no entry, no key
//!   being scored and no free slot saw one instant at which the actor, handling
//!   that lookup, would have answered 503 too. While a [`super::Carry`] is on its
//!   way to the actor (entries may be about to move to the fingerprint the
//!   reader holds), the view does not answer, and the miss asks the actor;
//! - the bytes the entries keep alive ([`CacheBytes`]) are counted as entries are
//!   stored, grow (answers render from them, outside the actor) and are evicted;
//!   a growth past the bound asks the actor to trim, and only then.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

// foldhash (hashbrown's default, randomly seeded per process) rather than SipHash:
// every hit hashes its key here.
use foldhash::{HashMap, HashSet};

use super::entry::{CacheBytes, CacheKey, Entry};
use crate::search::scorer::SlotGauge;

/// Touches logged before a hit asks the actor to apply them (the log's bound under
/// a stream of hits that never evicts).
pub const TOUCH_LOG_FLUSH: usize = 1024;

/// An entry as published: the actor's id for it (its place in the LRU) and the
/// entry (its immutable result and what was attached to it).
#[derive(Debug, Clone)]
pub struct Published {
    pub id: u64,
    pub entry: Arc<Entry>,
}

/// The published entries by key.
pub(super) type Entries = HashMap<CacheKey, Published>;

/// Shared between the Cache actor (writer) and handlers (readers); cheap to clone.
#[derive(Debug, Clone)]
pub struct CacheView {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    shelf: RwLock<Shelf>,
    /// Ids of entries hit since the actor last applied them, oldest first.
    touches: Mutex<Vec<u64>>,
    /// What the published entries keep alive, against the byte bound.
    bytes: Arc<CacheBytes>,
    /// The scorer slots; without them the view never answers a busy 503.
    slots: Option<SlotGauge>,
    /// Carries sent to the actor and not yet applied ([`CacheView::carry_sent`]).
    carries_pending: AtomicUsize,
}

/// What the write lock guards: the published entries and the keys whose scoring
/// runs now (each key exactly while the actor's flight for it lasts).
#[derive(Debug, Default)]
struct Shelf {
    entries: Entries,
    scoring: HashSet<CacheKey>,
}

/// What [`CacheView::hit`] found.
pub struct Hit {
    pub entry: Arc<Entry>,
    /// The touch log reached [`TOUCH_LOG_FLUSH`] with this hit: the caller should
    /// ask the actor to apply it.
    pub flush: bool,
}

impl CacheView {
    /// No entries yet, at most `max_bytes` of them to publish; answers busy
    /// 503s ([`CacheView::busy`]) when given the scorer `slots`.
    pub fn new(max_bytes: usize, slots: Option<SlotGauge>) -> Self {
        Self {
            inner: Arc::new(Inner {
                shelf: RwLock::default(),
                touches: Mutex::default(),
                bytes: Arc::new(CacheBytes::new(max_bytes)),
                slots,
                carries_pending: AtomicUsize::new(0),
            }),
        }
    }

    /// The bytes the published entries keep alive, and their bound.
    pub fn bytes(&self) -> &Arc<CacheBytes> {
        &self.inner.bytes
    }

    /// The entry published for `key`, its use logged for the LRU; `None` when the
    /// actor holds no such entry (a miss: ask the actor).
    pub fn hit(&self, key: &CacheKey) -> Option<Hit> {
        // The use is logged before the read lock is released: an eviction (under
        // the write lock, see `update`) sees every use of what it may remove.
        let shelf = self.read();
        let published = shelf.entries.get(key)?;
        let mut touches = self.touches();
        touches.push(published.id);
        Some(Hit {
            entry: published.entry.clone(),
            flush: touches.len() == TOUCH_LOG_FLUSH,
        })
    }

    /// True when a miss for `key` is answered 503 now, as the actor would answer
    /// it: no entry for `key`, no scoring of `key` to join, every scorer slot
    /// taken, and no carry on its way (see the module docs). Counts the refusal
    /// in the slots' metric. False means: ask the actor ([`super::Lookup`]).
    pub fn busy(&self, key: &CacheKey) -> bool {
        let Some(slots) = &self.inner.slots else {
            return false;
        };
        let shelf = self.read();
        // Read under the read lock: a carry applied is counted down after its
        // update, so a count of zero means every carry sent is in the shelf.
        let busy = self.inner.carries_pending.load(Ordering::Acquire) == 0
            && !shelf.entries.contains_key(key)
            && !shelf.scoring.contains(key)
            && slots.all_taken();
        drop(shelf);
        if busy {
            slots.count_refusal();
        }
        busy
    }

    /// A carry is about to be sent to the actor (call before sending it, and
    /// before the snapshot it moves to is published): until it is applied
    /// ([`CacheView::carry_applied`]) the view answers no busy 503.
    pub fn carry_sent(&self) {
        self.inner.carries_pending.fetch_add(1, Ordering::AcqRel);
    }

    /// A carry sent was applied to the entries (the actor, after its update). A
    /// carry sent without [`CacheView::carry_sent`] (tests) counts nothing.
    pub(super) fn carry_applied(&self) {
        let _ = self
            .inner
            .carries_pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// The entry for `key` without logging a use (the actor's own lookups, which
    /// move it in the LRU themselves).
    pub(super) fn get(&self, key: &CacheKey) -> Option<Published> {
        self.read().entries.get(key).cloned()
    }

    /// Takes a scorer slot with `acquire` and, when it was taken, publishes `key`
    /// as being scored, both under the write lock (a reader sees both or neither).
    pub(super) fn start_scoring<T, E>(
        &self,
        key: &CacheKey,
        acquire: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        let mut shelf = self.write();
        let slot = acquire()?;
        shelf.scoring.insert(key.clone());
        Ok(slot)
    }

    /// [`CacheView::update`], ending the scoring of `key` under the same lock: a
    /// reader sees the key being scored or `change`'s result (the entry stored),
    /// never neither.
    pub(super) fn end_scoring<R>(
        &self,
        key: &CacheKey,
        change: impl FnOnce(&mut HashMap<CacheKey, Published>, Vec<u64>) -> R,
    ) -> R {
        self.locked(|shelf, touches| {
            shelf.scoring.remove(key);
            change(&mut shelf.entries, touches)
        })
    }

    /// Runs `change` on the entries, locked for writing, with the uses logged so
    /// far (taken from the log, oldest first). No hit is between reading an entry
    /// and logging its use meanwhile, so `change` sees every use of the entries it
    /// may remove.
    pub(super) fn update<R>(
        &self,
        change: impl FnOnce(&mut HashMap<CacheKey, Published>, Vec<u64>) -> R,
    ) -> R {
        self.locked(|shelf, touches| change(&mut shelf.entries, touches))
    }

    /// Runs `change` on the shelf, locked for writing, with the uses logged so far.
    fn locked<R>(&self, change: impl FnOnce(&mut Shelf, Vec<u64>) -> R) -> R {
        let mut shelf = self.write();
        let touches = self.take_touches();
        change(&mut shelf, touches)
    }

    /// The logged uses, oldest first, leaving the log empty.
    pub(super) fn take_touches(&self) -> Vec<u64> {
        std::mem::take(&mut *self.touches())
    }

    // A panic while holding a lock cannot leave the map or the log half-changed
    // (each change is one call), so a poisoned lock is used as is.
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Shelf> {
        self.inner.shelf.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Shelf> {
        self.inner.shelf.write().unwrap_or_else(|e| e.into_inner())
    }

    fn touches(&self) -> std::sync::MutexGuard<'_, Vec<u64>> {
        self.inner.touches.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::corpus::Fingerprint;
    use prometheus::IntCounter;
    use tokio::sync::Semaphore;

    fn key(q: &str) -> CacheKey {
        CacheKey {
            match_copy: q.to_owned(),
            fingerprint: Fingerprint([7; 32]),
        }
    }

    /// A view over one scorer slot, with its refusal counter.
    fn one_slot() -> (CacheView, Arc<Semaphore>, IntCounter) {
        let permits = Arc::new(Semaphore::new(1));
        let refused = IntCounter::new("refused", "refusals").unwrap();
        let gauge = SlotGauge::new(permits.clone(), refused.clone());
        (CacheView::new(1 << 20, Some(gauge)), permits, refused)
    }

    #[test]
    fn a_miss_with_every_slot_taken_and_nothing_to_join_is_busy_and_counted() {
        let (view, permits, refused) = one_slot();
        assert!(!view.busy(&key("kubernetes")), "a slot is free");
        let _taken = permits.clone().try_acquire_owned().unwrap();
        assert!(view.busy(&key("kubernetes")));
        assert_eq!(refused.get(), 1);
    }

    #[test]
    fn a_miss_for_a_key_being_scored_is_left_to_the_actor_to_join() {
        let (view, permits, refused) = one_slot();
        let slot = view
            .start_scoring(&key("kubernetes"), || permits.clone().try_acquire_owned())
            .unwrap();
        assert!(!view.busy(&key("kubernetes")), "joins the scoring");
        assert!(view.busy(&key("docker")), "another key has no slot");
        // The scoring ends: its slot is freed, then its key ends with its entry.
        drop(slot);
        view.end_scoring(&key("kubernetes"), |_, _| ());
        let _other = permits.clone().try_acquire_owned().unwrap();
        assert!(view.busy(&key("kubernetes")));
        assert_eq!(refused.get(), 2);
    }

    #[test]
    fn a_slot_that_cannot_be_taken_publishes_no_key() {
        let (view, permits, _) = one_slot();
        let _taken = permits.clone().try_acquire_owned().unwrap();
        let refused =
            view.start_scoring(&key("kubernetes"), || permits.clone().try_acquire_owned());
        assert!(refused.is_err());
        assert!(view.busy(&key("kubernetes")));
    }

    #[test]
    fn no_miss_is_answered_while_a_carry_is_on_its_way() {
        let (view, permits, refused) = one_slot();
        let _taken = permits.clone().try_acquire_owned().unwrap();
        view.carry_sent();
        assert!(
            !view.busy(&key("kubernetes")),
            "the carry may bring its entry"
        );
        view.carry_applied();
        assert!(view.busy(&key("kubernetes")));
        // A carry applied that was never counted leaves the count at zero.
        view.carry_applied();
        assert!(view.busy(&key("kubernetes")));
        assert_eq!(refused.get(), 2);
    }

    #[test]
    fn a_view_without_the_slots_answers_no_miss() {
        let view = CacheView::new(1 << 20, None);
        assert!(!view.busy(&key("kubernetes")));
    }
}
