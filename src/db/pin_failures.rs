//! Failed PIN checks per client, in `rate_limit_counters` beside the search budget.
//!
//! One fixed hour window aligned to the Unix epoch, like the search hour window, so
//! the periodic sweep of ended windows (`search::budget::sweep`) clears these rows
//! too. The bucket key is `hex(SHA-256("pin-fail-hour:" + ip))` with `ip` the gate-2
//! client text, so no address is stored and no key collides with a search key.

use rusqlite::{params, Connection, OptionalExtension, Transaction};
use sha2::{Digest, Sha256};

use crate::search::budget::{window_start, HOUR};
use crate::search::client_ip::ClientIp;

/// Failed checks a client may have in one hour window; the next check is refused.
pub const LIMIT: i64 = 10;

/// The counter key of `client`: 64 lowercase hex chars.
pub fn bucket(client: &ClientIp) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"pin-fail-hour:");
    hasher.update(client.to_string().as_bytes());
    hex::encode(hasher.finalize())
}

/// Failures counted for `bucket` in the hour window containing `now` (unix seconds).
pub fn count(conn: &Connection, bucket: &str, now: i64) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT count FROM rate_limit_counters WHERE bucket = ?1 AND window_start = ?2",
        params![bucket, window_start(now, HOUR)],
        |r| r.get(0),
    )
    .optional()
    .map(|c| c.unwrap_or(0))
}

/// Counts one more failure for `bucket` at `now`; a row of an ended window starts
/// again from 0. Returns the new count.
pub fn record(tx: &Transaction<'_>, bucket: &str, now: i64) -> rusqlite::Result<i64> {
    tx.query_row(
        "INSERT INTO rate_limit_counters (bucket, window_start, count) VALUES (?1, ?2, 1)
         ON CONFLICT (bucket) DO UPDATE SET
             count = CASE WHEN window_start = excluded.window_start THEN count + 1 ELSE 1 END,
             window_start = excluded.window_start
         RETURNING count",
        params![bucket, window_start(now, HOUR)],
        |r| r.get(0),
    )
}

/// Whole seconds from `now` until its hour window ends, at least 1.
pub fn retry_after(now: i64) -> i64 {
    (window_start(now, HOUR) + HOUR - now).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_800_000_000; // a multiple of 3600

    #[test]
    fn failures_count_within_the_hour_and_restart_in_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(&dir.path().join("t.sqlite3")).unwrap();
        crate::db::migrations::run(&mut conn).unwrap();
        let key = bucket(&ClientIp::from_addr("192.0.2.1".parse().unwrap()));
        let tx = conn.transaction().unwrap();
        assert_eq!(record(&tx, &key, T0).unwrap(), 1);
        assert_eq!(record(&tx, &key, T0 + HOUR - 1).unwrap(), 2);
        assert_eq!(count(&tx, &key, T0 + 5).unwrap(), 2);
        assert_eq!(count(&tx, &key, T0 + HOUR).unwrap(), 0);
        assert_eq!(record(&tx, &key, T0 + HOUR).unwrap(), 1);
        // The search budget's sweep clears these rows once their window has ended.
        assert_eq!(
            crate::search::budget::sweep(&tx, T0 + 2 * HOUR - 1).unwrap(),
            0
        );
        assert_eq!(crate::search::budget::sweep(&tx, T0 + 2 * HOUR).unwrap(), 1);
        tx.commit().unwrap();
        assert_eq!(retry_after(T0 + 10), HOUR - 10);
        assert_eq!(retry_after(T0), HOUR);
    }

    #[test]
    fn the_key_is_distinct_from_the_search_keys_of_the_same_client() {
        let client = ClientIp::from_addr("192.0.2.1".parse().unwrap());
        let key = bucket(&client);
        let search = client.bucket_keys();
        assert_eq!(key.len(), 64);
        assert_ne!(key, search.minute);
        assert_ne!(key, search.hour);
    }
}
