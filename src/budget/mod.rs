//! Per-client request budgets over fixed windows (SPEC §5 gates 3/4, §9 publish
//! budget, PIN failures): which windows, how a client's bucket keys are made, what a
//! spend decides, and how the `RateLimit` headers say it. Where the counters live
//! is [`store`]'s business: SQLite by default ([`rate_limiter`], the actor that owns
//! the write connection, running [`sqlite`]'s SQL), [`redis`] when configured,
//! [`postgres`] when the pages are there and no Redis is (those two share [`server`]).
//!
//! A budget is data: a key prefix and a list of [`FixedWindow`]s. A spend admits
//! only if every window is under its limit, and then counts one in all of them
//! (both-or-neither, however many windows there are).

pub mod checkpoint;
pub mod error;
pub mod open;
pub mod postgres;
pub mod rate_limiter;
pub mod redis;
pub mod server;
pub mod sqlite;
pub mod store;
mod window;

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

pub use window::FixedWindow;

use crate::client_ip::ClientIp;

/// One budget: the prefix of its bucket keys and its windows, in the order they are
/// checked (the first full one refuses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// Key prefix: a window's key is `hex(SHA-256(prefix + "-" + tag + ":" + ip))`.
    pub prefix: &'static str,
    pub windows: Vec<FixedWindow>,
}

impl Budget {
    /// The search budget of SPEC §5: keys `search-ip-min:` and `search-ip-hour:`.
    pub fn search(per_minute: u32, per_hour: u32) -> Self {
        Self {
            prefix: "search-ip",
            windows: vec![FixedWindow::minute(per_minute), FixedWindow::hour(per_hour)],
        }
    }

    /// The publish budget of SPEC §9 (`publish-ip-min:`, `publish-ip-hour:`).
    pub fn publish(per_minute: u32, per_hour: u32) -> Self {
        Self {
            prefix: "publish-ip",
            windows: vec![FixedWindow::minute(per_minute), FixedWindow::hour(per_hour)],
        }
    }

    /// Failed PIN checks of one client: `limit` an hour, keyed `pin-fail-hour:`.
    pub fn pin_failures(limit: u32) -> Self {
        Self {
            prefix: "pin-fail",
            windows: vec![FixedWindow::hour(limit)],
        }
    }

    /// Failed PIN checks against one page, from any client: `limit` an hour, keyed
    /// `pin-page-hour:` + the page id ([`Budget::keys_of`]), so rotating addresses
    /// (IPv6 /64s, proxies) cannot multiply the guesses a page takes.
    pub fn pin_page_failures(limit: u32) -> Self {
        Self {
            prefix: "pin-page",
            windows: vec![FixedWindow::hour(limit)],
        }
    }

    /// Sets the limit of the window named `name` (`minute`, `hour`, …).
    ///
    /// Panics when the budget has no such window (a programming error).
    pub fn set_limit(&mut self, name: &str, limit: u32) {
        let window = self
            .windows
            .iter_mut()
            .find(|w| w.name == name)
            .unwrap_or_else(|| panic!("no window named {name}"));
        window.limit = limit;
    }

    /// The bucket keys of `client`, one per window in order.
    pub fn keys(&self, client: &ClientIp) -> BucketKeys {
        self.keys_of(&client.to_string())
    }

    /// The bucket keys of `subject` (a client's address text, a page id in
    /// decimal), one per window in order: `hex(SHA-256(prefix + "-" + tag + ":" +
    /// subject))`.
    pub fn keys_of(&self, subject: &str) -> BucketKeys {
        BucketKeys(
            self.windows
                .iter()
                .map(|w| sha256_hex(&[self.prefix, "-", &w.tag, ":", subject]))
                .collect(),
        )
    }

    /// Seconds of the longest window: a counter row is dead this long after its
    /// window started.
    pub fn horizon(&self) -> i64 {
        self.windows.iter().map(|w| w.seconds).max().unwrap_or(0)
    }

