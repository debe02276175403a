//! The budget counters in SQLite's `rate_limit_counters` (SPEC §3), in the budget
//! database (a file of its own, `crate::sqlite::open_budget`): one row per bucket key
//! holding the start of its current window and its count. Plain SQL on a
//! `&Transaction`; the RateLimiter actor ([`super::rate_limiter`]) owns the
//! connection and the transaction.
//! Every statement is `prepare_cached`: they run on every budgeted request, and
//! compiling them was a tenth of a cache hit's time.

// foldhash (hashbrown's default, randomly seeded) rather than SipHash: the batch's
// keys are hashed a few times per spend.
use foldhash::{HashMap, HashMapExt};

use rusqlite::{Connection, Transaction};

use super::{BucketKeys, Budget, Decision};

/// Decides `spends` — each `(budget, keys, now)`: count one request in every window
/// of `budget` for `keys` at `now` (unix seconds) — in order, as if each ran
/// [`peek`] then [`record`] alone: a spend is admitted only when every one of its
/// windows is under its limit, and a refusal writes nothing (both-or-neither).
/// Returns one decision per spend, in order.
///
/// Two statements whatever the batch's size (read every key once, write every
/// changed key once), instead of two per spend: the group commit's batches are
/// mostly the same few clients. The caller's transaction must hold the write lock
/// (`BEGIN IMMEDIATE`), so no count can move between the read and the write.
/// Errors: SQLite errors only.
pub fn spend_batch<'a>(
    tx: &Transaction<'_>,
    spends: impl IntoIterator<Item = (&'a Budget, &'a BucketKeys, i64)>,
) -> rusqlite::Result<Vec<Decision>> {
    let spends: Vec<_> = spends.into_iter().collect();
    // Every key of the batch once, with its stored (window start, count).
    let mut counters: HashMap<&str, Counter> = HashMap::new();
    for (_, keys, _) in &spends {
        for key in &keys.0 {
            counters.entry(key.as_str()).or_default();
        }
    }
    let wanted: Vec<&str> = counters.keys().copied().collect();
    let mut stmt = tx.prepare_cached(
        "SELECT bucket, window_start, count FROM rate_limit_counters
         WHERE bucket IN (SELECT value FROM json_each(?1))",
    )?;
    let mut rows = stmt.query([json_array(&wanted)])?;
    while let Some(row) = rows.next()? {
        let bucket: String = row.get(0)?;
        if let Some(counter) = counters.get_mut(bucket.as_str()) {
            counter.start = Some(row.get(1)?);
            counter.stored_start = counter.start;
            counter.count = row.get(2)?;
        }
    }
    drop(rows);

    let mut decisions = Vec::with_capacity(spends.len());
    for (budget, keys, now) in &spends {
        let current: Vec<i64> = budget
            .windows
            .iter()
            .zip(&keys.0)
            .map(|(window, key)| counters[key.as_str()].in_window(window.start(*now)))
            .collect();
        let full = budget
            .windows
            .iter()
            .zip(&current)
            .position(|(window, count)| *count >= i64::from(window.limit));
        let counts: Vec<Option<i64>> = match full {
            Some(i) => current[..i]
                .iter()
                .copied()
                .map(Some)
                .chain([None])
                .collect(),
            None => budget
                .windows
                .iter()
                .zip(&keys.0)
                .zip(current)
                .map(|((window, key), count)| {
                    let counter = counters.get_mut(key.as_str()).expect("every key was read");
                    counter.start = Some(window.start(*now));
                    counter.count = count + 1;
                    counter.changed = true;
                    Some(count + 1)
                })
                .collect(),
        };
        decisions.push(budget.decide(&counts, *now));
    }

    // Rows still in their stored window change only their count: writing
    // `window_start` too would rewrite its index, doubling the pages each commit
    // writes to the WAL.
    let (mut same_window, mut new_window) = (Vec::new(), Vec::new());
    for (key, c) in counters.iter().filter(|(_, c)| c.changed) {
        let Some(start) = c.start else { continue };
        if c.stored_start == c.start {
            same_window.push((*key, c.count));
        } else {
            new_window.push((*key, start, c.count));
        }
    }
    if !same_window.is_empty() {
        let json = serde_json::to_string(&same_window).expect("keys and numbers serialize");
        tx.prepare_cached(
            "UPDATE rate_limit_counters SET count = json_extract(j.value, '$[1]')
             FROM json_each(?1) AS j
             WHERE bucket = json_extract(j.value, '$[0]')",
        )?
        .execute([json])?;
    }
    if !new_window.is_empty() {
        let json = serde_json::to_string(&new_window).expect("keys and numbers serialize");
        tx.prepare_cached(
            "INSERT INTO rate_limit_counters (bucket, window_start, count)
             SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'),
                    json_extract(value, '$[2]')
             FROM json_each(?1) WHERE true
             ON CONFLICT (bucket) DO UPDATE SET
                 window_start = excluded.window_start, count = excluded.count",
        )?
        .execute([json])?;
    }
    Ok(decisions)
}

