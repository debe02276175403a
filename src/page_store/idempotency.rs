//! Idempotency keys of publishes (issue 32 §3): the rules every page store keeps
//! for the rows of `idempotency_keys`, and the records of a claim. The SQL is each
//! backend's (`sqlite::idempotency`, `postgres_idempotency`); the rules are here.
//! The hashing of a key and a request, and what each answer means to a client, are
//! the operation's (`crate::operations::idempotency`).
//!
//! A publish that carries a key first **claims** it ([`KeyClaim`]), in one
//! transaction that also deletes up to [`SWEEP_BATCH`] expired rows of any client:
//!
//! - no live row for the key (none, or one [`KEY_LIFETIME_SECS`] old): a new row in
//!   state `running`, unless the client holds `max_keys` live keys already
//!   ([`Claimed::TooMany`]); the publish may run ([`Claimed::Fresh`]);
//! - a `running` row [`ABANDONED_AFTER_SECS`] old (its server crashed or its
//!   answer was never stored): taken over as if absent, whatever its fingerprint;
//! - another fingerprint: [`Claimed::Reused`];
//! - `running`, same fingerprint: [`Claimed::InFlight`];
//! - `done`, same fingerprint: [`Claimed::Replay`] with the stored answer.
//!
//! A fresh claim is then **finished** with the 2xx answer the publish gave, or
//! **released** (its row deleted) when it answered anything else, so the key can
//! be sent again. Both name the claim by its key and `started_at`, and change
//! nothing when another request has taken the row over since.

use super::PageFuture;

/// Seconds a key is remembered from the start of the publish that claimed it.
pub const KEY_LIFETIME_SECS: i64 = 24 * 60 * 60;

/// Seconds after which a `running` row is taken to be abandoned.
pub const ABANDONED_AFTER_SECS: i64 = 60;

/// Live keys one client may hold unless the claim says otherwise.
pub const MAX_KEYS_PER_CLIENT: i64 = 1000;

/// Most expired rows one claim deletes (each claim adds at most one row, so the
/// table never holds many more rows than live keys).
pub const SWEEP_BATCH: i64 = 100;

/// A claim of an idempotency key at `now`, as the operation hashed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyClaim {
    /// Lowercase hex of SHA-256(client || 0x00 || key): the row's primary key.
    pub key_hash: String,
    /// Lowercase hex of a SHA-256 of the client alone: what the bound counts by.
    pub client_hash: String,
    /// Lowercase hex of the SHA-256 of the request.
    pub fingerprint: String,
    /// Unix seconds: the claim's `started_at` when it is fresh.
    pub now: i64,
    /// Live keys the client may hold ([`MAX_KEYS_PER_CLIENT`]).
    pub max_keys: i64,
}

/// A 2xx answer kept for a key: its status and its JSON body as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAnswer {
    pub status: u16,
    pub body: String,
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// The key is this request's now (a `running` row started at the claim's
    /// `now`): publish, then finish or release it.
    Fresh,
    /// The key's publish answered this, less than a day ago, for the same request.
    Replay(StoredAnswer),
    /// The key was sent with another request less than a day ago.
    Reused,
    /// The key's first publish is still running (started less than
    /// [`ABANDONED_AFTER_SECS`] ago).
    InFlight,
    /// The client holds `max_keys` live keys; the oldest expires in `retry_after`
    /// seconds (at least 1). Nothing was written.
    TooMany { retry_after: i64 },
}

/// The idempotency-key calls of a page store (the keys live in its database, so a
/// claim and the publish it guards share one store): the part of
/// [`super::PageBackend`] the rules above are about. Each backend implements it
/// beside its own key SQL.
pub trait IdempotencyBackend {
    /// Claims an idempotency key as the [module](self) says, in one transaction
    /// (with the sweep of expired rows): two processes claiming one key at once
    /// see one [`Claimed::Fresh`].
    fn claim_key(&self, claim: KeyClaim) -> PageFuture<'_, Claimed>;

    /// Keeps `answer` for the fresh claim of `key_hash` made at `started_at`
    /// (state `done`); changes nothing when that claim's row is gone or was taken
    /// over.
    fn finish_key(
        &self,
        key_hash: String,
        started_at: i64,
        answer: StoredAnswer,
    ) -> PageFuture<'_, ()>;

    /// Deletes the fresh claim of `key_hash` made at `started_at` while it is
    /// still `running`, so the key can be claimed again.
    fn release_key(&self, key_hash: String, started_at: i64) -> PageFuture<'_, ()>;
}