    /// `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers): each window's quota
    /// `q` and length `w` in seconds, e.g. `"minute";q=20;w=60, "hour";q=200;w=3600`.
    pub fn policy_header(&self) -> String {
        let mut out = String::with_capacity(24 * self.windows.len());
        for (i, w) in self.windows.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(out, "{sep}\"{}\";q={};w={}", w.name, w.limit, w.seconds);
        }
        out
    }

    /// `RateLimit` for `decision`: every window's remaining quota `r` and seconds `t`
    /// until it ends when admitted; the refusing window with `r=0` and `t` equal to
    /// `Retry-After` when refused.
    pub fn state_header(&self, decision: &Decision) -> String {
        let mut out = String::with_capacity(24 * self.windows.len());
        match decision {
            Decision::Admitted(counts) => {
                for (i, (w, c)) in self.windows.iter().zip(counts).enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    let _ = write!(out, "{sep}\"{}\";r={};t={}", w.name, c.remaining, c.reset);
                }
            }
            Decision::Refused {
                window,
                retry_after,
            } => {
                let _ = write!(
                    out,
                    "\"{}\";r=0;t={retry_after}",
                    self.windows[*window].name
                );
            }
        }
        out
    }

    /// Each window's count of `counts` at `now` (unix seconds of the store's clock),
    /// with what it has left of its limit and of its time.
    pub fn window_counts(&self, counts: &[i64], now: i64) -> Vec<WindowCount> {
        self.windows
            .iter()
            .zip(counts)
            .map(|(w, count)| WindowCount {
                count: *count,
                remaining: (i64::from(w.limit) - count).max(0),
                reset: w.seconds_left(now),
            })
            .collect()
    }

    /// The decision for these windows' new counts at `now` (`None` where a window
    /// was full), as every store reports it.
    pub fn decide(&self, counts: &[Option<i64>], now: i64) -> Decision {
        let mut admitted = Vec::with_capacity(self.windows.len());
        for (i, (w, count)) in self.windows.iter().zip(counts).enumerate() {
            match count {
                Some(count) => admitted.push(WindowCount {
                    count: *count,
                    remaining: (i64::from(w.limit) - count).max(0),
                    reset: w.seconds_left(now),
                }),
                None => {
                    return Decision::Refused {
                        window: i,
                        retry_after: w.seconds_left(now),
                    }
                }
            }
        }
        Decision::Admitted(admitted)
    }
}

/// A client's bucket keys, one per window of its budget, each 64 lowercase hex
/// chars. The raw address never appears in a key, so no store holds IP addresses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BucketKeys(pub Vec<String>);

impl BucketKeys {
    /// The first 12 hex chars of the first key: the only form logs may show.
    pub fn log_prefix(&self) -> &str {
        &self.0[0][..12]
    }
}

/// One window's counter after an admitted spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowCount {
    /// The counter's new value in this window.
    pub count: i64,
    /// Requests still admitted in this window (`limit - count`, at least 0).
    pub remaining: i64,
    /// Seconds until this window ends, at least 1.
    pub reset: i64,
}

/// A [`Decision`] as the store that made it answers it: counts and seconds left
/// by the store's own clock (the Redis server's `TIME`, the process's clock for
/// SQLite), never the caller's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    pub decision: Decision,
    /// For a refusal: how long the refusing window had left when the store read its
    /// clock, rounded down (the decision's `retry_after` is this rounded up to whole
    /// seconds). `None` when admitted.
    pub window_left: Option<std::time::Duration>,
}

/// Whose clock a store counts its windows with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreClock {
    /// The `now` (unix seconds) each call passes: SQLite, where the process's clock
    /// is the store's; Redis in tests that pass a manual clock.
    Caller,
    /// The store's own (Redis `TIME`): the caller's `now` is not used.
    Own,
}

impl Decided {
    /// A decision made with whole seconds `now` of the store's clock: a refusal's
    /// window has exactly `retry_after` seconds left.
    pub fn at_whole_second(decision: Decision) -> Self {
        let window_left = match &decision {
            Decision::Refused { retry_after, .. } => Some(std::time::Duration::from_secs(
                u64::try_from(*retry_after).unwrap_or(0),
            )),
            Decision::Admitted(_) => None,
        };
        Self {
            decision,
            window_left,
        }
    }
}

