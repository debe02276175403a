//! The budget counters in Redis (or Valkey), shared by every replica that points at
//! the same server (`AGENT_PAGES_REDIS_URL`, SPEC §9 "Shared budget store").
//!
//! One server-side Lua script ([`SCRIPT`]) does every operation in one atomic step:
//! it reads all of a budget's window counters, and for a spend increments all of them
//! only if all are under their limits (both-or-neither across replicas), setting each
//! key's expiry to the end of its window. Windows are aligned to the Unix epoch with
//! the Redis server's own clock (`TIME` inside the script), so replicas whose clocks
//! drift still agree on where a window starts.
//!
//! Keys: every key of one call carries the same hash tag, the first 16 hex chars of
//! the client's first bucket key, so a call never spans Redis Cluster slots:
//! `agent-pages:{<16 hex>}:<bucket key hex>`. The value is `"<window start>:<count>"`;
//! a value of an ended window counts as 0 and is overwritten on the next write, and
//! an untouched key expires at its window's end, so nothing needs sweeping.
//!
//! A call never waits long: the client retries a connection once after 5–10 ms,
//! with 2 × the call deadline as its own connect and response timeouts, and every
//! call is cut off at the call deadline ([`DEFAULT_CALL_TIMEOUT`], or
//! `AGENT_PAGES_REDIS_TIMEOUT_MS`) as unavailable ([`BudgetStoreError::unavailable`]). The connection
//! is made lazily on the first call, so the service starts while Redis is down.
//!
//! **Recovery.** A connection that keeps answering with faults the server will not
//! fix by itself, or stays silent, is replaced, with a backoff; one that no request
//! uses is checked in the background (`redis/link.rs`).
//!
//! `rediss://` connects over TLS (rustls with ring), verifying the server against
//! the system's root certificates, or those in `SSL_CERT_FILE` / `SSL_CERT_DIR`.

use std::sync::Arc;
use std::time::Duration;

use ::redis::aio::ConnectionManagerConfig;
use ::redis::{ErrorKind, RedisError, Script};

use futures_util::FutureExt as _;

use super::error::BudgetStoreError;
use super::server::{Answer, Mode, ServerCounters};
use super::store::{Ask, BudgetFuture};

mod link;

use link::{check_link, Link};
pub use link::{LINK_CHECK_INTERVAL, MAX_BACKOFF, MIN_BACKOFF, SILENT_LIMIT};

/// How long one Redis call may take before the request is answered without it.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_millis(50);

/// The pause before the client's single connection retry.
const RETRY_DELAY: Duration = Duration::from_millis(5);

/// The one script behind spend, peek and record.
///
/// `KEYS`: one per window, in the budget's order. `ARGV[1]`: `spend`, `peek` or
/// `record`. `ARGV[2]`: the caller's unix seconds, or empty to use the server's
/// `TIME`. Then per window `i` (1-based): `ARGV[1 + 2i]` its length in seconds and
/// `ARGV[2 + 2i]` its limit.
///
/// Returns `{now, micros, refused, count_1, …, count_n}`: the unix seconds the
/// windows were aligned with and the microseconds past that second (`TIME`'s two
/// parts; 0 with a caller's time), the 1-based number of the first full window when
/// a spend was refused (0 otherwise), and each window's count after the operation.
/// Everything the caller reports (seconds left, `Retry-After`, how long a refusal
/// is remembered) is derived from these, so it is in the server's time.
pub const SCRIPT: &str = r#"
local mode = ARGV[1]
local now = tonumber(ARGV[2])
local micros = 0
if not now then
  local time = redis.call('TIME')
  now = tonumber(time[1])
  micros = tonumber(time[2])
end
local n = #KEYS
local starts, counts, lefts = {}, {}, {}
local refused = 0
for i = 1, n do
  local seconds = tonumber(ARGV[1 + 2 * i])
  local limit = tonumber(ARGV[2 + 2 * i])
  local start = now - (now % seconds)
  local count = 0
  local value = redis.call('GET', KEYS[i])
  if value then
    local s, c = string.match(value, '^(-?%d+):(%d+)$')
    if s and tonumber(s) == start then
      count = tonumber(c)
    end
  end
  starts[i] = start
  counts[i] = count
  lefts[i] = start + seconds - now
  if mode == 'spend' and refused == 0 and count >= limit then
    refused = i
  end
