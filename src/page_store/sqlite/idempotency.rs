//! Idempotency keys over SQLite ([`crate::page_store::idempotency`] has the
//! rules): each call is one `BEGIN IMMEDIATE` transaction, so writers are
//! serialized by the write lock and a claim's read and write see the same row.

use rusqlite::{params, OptionalExtension, Transaction};

use super::rows::from_row;
use crate::page_store::idempotency::{
    Claimed, KeyClaim, StoredAnswer, ABANDONED_AFTER_SECS, KEY_LIFETIME_SECS, SWEEP_BATCH,
};

/// The row of a key, as a claim reads it.
struct Row {
    fingerprint: String,
    done: bool,
    started_at: i64,
    status: Option<u16>,
    response: Option<String>,
}

/// Claims `claim.key_hash` for `claim.fingerprint` at `claim.now`, deleting up to
/// [`SWEEP_BATCH`] expired rows first.
pub fn claim(tx: &Transaction<'_>, claim: &KeyClaim) -> rusqlite::Result<Claimed> {
    let expired = claim.now - KEY_LIFETIME_SECS;
    tx.prepare_cached(
        "DELETE FROM idempotency_keys WHERE key_hash IN (
             SELECT key_hash FROM idempotency_keys WHERE started_at <= ?1 LIMIT ?2)",
    )?
    .execute(params![expired, SWEEP_BATCH])?;
    let row = tx
        .prepare_cached(
            "SELECT fingerprint, state = 'done', started_at, status, response
             FROM idempotency_keys WHERE key_hash = ?1",
        )?
        .query_row([&claim.key_hash], |r| {
            Ok(from_row!(r => Row { fingerprint, done, started_at, status, response }))
        })
        .optional()?;
    let live = row.filter(|r| r.started_at > expired);
    match live {
        Some(r) if !r.done && r.started_at <= claim.now - ABANDONED_AFTER_SECS => {}
        Some(r) if r.fingerprint != claim.fingerprint => return Ok(Claimed::Reused),
        Some(r) if !r.done => return Ok(Claimed::InFlight),
        Some(r) => {
            return Ok(Claimed::Replay(StoredAnswer {
                status: r.status.unwrap_or(200),
                body: r.response.unwrap_or_default(),
            }))
        }
        None => {
            let (held, oldest): (i64, Option<i64>) = tx
                .prepare_cached(
                    "SELECT count(*), min(started_at) FROM idempotency_keys
                     WHERE client_hash = ?1 AND started_at > ?2 AND key_hash <> ?3",
                )?
                .query_row(params![claim.client_hash, expired, claim.key_hash], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
            if held >= claim.max_keys {
                let frees = oldest.unwrap_or(claim.now) + KEY_LIFETIME_SECS;
                return Ok(Claimed::TooMany {
                    retry_after: (frees - claim.now).max(1),
                });
            }
        }
    }
    tx.prepare_cached(
        "INSERT OR REPLACE INTO idempotency_keys
             (key_hash, client_hash, fingerprint, state, started_at, status, response)
         VALUES (?1, ?2, ?3, 'running', ?4, NULL, NULL)",
    )?
    .execute(params![
        claim.key_hash,
        claim.client_hash,
        claim.fingerprint,
        claim.now
    ])?;
    Ok(Claimed::Fresh)
}

/// Keeps `answer` for the claim of `key_hash` started at `started_at`; nothing
/// when the row was taken over or deleted since.
pub fn finish(
    tx: &Transaction<'_>,
    key_hash: &str,
    started_at: i64,
    answer: &StoredAnswer,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "UPDATE idempotency_keys SET state = 'done', status = ?3, response = ?4
         WHERE key_hash = ?1 AND started_at = ?2 AND state = 'running'",
    )?
    .execute(params![key_hash, started_at, answer.status, answer.body])?;
    Ok(())
}

/// Deletes the claim of `key_hash` started at `started_at`, when it is still
/// running.
pub fn release(tx: &Transaction<'_>, key_hash: &str, started_at: i64) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "DELETE FROM idempotency_keys
         WHERE key_hash = ?1 AND started_at = ?2 AND state = 'running'",
    )?
    .execute(params![key_hash, started_at])?;
    Ok(())
}