/// A bucket key's row as a batch sees it: read once, then changed in memory.
#[derive(Debug, Default, Clone, Copy)]
struct Counter {
    /// Start of the window `count` is in (unix seconds); `None` without a row.
    start: Option<i64>,
    /// `start` as read from the row (`None` without a row).
    stored_start: Option<i64>,
    count: i64,
    /// Must be written back.
    changed: bool,
}

impl Counter {
    /// The count in the window starting at `start`: 0 once the stored one ended.
    fn in_window(&self, start: i64) -> i64 {
        if self.start == Some(start) {
            self.count
        } else {
            0
        }
    }
}

/// `["a","b"]`: the keys as one JSON array parameter (for `json_each`).
fn json_array(keys: &[&str]) -> String {
    serde_json::to_string(keys).expect("strings serialize")
}

/// The counts of `keys` in the windows containing `now`, without changing them
/// (0 for a key with no row or a row of an ended window). One statement for all
/// windows.
pub fn peek(
    conn: &Connection,
    budget: &Budget,
    keys: &BucketKeys,
    now: i64,
) -> rusqlite::Result<Vec<i64>> {
    let n = keys.0.len();
    let sql = format!(
        "SELECT bucket, window_start, count FROM rate_limit_counters WHERE bucket IN ({})",
        placeholders(n, 1)
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(&keys.0))?;
    let mut counts = vec![0; n];
    while let Some(row) = rows.next()? {
        let bucket: String = row.get(0)?;
        let (start, count): (i64, i64) = (row.get(1)?, row.get(2)?);
        for (i, (window, key)) in budget.windows.iter().zip(&keys.0).enumerate() {
            if *key == bucket && start == window.start(now) {
                counts[i] = count;
            }
        }
    }
    Ok(counts)
}

/// Counts one event in every window of `keys` at `now` whatever the limits (failed
/// PIN checks are counted after they happened); a row of an ended window starts
/// again from 1. Returns the new counts. One statement for all windows.
pub fn record(
    tx: &Transaction<'_>,
    budget: &Budget,
    keys: &BucketKeys,
    now: i64,
) -> rusqlite::Result<Vec<i64>> {
    let n = keys.0.len();
    let values = (0..n)
        .map(|i| format!("(?{}, ?{}, 1)", 2 * i + 1, 2 * i + 2))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "INSERT INTO rate_limit_counters (bucket, window_start, count) VALUES {values}
         ON CONFLICT (bucket) DO UPDATE SET
             count = CASE WHEN window_start = excluded.window_start THEN count + 1 ELSE 1 END,
             window_start = excluded.window_start
         RETURNING bucket, count"
    );
    let mut params: Vec<rusqlite::types::Value> = Vec::with_capacity(2 * n);
    for (window, key) in budget.windows.iter().zip(&keys.0) {
        params.push(key.clone().into());
        params.push(window.start(now).into());
    }
    let mut stmt = tx.prepare_cached(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    let mut counts = vec![0; n];
    // RETURNING gives the rows in no promised order: match them by key.
    while let Some(row) = rows.next()? {
        let bucket: String = row.get(0)?;
        let count: i64 = row.get(1)?;
        for (i, key) in keys.0.iter().enumerate() {
            if *key == bucket {
                counts[i] = count;
            }
        }
    }
    Ok(counts)
}

