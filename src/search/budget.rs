//! Gates 3/4: the two-window request budget, as SQL on a `&Transaction`.
//!
//! Fixed windows aligned to the Unix epoch (minute 60 s, hour 3600 s). Both counters
//! are incremented in one transaction, each only if under its limit; if either
//! refuses, the caller rolls back and neither changes.

use rusqlite::{params, OptionalExtension, Transaction};

use super::client_ip::BucketKeys;

/// Seconds in the burst window.
pub const MINUTE: i64 = 60;
/// Seconds in the sustained window.
pub const HOUR: i64 = 3600;

/// The two limits, in requests per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub per_minute: u32,
    pub per_hour: u32,
}

/// Which window refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Minute,
    Hour,
}

/// The outcome of one spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spend {
    /// Both counters moved; their new values.
    Admitted { minute_count: i64, hour_count: i64 },
    /// A window is full; `retry_after` is whole seconds until it ends, at least 1.
    Refused { window: Window, retry_after: i64 },
}

/// Start of the fixed window of `length` seconds containing `now` (unix seconds).
pub fn window_start(now: i64, length: i64) -> i64 {
    now - now.rem_euclid(length)
}

/// Tries to add one to both counters of `keys` at `now`.
///
/// On [`Spend::Refused`] the transaction holds partial changes: the caller must roll
/// it back (dropping it does). Errors: SQLite errors only.
pub fn spend(
    tx: &Transaction<'_>,
    keys: &BucketKeys,
    limits: Limits,
    now: i64,
) -> rusqlite::Result<Spend> {
    let minute = increment(tx, &keys.minute, MINUTE, limits.per_minute, now)?;
    let Some(minute_count) = minute else {
        return Ok(refused(Window::Minute, MINUTE, now));
    };
    let Some(hour_count) = increment(tx, &keys.hour, HOUR, limits.per_hour, now)? else {
        return Ok(refused(Window::Hour, HOUR, now));
    };
    Ok(Spend::Admitted {
        minute_count,
        hour_count,
    })
}

fn refused(window: Window, length: i64, now: i64) -> Spend {
    let retry_after = (window_start(now, length) + length - now).max(1);
    Spend::Refused {
        window,
        retry_after,
    }
}

/// Adds one to `bucket` in the window containing `now` if its count is under `limit`;
/// a row of an ended window starts again from 0. Returns the new count, or `None`
/// when the window is full.
fn increment(
    tx: &Transaction<'_>,
    bucket: &str,
    length: i64,
    limit: u32,
    now: i64,
) -> rusqlite::Result<Option<i64>> {
    let start = window_start(now, length);
    tx.execute(
        "INSERT INTO rate_limit_counters (bucket, window_start, count) VALUES (?1, ?2, 0)
         ON CONFLICT (bucket) DO UPDATE SET window_start = excluded.window_start, count = 0
         WHERE rate_limit_counters.window_start <> excluded.window_start",
        params![bucket, start],
    )?;
    tx.query_row(
        "UPDATE rate_limit_counters SET count = count + 1
         WHERE bucket = ?1 AND count < ?2 RETURNING count",
        params![bucket, limit],
        |r| r.get(0),
    )
    .optional()
}

/// Deletes rows whose window ended at least an hour ago (any window is at most an
/// hour long, so none of them can still count). Returns the number deleted.
pub fn sweep(tx: &Transaction<'_>, now: i64) -> rusqlite::Result<usize> {
    tx.execute(
        "DELETE FROM rate_limit_counters WHERE window_start <= ?1",
        [now - HOUR],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::client_ip::ClientIp;
    use rusqlite::Connection;

    const T0: i64 = 1_800_000_000; // a multiple of 3600

    use crate::db::temp_db as db;

    fn keys() -> BucketKeys {
        ClientIp::from_addr("192.0.2.7".parse().unwrap()).bucket_keys()
    }

    fn try_spend(conn: &mut Connection, limits: Limits, now: i64) -> Spend {
        let tx = conn.transaction().unwrap();
        let out = spend(&tx, &keys(), limits, now).unwrap();
        if matches!(out, Spend::Admitted { .. }) {
            tx.commit().unwrap();
        }
        out
    }

    fn count(conn: &Connection, bucket: &str) -> i64 {
        conn.query_row(
            "SELECT count FROM rate_limit_counters WHERE bucket = ?1",
            [bucket],
            |r| r.get(0),
        )
        .unwrap_or(0)
    }

    #[test]
    fn the_21st_request_in_a_minute_is_refused_and_the_hour_counter_reads_20() {
        let (_d, mut conn) = db();
        let limits = Limits {
            per_minute: 20,
            per_hour: 200,
        };
        for i in 1..=20 {
            assert_eq!(
                try_spend(&mut conn, limits, T0 + 5),
                Spend::Admitted {
                    minute_count: i,
                    hour_count: i
                }
            );
        }
        assert_eq!(
            try_spend(&mut conn, limits, T0 + 5),
            Spend::Refused {
                window: Window::Minute,
                retry_after: 55
            }
        );
        assert_eq!(count(&conn, &keys().hour), 20);
    }

    #[test]
    fn a_full_hour_rolls_the_minute_counter_back() {
        let (_d, mut conn) = db();
        let limits = Limits {
            per_minute: 20,
            per_hour: 3,
        };
        for minute in 0..3 {
            assert!(matches!(
                try_spend(&mut conn, limits, T0 + minute * 60),
                Spend::Admitted { .. }
            ));
        }
        let now = T0 + 3 * 60 + 10;
        assert_eq!(
            try_spend(&mut conn, limits, now),
            Spend::Refused {
                window: Window::Hour,
                retry_after: HOUR - 190
            }
        );
        // The minute row still holds the window of the last admitted request.
        let (start, c): (i64, i64) = conn
            .query_row(
                "SELECT window_start, count FROM rate_limit_counters WHERE bucket = ?1",
                [keys().minute],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((start, c), (T0 + 120, 1));
    }

    #[test]
    fn windows_reset_on_their_boundaries_and_retry_after_counts_down_to_them() {
        let (_d, mut conn) = db();
        let limits = Limits {
            per_minute: 1,
            per_hour: 200,
        };
        assert!(matches!(
            try_spend(&mut conn, limits, T0),
            Spend::Admitted { .. }
        ));
        for (now, left) in [(T0, 60), (T0 + 1, 59), (T0 + 59, 1)] {
            assert_eq!(
                try_spend(&mut conn, limits, now),
                Spend::Refused {
                    window: Window::Minute,
                    retry_after: left
                }
            );
        }
        assert_eq!(
            try_spend(&mut conn, limits, T0 + 60),
            Spend::Admitted {
                minute_count: 1,
                hour_count: 2
            }
        );
    }

    #[test]
    fn sweep_deletes_only_rows_of_long_ended_windows() {
        let (_d, mut conn) = db();
        let limits = Limits {
            per_minute: 5,
            per_hour: 5,
        };
        try_spend(&mut conn, limits, T0);
        let tx = conn.transaction().unwrap();
        assert_eq!(sweep(&tx, T0 + HOUR - 1).unwrap(), 0);
        assert_eq!(sweep(&tx, T0 + HOUR).unwrap(), 2);
        tx.commit().unwrap();
    }
}
