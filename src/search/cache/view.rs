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
//! - a miss still goes to the actor ([`super::Lookup`]), which decides
//!   joins, new scorings and 503s alone, as before;
//! - the bytes the entries keep alive ([`CacheBytes`]) are counted as entries are
//!   stored, grow (answers render from them, outside the actor) and are evicted;
//!   a growth past the bound asks the actor to trim, and only then.

use std::sync::{Arc, Mutex, RwLock};

// foldhash (hashbrown's default, randomly seeded per process) rather than SipHash:
// every hit hashes its key here.
use foldhash::HashMap;

use super::entry::{CacheBytes, CacheKey, Entry};

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
    entries: RwLock<HashMap<CacheKey, Published>>,
    /// Ids of entries hit since the actor last applied them, oldest first.
    touches: Mutex<Vec<u64>>,
    /// What the published entries keep alive, against the byte bound.
    bytes: Arc<CacheBytes>,
}

/// What [`CacheView::hit`] found.
pub struct Hit {
    pub entry: Arc<Entry>,
    /// The touch log reached [`TOUCH_LOG_FLUSH`] with this hit: the caller should
    /// ask the actor to apply it.
    pub flush: bool,
}

impl CacheView {
    /// No entries yet, at most `max_bytes` of them to publish.
    pub fn new(max_bytes: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                entries: RwLock::default(),
                touches: Mutex::default(),
                bytes: Arc::new(CacheBytes::new(max_bytes)),
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
        let entries = self.read();
        let published = entries.get(key)?;
        let mut touches = self.touches();
        touches.push(published.id);
        Some(Hit {
            entry: published.entry.clone(),
            flush: touches.len() == TOUCH_LOG_FLUSH,
        })
    }

    /// The entry for `key` without logging a use (the actor's own lookups, which
    /// move it in the LRU themselves).
    pub(super) fn get(&self, key: &CacheKey) -> Option<Published> {
        self.read().get(key).cloned()
    }

    /// Runs `change` on the entries, locked for writing, with the uses logged so
    /// far (taken from the log, oldest first). No hit is between reading an entry
    /// and logging its use meanwhile, so `change` sees every use of the entries it
    /// may remove.
    pub(super) fn update<R>(
        &self,
        change: impl FnOnce(&mut HashMap<CacheKey, Published>, Vec<u64>) -> R,
    ) -> R {
        let mut entries = self.write();
        let touches = self.take_touches();
        change(&mut entries, touches)
    }

    /// The logged uses, oldest first, leaving the log empty.
    pub(super) fn take_touches(&self) -> Vec<u64> {
        std::mem::take(&mut *self.touches())
    }

    // A panic while holding a lock cannot leave the map or the log half-changed
    // (each change is one call), so a poisoned lock is used as is.
    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<CacheKey, Published>> {
        self.inner.entries.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<CacheKey, Published>> {
        self.inner
            .entries
            .write()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn touches(&self) -> std::sync::MutexGuard<'_, Vec<u64>> {
        self.inner.touches.lock().unwrap_or_else(|e| e.into_inner())
    }
}
