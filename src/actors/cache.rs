//! The Cache actor: owns the LRU of immutable search results, keyed by
//! (match copy, corpus fingerprint).

use std::sync::Arc;

use actix::{Actor, Context, Handler, Message, MessageResult};
use hashlink::LruCache;

use crate::search::corpus::Fingerprint;
use crate::search::rank::SearchResult;

/// A cache key: the normalized query and the fingerprint of the corpus it was scored
/// over. A change to any candidate's id set or version changes the fingerprint, so a
/// stale result can never be found.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    pub match_copy: String,
    pub fingerprint: Fingerprint,
}

/// Look a result up (and mark it most recently used).
pub struct Get(pub CacheKey);

impl Message for Get {
    type Result = Option<Arc<SearchResult>>;
}

/// Store a finished scoring's result.
pub struct Put(pub CacheKey, pub Arc<SearchResult>);

impl Message for Put {
    type Result = ();
}

/// Number of entries held.
pub struct Len;

impl Message for Len {
    type Result = usize;
}

pub struct Cache {
    lru: LruCache<CacheKey, Arc<SearchResult>>,
}

impl Cache {
    /// An empty cache of `capacity` entries (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            lru: LruCache::new(capacity.max(1)),
        }
    }
}

impl Actor for Cache {
    type Context = Context<Self>;
}

impl Handler<Get> for Cache {
    type Result = Option<Arc<SearchResult>>;

    fn handle(&mut self, Get(key): Get, _: &mut Self::Context) -> Self::Result {
        self.lru.get(&key).cloned()
    }
}

impl Handler<Put> for Cache {
    type Result = ();

    fn handle(&mut self, Put(key, value): Put, _: &mut Self::Context) {
        self.lru.insert(key, value);
    }
}

impl Handler<Len> for Cache {
    type Result = MessageResult<Len>;

    fn handle(&mut self, _: Len, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.lru.len())
    }
}