end
if mode ~= 'peek' and refused == 0 then
  for i = 1, n do
    counts[i] = counts[i] + 1
    redis.call('SET', KEYS[i], string.format('%d:%d', starts[i], counts[i]), 'EX', lefts[i])
  end
end
local out = {now, micros, refused}
for i = 1, n do
  out[3 + i] = counts[i]
end
return out
"#;

/// Where and how to reach the shared store.
#[derive(Clone, Debug)]
pub struct RedisSettings {
    /// `redis://[user:password@]host[:port][/db]`, or `rediss://…` for TLS
    /// (verified against the system's root certificates; `SSL_CERT_FILE` names
    /// others). Valkey accepts the same. Holds the password, so it is never logged.
    pub url: SecretUrl,
    /// The deadline of one call (connection included); past it the caller gets
    /// an unavailable [`BudgetStoreError`].
    pub call_timeout: Duration,
    /// `true` (the service): windows are aligned with the Redis server's clock.
    /// `false`: with the `now` each caller passes (tests with a manual clock).
    pub server_clock: bool,
}

/// A URL that may hold a password: its `Debug` shows `"<redacted>"`, so settings
/// holding one can be logged whole.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretUrl(String);

impl SecretUrl {
    /// The URL itself, for the client that connects with it (never for a log).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt("<redacted>", f)
    }
}

impl RedisSettings {
    /// Settings for `url` with the default deadline and the server's clock.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: SecretUrl(url.into()),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            server_clock: true,
        }
    }

    /// Checks that `url` is one this build can connect to (no I/O). Errors: the
    /// reason, without the URL (it may hold a password).
    pub fn check_url(url: &str) -> Result<(), String> {
        let scheme = url.split("://").next().unwrap_or("");
        if !matches!(scheme, "redis" | "rediss" | "valkey" | "valkeys") {
            return Err(
                "must start with redis:// or rediss:// (TLS), e.g. redis://host:6379/0".into(),
            );
        }
        ::redis::Client::open(url)
            .map(drop)
            .map_err(|e| format!("not a Redis URL ({})", e.detail().unwrap_or("invalid")))
    }

    /// Where the server is, without credentials: `host:port/db`, for logs.
    pub fn describe(&self) -> String {
        match ::redis::Client::open(self.url.as_str()) {
            Ok(client) => format!(
                "{}/{}",
                client.get_connection_info().addr(),
                client.get_connection_info().redis_settings().db()
            ),
            Err(_) => "<invalid>".into(),
        }
    }
}

/// The handle on the Redis counters; cheap to clone.
#[derive(Clone)]
pub struct RedisCounters {
    link: Arc<Link>,
    script: Script,
    call_timeout: Duration,
    server_clock: bool,
}

impl RedisCounters {
    /// A handle that connects on its first call (no I/O here, so the service starts
    /// while Redis is down). Call inside a Tokio runtime.
    ///
    /// Errors: `settings.url` is not a usable Redis URL.
    pub fn connect_lazily(settings: &RedisSettings) -> Result<Self, RedisError> {
        let client = ::redis::Client::open(settings.url.as_str())?;
        let inner = settings.call_timeout * 2;
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(1)
            // Reconnecting while Redis is down: one more try soon after the first, so
            // the connection a waiting call shares fails (or succeeds) well inside
            // its deadline.
            .set_min_delay(RETRY_DELAY)
            .set_max_delay(RETRY_DELAY * 2)
            .set_connection_timeout(Some(inner))
            .set_response_timeout(Some(inner));
        let link = Arc::new(Link::new(client, config)?);
        tokio::spawn(check_link(Arc::downgrade(&link), settings.call_timeout));
        Ok(Self {
            link,
            script: Script::new(SCRIPT),
            call_timeout: settings.call_timeout,
            server_clock: settings.server_clock,
        })
    }

    /// How many connections were made to replace a faulty one so far.
    pub fn replacements(&self) -> u64 {
        self.link.replacements()
    }