/// `?from, ?from+1, …`: `n` numbered SQL parameters.
fn placeholders(n: usize, from: usize) -> String {
    (from..from + n)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Deletes rows whose window started at least `horizon` seconds (the longest window
/// of any budget) before `now`: none of them can still count. Returns the number
/// deleted.
pub fn sweep(tx: &Transaction<'_>, now: i64, horizon: i64) -> rusqlite::Result<usize> {
    tx.execute(
        "DELETE FROM rate_limit_counters WHERE window_start <= ?1",
        [now - horizon],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{FixedWindow, WindowCount};
    use crate::client_ip::ClientIp;
    use crate::sqlite::temp_budget_db as db;
    use rusqlite::OptionalExtension;

    const T0: i64 = 1_800_000_000; // a multiple of 3600
    const HOUR: i64 = 3600;

    fn client() -> ClientIp {
        ClientIp::from_addr("192.0.2.7".parse().unwrap())
    }

    fn try_spend(conn: &mut Connection, budget: &Budget, now: i64) -> Decision {
        let tx = conn.transaction().unwrap();
        let keys = budget.keys(&client());
        let out = spend_batch(&tx, [(budget, &keys, now)]).unwrap().remove(0);
        if matches!(out, Decision::Admitted(_)) {
            tx.commit().unwrap();
        }
        out
    }

    fn counts(decision: &Decision) -> Vec<i64> {
        match decision {
            Decision::Admitted(c) => c.iter().map(|w: &WindowCount| w.count).collect(),
            Decision::Refused { .. } => vec![],
        }
    }

    fn row(conn: &Connection, bucket: &str) -> Option<(i64, i64)> {
        conn.query_row(
            "SELECT window_start, count FROM rate_limit_counters WHERE bucket = ?1",
            [bucket],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .unwrap()
    }

    #[test]
    fn the_21st_request_in_a_minute_is_refused_and_the_hour_counter_reads_20() {
        let (_d, mut conn) = db();
        let budget = Budget::search(20, 200);
        for i in 1..=20 {
            assert_eq!(counts(&try_spend(&mut conn, &budget, T0 + 5)), vec![i, i]);
        }
        assert_eq!(
            try_spend(&mut conn, &budget, T0 + 5),
            Decision::Refused {
                window: 0,
                retry_after: 55
            }
        );
        let keys = budget.keys(&client());
        assert_eq!(row(&conn, &keys.0[1]), Some((T0, 20)));
    }

    #[test]
    fn a_full_hour_rolls_the_minute_counter_back() {
        let (_d, mut conn) = db();
        let budget = Budget::search(20, 3);
        for minute in 0..3 {
            assert!(matches!(
                try_spend(&mut conn, &budget, T0 + minute * 60),
                Decision::Admitted(_)
            ));
        }
        let now = T0 + 3 * 60 + 10;
        assert_eq!(
            try_spend(&mut conn, &budget, now),
            Decision::Refused {
                window: 1,
                retry_after: HOUR - 190
            }
        );
        // The minute row still holds the window of the last admitted request.
        let keys = budget.keys(&client());
        assert_eq!(row(&conn, &keys.0[0]), Some((T0 + 120, 1)));
    }

    #[test]
    fn windows_reset_on_their_boundaries_and_retry_after_counts_down_to_them() {
        let (_d, mut conn) = db();
        let budget = Budget::search(1, 200);
        assert!(matches!(
            try_spend(&mut conn, &budget, T0),
            Decision::Admitted(_)
        ));
        for (now, left) in [(T0, 60), (T0 + 1, 59), (T0 + 59, 1)] {
            assert_eq!(
                try_spend(&mut conn, &budget, now),
                Decision::Refused {
                    window: 0,
                    retry_after: left
                }
            );
        }
        assert_eq!(counts(&try_spend(&mut conn, &budget, T0 + 60)), vec![1, 2]);
    }

    #[test]
    fn a_third_window_pushed_onto_the_budget_is_enforced_and_swept_at_its_own_horizon() {
        let (_d, mut conn) = db();
        let mut budget = Budget::search(20, 200);
        budget.windows.push(FixedWindow::new("day", 86_400, 2));
        for hour in 0..2 {
            assert_eq!(
                counts(&try_spend(&mut conn, &budget, T0 + hour * HOUR)),
                vec![1, 1, hour + 1]
            );
        }
        let now = T0 + 5 * HOUR;
        let refused = try_spend(&mut conn, &budget, now);
        assert_eq!(
            refused,
            Decision::Refused {
                window: 2,
                retry_after: FixedWindow::new("day", 86_400, 2).seconds_left(now)
            }
        );
        // Both-or-neither over three windows: the refusal moved no counter.
        let keys = budget.keys(&client());
        assert_eq!(row(&conn, &keys.0[0]), Some((T0 + HOUR, 1)));
        // The day row survives an hourly sweep and goes at its own horizon.
        let day_start = FixedWindow::new("day", 86_400, 2).start(now);
        let tx = conn.transaction().unwrap();
        sweep(&tx, T0 + 3 * HOUR, budget.horizon()).unwrap();
        tx.commit().unwrap();
        assert_eq!(row(&conn, &keys.0[2]), Some((day_start, 2)));
        let tx = conn.transaction().unwrap();
        assert!(sweep(&tx, day_start + 86_400, budget.horizon()).unwrap() >= 1);
        tx.commit().unwrap();
        assert_eq!(row(&conn, &keys.0[2]), None);
    }

    #[test]
    fn recorded_failures_count_within_the_hour_and_restart_in_the_next() {
        let (_d, mut conn) = db();
        let budget = Budget::pin_failures(10);
        let keys = budget.keys(&client());
        let tx = conn.transaction().unwrap();
        assert_eq!(record(&tx, &budget, &keys, T0).unwrap(), vec![1]);
        assert_eq!(record(&tx, &budget, &keys, T0 + HOUR - 1).unwrap(), vec![2]);
        assert_eq!(peek(&tx, &budget, &keys, T0 + 5).unwrap(), vec![2]);
        assert_eq!(peek(&tx, &budget, &keys, T0 + HOUR).unwrap(), vec![0]);
        assert_eq!(record(&tx, &budget, &keys, T0 + HOUR).unwrap(), vec![1]);
        tx.commit().unwrap();
    }

    #[test]
    fn sweep_deletes_only_rows_of_long_ended_windows() {
        let (_d, mut conn) = db();
        let budget = Budget::search(5, 5);
        try_spend(&mut conn, &budget, T0);
        let tx = conn.transaction().unwrap();
        assert_eq!(sweep(&tx, T0 + HOUR - 1, HOUR).unwrap(), 0);
        assert_eq!(sweep(&tx, T0 + HOUR, HOUR).unwrap(), 2);
        tx.commit().unwrap();
    }

    /// The reference a batch must match: each spend alone, peek then record.
    fn one_at_a_time(
        tx: &Transaction<'_>,
        budget: &Budget,
        keys: &BucketKeys,
        now: i64,
    ) -> Decision {
        let current = peek(tx, budget, keys, now).unwrap();
        let mut counts: Vec<Option<i64>> = Vec::new();
        for (window, count) in budget.windows.iter().zip(&current) {
            if *count >= i64::from(window.limit) {
                counts.push(None);
                return budget.decide(&counts, now);
            }
            counts.push(Some(*count));
        }
        let recorded = record(tx, budget, keys, now).unwrap();
        budget.decide(&recorded.into_iter().map(Some).collect::<Vec<_>>(), now)
    }

    fn all_rows(conn: &Connection) -> Vec<(String, i64, i64)> {
        let mut stmt = conn
            .prepare("SELECT bucket, window_start, count FROM rate_limit_counters ORDER BY bucket")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn a_batch_decides_exactly_as_its_spends_one_at_a_time_would() {
        let budget = Budget::search(3, 7);
        let publish = Budget::publish(2, 4);
        let clients: Vec<ClientIp> = ["192.0.2.1", "192.0.2.2", "2001:db8::9"]
            .iter()
            .map(|a| ClientIp::from_addr(a.parse().unwrap()))
            .collect();
        // Three clients, two budgets, clocks crossing minute boundaries and once
        // going back a second (two handlers read the clock in the other order).
        let mut spends = Vec::new();
        for i in 0..60i64 {
            let b = if i % 5 == 4 { &publish } else { &budget };
            let now = T0 + 50 + i / 2 - i64::from(i == 33);
            spends.push((b, b.keys(&clients[(i % 3) as usize]), now));
        }
        let (_d1, mut batched) = db();
        let (_d2, mut single) = db();
        for chunk in spends.chunks(17) {
            let tx = batched.transaction().unwrap();
            let got = spend_batch(&tx, chunk.iter().map(|(b, k, n)| (*b, k, *n))).unwrap();
            tx.commit().unwrap();
            let tx = single.transaction().unwrap();
            let want: Vec<_> = chunk
                .iter()
                .map(|(b, k, n)| one_at_a_time(&tx, b, k, *n))
                .collect();
            tx.commit().unwrap();
            assert_eq!(got, want);
        }
        assert_eq!(all_rows(&batched), all_rows(&single));
        assert!(spends.len() == 60 && all_rows(&batched).len() == 12);
    }

    #[test]
    fn a_batch_past_the_limit_admits_the_first_and_refuses_the_rest_writing_the_limit() {
        let (_d, mut conn) = db();
        let budget = Budget::search(20, 200);
        let keys = budget.keys(&client());
        let tx = conn.transaction().unwrap();
        let decisions = spend_batch(&tx, (0..25).map(|_| (&budget, &keys, T0 + 5))).unwrap();
        tx.commit().unwrap();
        for (i, d) in decisions.iter().enumerate() {
            if i < 20 {
                assert_eq!(counts(d), vec![i as i64 + 1, i as i64 + 1]);
            } else {
                assert_eq!(
                    *d,
                    Decision::Refused {
                        window: 0,
                        retry_after: 55
                    }
                );
            }
        }
        assert_eq!(row(&conn, &keys.0[0]), Some((T0, 20)));
        assert_eq!(row(&conn, &keys.0[1]), Some((T0, 20)));
    }
}