/// What a spend decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Every window counted one; their new counts, in window order.
    Admitted(Vec<WindowCount>),
    /// Window number `window` is full and nothing was counted; `retry_after` is whole
    /// seconds until it ends, at least 1.
    Refused { window: usize, retry_after: i64 },
}

/// Lowercase hex of SHA-256 over `parts` concatenated.
fn sha256_hex(parts: &[&str]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
    }
    let mut out = String::with_capacity(64);
    for byte in hasher.finalize() {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> ClientIp {
        ClientIp::from_addr("192.0.2.7".parse().unwrap())
    }

    #[test]
    fn search_keys_are_the_specs_hashes() {
        let keys = Budget::search(20, 200).keys(&client());
        assert_eq!(keys.0[0], sha256_hex(&["search-ip-min:", "192.0.2.7"]));
        assert_eq!(keys.0[1], sha256_hex(&["search-ip-hour:", "192.0.2.7"]));
        assert_eq!(keys.log_prefix(), &keys.0[0][..12]);
    }

    #[test]
    fn bucket_keys_are_sha256_of_the_prefixed_ip_text() {
        // Expected values from `printf 'search-ip-min:1.2.3.4' | sha256sum` and friends.
        let search = Budget::search(20, 200);
        let v4 = search.keys(&ClientIp::from_addr("1.2.3.4".parse().unwrap()));
        assert_eq!(
            v4.0,
            [
                "a19a06b13e1036d34d55b64373806541b150e2cfec384dbb60fa4ad4c780617d",
                "803d4bc0b70d3a7318bd39459caee98a50472df86db252de5c96fa4651c9bb5d"
            ]
        );
        assert_eq!(v4.log_prefix(), "a19a06b13e10");
        let v6 = search.keys(&ClientIp::from_addr("2001:db8:1:2::42".parse().unwrap()));
        assert_eq!(
            v6.0[0],
            "9d96ff43f90188a68e10aeb8608c313a9ff830d076d84b55b1cc1a8a7a47e997"
        );
    }

    #[test]
    fn a_pages_failure_key_is_the_hash_of_its_id_under_pin_page_hour() {
        let keys = Budget::pin_page_failures(20).keys_of("42");
        assert_eq!(keys.0, [sha256_hex(&["pin-page-hour:42"])]);
        // Not any client's key: an address never looks like a page id's key.
        assert_ne!(keys, Budget::pin_failures(20).keys_of("42"));
    }

    #[test]
    fn budgets_of_one_client_never_share_a_key() {
        let mut all: Vec<String> = [
            Budget::search(1, 1),
            Budget::publish(1, 1),
            Budget::pin_failures(1),
            Budget::pin_page_failures(1),
        ]
        .iter()
        .flat_map(|b| b.keys(&client()).0)
        .collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n);
    }

    #[test]
    fn headers_format_every_window_admitted_and_the_refusing_one_refused() {
        let budget = Budget::search(20, 200);
        let now = 1_800_000_015;
        let admitted = budget.decide(&[Some(1), Some(1)], now);
        assert_eq!(
            budget.state_header(&admitted),
            "\"minute\";r=19;t=45, \"hour\";r=199;t=3585"
        );
        let refused = budget.decide(&[Some(1), None], now);
        assert_eq!(
            refused,
            Decision::Refused {
                window: 1,
                retry_after: 3585
            }
        );
        assert_eq!(budget.state_header(&refused), "\"hour\";r=0;t=3585");
        assert_eq!(
            budget.policy_header(),
            "\"minute\";q=20;w=60, \"hour\";q=200;w=3600"
        );
    }

    #[test]
    fn the_horizon_is_the_longest_window() {
        let mut budget = Budget::search(1, 1);
        assert_eq!(budget.horizon(), 3600);
        budget.windows.push(FixedWindow::new("day", 86_400, 1000));
        assert_eq!(budget.horizon(), 86_400);
    }
}
