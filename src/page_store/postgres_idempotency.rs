//! Idempotency keys over PostgreSQL ([`crate::page_store::idempotency`] has the
//! rules), shared by every replica on the database. A claim is one transaction
//! holding a per-client advisory lock (two int4 keys: a class of our own and the
//! hash of the client's hash, a key space apart from the migrations' bigint lock),
//! so of two replicas claiming one key at once the second waits and then finds the
//! first's row; the row it reads is locked (`FOR UPDATE`), so a finish or release
//! committing meanwhile is seen, not overwritten. The sweep skips rows another
//! transaction holds (`SKIP LOCKED`) rather than wait for them. Finish and release
//! take no advisory lock: each changes one row, guarded by its `started_at`.

use super::idempotency::{
    Claimed, IdempotencyBackend, KeyClaim, StoredAnswer, ABANDONED_AFTER_SECS, KEY_LIFETIME_SECS,
    SWEEP_BATCH,
};
use super::postgres::PostgresPages;
use super::PageFuture;

/// The advisory lock class of idempotency claims (any constant of our own).
const LOCK_CLASS: i32 = 0x6964_656d; // "idem"

impl IdempotencyBackend for PostgresPages {
    fn claim_key(&self, claim: KeyClaim) -> PageFuture<'_, Claimed> {
        self.call(move |c| {
            Box::pin(async move {
                let tx = c.transaction().await?;
                tx.execute(
                    "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                    &[&LOCK_CLASS, &claim.client_hash],
                )
                .await?;
                let expired = claim.now - KEY_LIFETIME_SECS;
                tx.execute(
                    "DELETE FROM idempotency_keys WHERE key_hash IN (
                         SELECT key_hash FROM idempotency_keys WHERE started_at <= $1
                         LIMIT $2 FOR UPDATE SKIP LOCKED)",
                    &[&expired, &SWEEP_BATCH],
                )
                .await?;
                let row = tx
                    .query_opt(
                        "SELECT fingerprint, state = 'done', started_at, status, response
                         FROM idempotency_keys WHERE key_hash = $1 FOR UPDATE",
                        &[&claim.key_hash],
                    )
                    .await?;
                let live = row.filter(|r| r.get::<_, i64>(2) > expired);
                let decided = match live {
                    Some(r)
                        if !r.get::<_, bool>(1)
                            && r.get::<_, i64>(2) <= claim.now - ABANDONED_AFTER_SECS =>
                    {
                        None
                    }
                    Some(r) if r.get::<_, String>(0) != claim.fingerprint => Some(Claimed::Reused),
                    Some(r) if !r.get::<_, bool>(1) => Some(Claimed::InFlight),
                    Some(r) => Some(Claimed::Replay(StoredAnswer {
                        status: r
                            .get::<_, Option<i32>>(3)
                            .and_then(|s| u16::try_from(s).ok())
                            .unwrap_or(200),
                        body: r.get::<_, Option<String>>(4).unwrap_or_default(),
                    })),
                    None => {
                        let held = tx
                            .query_one(
                                "SELECT count(*), min(started_at) FROM idempotency_keys
                                 WHERE client_hash = $1 AND started_at > $2 AND key_hash <> $3",
                                &[&claim.client_hash, &expired, &claim.key_hash],
                            )
                            .await?;
                        let (count, oldest): (i64, Option<i64>) = (held.get(0), held.get(1));
                        (count >= claim.max_keys).then(|| {
                            let frees = oldest.unwrap_or(claim.now) + KEY_LIFETIME_SECS;
                            Claimed::TooMany {
                                retry_after: (frees - claim.now).max(1),
                            }
                        })
                    }
                };
                if let Some(answer) = decided {
                    tx.commit().await?;
                    return Ok(answer);
                }
                tx.execute(
                    "INSERT INTO idempotency_keys
                         (key_hash, client_hash, fingerprint, state, started_at, status, response)
                     VALUES ($1, $2, $3, 'running', $4, NULL, NULL)
                     ON CONFLICT (key_hash) DO UPDATE
                         SET client_hash = EXCLUDED.client_hash,
                             fingerprint = EXCLUDED.fingerprint, state = 'running',
                             started_at = EXCLUDED.started_at, status = NULL,
                             response = NULL",
                    &[
                        &claim.key_hash,
                        &claim.client_hash,
                        &claim.fingerprint,
                        &claim.now,
                    ],
                )
                .await?;
                tx.commit().await?;
                Ok(Claimed::Fresh)
            })
        })
    }

    fn finish_key(
        &self,
        key_hash: String,
        started_at: i64,
        answer: StoredAnswer,
    ) -> PageFuture<'_, ()> {
        self.call(move |c| {
            Box::pin(async move {
                c.execute(
                    "UPDATE idempotency_keys SET state = 'done', status = $3, response = $4
                     WHERE key_hash = $1 AND started_at = $2 AND state = 'running'",
                    &[
                        &key_hash,
                        &started_at,
                        &i32::from(answer.status),
                        &answer.body,
                    ],
                )
                .await?;
                Ok(())
            })
        })
    }

    fn release_key(&self, key_hash: String, started_at: i64) -> PageFuture<'_, ()> {
        self.call(move |c| {
            Box::pin(async move {
                c.execute(
                    "DELETE FROM idempotency_keys
                     WHERE key_hash = $1 AND started_at = $2 AND state = 'running'",
                    &[&key_hash, &started_at],
                )
                .await?;
                Ok(())
            })
        })
    }
}