    /// One run of the script for `ask`.
    async fn run(&self, mode: Mode, ask: Ask<'_>) -> Result<Answer, BudgetStoreError> {
        let keys = &ask.keys.0;
        let mut invocation = self.script.prepare_invoke();
        for key in keys {
            invocation.key(key_name(&keys[0], key));
        }
        invocation.arg(mode.name());
        if self.server_clock {
            invocation.arg("");
        } else {
            invocation.arg(ask.now);
        }
        for window in &ask.budget.windows {
            invocation.arg(window.seconds).arg(window.limit);
        }
        let (mut connection, generation) = self.link.current();
        let reply: Vec<i64> =
            match tokio::time::timeout(self.call_timeout, invocation.invoke_async(&mut connection))
                .await
            {
                Err(_) => {
                    self.link.ran_out(generation);
                    return Err(BudgetStoreError::unavailable(format!(
                        "Redis did not answer within {} ms",
                        self.call_timeout.as_millis()
                    )));
                }
                Ok(Err(e)) => {
                    self.link.failed(generation, &e);
                    return Err(classify(e));
                }
                Ok(Ok(reply)) => {
                    self.link.answered(generation);
                    reply
                }
            };
        let n = ask.budget.windows.len();
        if reply.len() != n + 3 || reply[2] < 0 || reply[2] as usize > n {
            return Err(BudgetStoreError::bug(format!(
                "the budget script answered {} values for {n} windows",
                reply.len()
            )));
        }
        Ok(Answer {
            now: reply[0],
            micros: reply[1].clamp(0, 999_999),
            refused: (reply[2] > 0).then(|| reply[2] as usize - 1),
            counts: reply[3..].to_vec(),
        })
    }
}

impl ServerCounters for RedisCounters {
    const KIND: &'static str = "redis";

    fn server_clock(&self) -> bool {
        self.server_clock
    }

    fn call<'a>(&'a self, mode: Mode, ask: Ask<'a>) -> BudgetFuture<'a, (Answer, Option<i64>)> {
        // Redis knows nothing of the corpus: the search reads the generation.
        async move { Ok((self.run(mode, ask).await?, None)) }.boxed()
    }

    fn sweep(&self, _now: i64, _horizon: i64) -> BudgetFuture<'_, usize> {
        // Every Redis key expires at the end of its window.
        async { Ok(0) }.boxed()
    }
}

/// The Redis key of bucket `key` of a client whose first bucket key is `first`: all
/// of a call's keys share `first`'s hash tag (one Cluster slot).
pub fn key_name(first: &str, key: &str) -> String {
    format!("agent-pages:{{{}}}:{key}", &first[..16.min(first.len())])
}

/// A failure of the server or the connection is unavailability (503); an answer
/// this code cannot read is a bug (500).
fn classify(e: RedisError) -> BudgetStoreError {
    match e.kind() {
        ErrorKind::Parse | ErrorKind::UnexpectedReturnType => BudgetStoreError::bug(e.to_string()),
        _ => BudgetStoreError::unavailable(format!("Redis: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_one_call_share_the_first_keys_hash_tag() {
        let first = "a19a06b13e1036d34d55b64373806541b150e2cfec384dbb60fa4ad4c780617d";
        let second = "803d4bc0b70d3a7318bd39459caee98a50472df86db252de5c96fa4651c9bb5d";
        assert_eq!(
            key_name(first, first),
            format!("agent-pages:{{a19a06b13e1036d3}}:{first}")
        );
        assert_eq!(
            key_name(first, second),
            format!("agent-pages:{{a19a06b13e1036d3}}:{second}")
        );
    }

    #[test]
    fn only_redis_urls_are_accepted_and_the_reason_never_repeats_the_url() {
        assert!(RedisSettings::check_url("redis://127.0.0.1:6379/0").is_ok());
        assert!(RedisSettings::check_url("redis://:s3cret@cache:6379").is_ok());
        assert!(RedisSettings::check_url("valkey://cache").is_ok());
        assert!(RedisSettings::check_url("rediss://:s3cret@cache:6380/0").is_ok());
        for bad in [
            "http://:s3cret@cache",
            "redis+unix:///run/redis.sock",
            "s3cret",
            "redis://:s3cret@cache:6379/notanumber",
        ] {
            let reason = RedisSettings::check_url(bad).unwrap_err();
            assert!(!reason.contains("s3cret"), "{bad}: {reason}");
        }
    }

    #[test]
    fn settings_never_show_the_url() {
        let s = RedisSettings::new("redis://:s3cret@cache:6379/2");
        assert_eq!(
            format!("{s:?}"),
            "RedisSettings { url: \"<redacted>\", call_timeout: 50ms, server_clock: true }"
        );
        assert_eq!(s.describe(), "cache:6379/2");
    }
}
