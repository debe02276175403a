//! Keeping a working connection to the Redis server ([`Link`]), for the counters of
//! [`super`].
//!
//! redis-rs's `ConnectionManager` remakes a connection that dropped.
//! It keeps one that answers, though, even when every answer is a fault the server
//! will not fix by itself on that connection; [`Link`] replaces those:
//! - an authentication failure (the handshake refused, `NOAUTH`, `WRONGPASS`): the
//!   password changed, or the server came back requiring one;
//! - a wrong role (`READONLY`, `MASTERDOWN`): the address now leads to a replica
//!   (a failover behind one DNS name, VIP or Service, or a start against a
//!   replica); a new connection reaches whichever server the address leads to now;
//! - silence: a call ran out its deadline and nothing came back on the connection
//!   for [`SILENT_LIMIT`] (a half-open connection to a host that vanished, which
//!   TCP would only notice after many minutes).
//!
//! Faults the server fixes by itself (`LOADING`, `BUSY`, `OOM`, `NOPERM` after an
//! ACL edit, which Redis applies to open connections) keep the connection. A
//! replacement is bounded: the first of an incident is made at once, each further
//! one waits twice as long as the one before, from [`MIN_BACKOFF`] up to
//! [`MAX_BACKOFF`], back to the start after an answer. So a server whose fault was
//! fixed is reached again within [`MAX_BACKOFF`] plus one connect (driven by
//! requests, or by `/readyz`, whose check is a write through the same path), and a
//! broken one sees at most one new connection every [`MAX_BACKOFF`] per replica.
//! Every call that met the fault is answered 503 `budget-unavailable`.
//!
//! A connection is also checked while no request uses it ([`LINK_CHECK_INTERVAL`],
//! a `PING` noted as a call is): a replica with no traffic while Redis restarted
//! has its connection remade in the background, so its first search afterwards is
//! served rather than spent on discovering the dead connection.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::{ErrorKind, RedisError};

/// The pause after a connection replacement before the second of an incident;
/// it doubles with each further one.
pub const MIN_BACKOFF: Duration = Duration::from_millis(100);

/// The longest pause between two replacements: a broken server sees at most one
/// new connection this often from each replica, and a fixed one is reached again
/// at most this long after the fix (plus one connect).
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// A call that ran out its deadline replaces its connection when nothing at all
/// came back on that connection for this long: the connection is taken for dead.
pub const SILENT_LIMIT: Duration = Duration::from_secs(1);

/// How often the connection is checked while no request uses it: a replica that
/// had no request while Redis restarted is connected again about this long after
/// Redis is back.
pub const LINK_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// The connection in use, and when a faulty one may be replaced (see the module
/// docs: which answers replace it, and the backoff).
pub(super) struct Link {
    client: ::redis::Client,
    config: ConnectionManagerConfig,
    state: Mutex<LinkState>,
}

struct LinkState {
    connection: ConnectionManager,
    /// Replacements so far: a fault seen on an older connection never replaces a
    /// newer one.
    generation: u64,
    /// The last answer of any kind on this connection, or when it was made.
    last_answer: Instant,
    /// No replacement before this moment.
    next_replacement: Instant,
    /// The pause after the next replacement.
    backoff: Duration,
}

impl Link {
    pub(super) fn new(
        client: ::redis::Client,
        config: ConnectionManagerConfig,
    ) -> Result<Self, RedisError> {
        let connection = ConnectionManager::new_lazy_with_config(client.clone(), config.clone())?;
        let now = Instant::now();
        Ok(Self {
            client,
            config,
            state: Mutex::new(LinkState {
                connection,
                generation: 0,
                last_answer: now,
                next_replacement: now,
                backoff: MIN_BACKOFF,
            }),
        })
    }

    /// How many connections were made to replace a faulty one so far.
    pub(super) fn replacements(&self) -> u64 {
        self.state.lock().map(|s| s.generation).unwrap_or(0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LinkState> {
        // The state stays consistent whatever panicked while it was held.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The connection to call on, and its generation.
    pub(super) fn current(&self) -> (ConnectionManager, u64) {
        let state = self.lock();
        (state.connection.clone(), state.generation)
    }

    /// The call on connection `generation` was answered: it works.
    pub(super) fn answered(&self, generation: u64) {
        let mut state = self.lock();
        if state.generation == generation {
            state.last_answer = Instant::now();
            state.backoff = MIN_BACKOFF;
        }
    }

    /// The call on connection `generation` failed with `e`.
    pub(super) fn failed(&self, generation: u64, e: &RedisError) {
        if let Some(reason) = needs_new_connection(e) {
            self.replace(generation, reason);
        } else if e.code().is_some() {
            // An error answer of the server (LOADING, NOPERM, …): it is alive.
            let mut state = self.lock();
            if state.generation == generation {
                state.last_answer = Instant::now();
            }
        }
    }

    /// The call on connection `generation` ran out its deadline.
    pub(super) fn ran_out(&self, generation: u64) {
        let silent = self.lock().last_answer.elapsed();
        if silent >= SILENT_LIMIT {
            self.replace(
                generation,
                "no answer on the connection for a second or more",
            );
        }
    }

    /// Replaces connection `generation` by a new (lazy) one, unless it was replaced
    /// already or the backoff says not yet.
    fn replace(&self, generation: u64, reason: &'static str) {
        let mut state = self.lock();
        let now = Instant::now();
        if state.generation != generation || now < state.next_replacement {
            return;
        }
        match ConnectionManager::new_lazy_with_config(self.client.clone(), self.config.clone()) {
            Ok(connection) => {
                let first_of_incident = state.backoff == MIN_BACKOFF;
                state.connection = connection;
                state.generation += 1;
                state.last_answer = now;
                state.next_replacement = now + state.backoff;
                state.backoff = (state.backoff * 2).min(MAX_BACKOFF);
                if first_of_incident {
                    tracing::warn!(
                        reason,
                        replacement = state.generation,
                        "replacing the Redis connection: a new one may reach a server that can count"
                    );
                } else {
                    tracing::debug!(
                        reason,
                        replacement = state.generation,
                        "replacing the Redis connection again"
                    );
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot make a new Redis connection"),
        }
    }
}

/// Pings the server through `link` every [`LINK_CHECK_INTERVAL`] until the counters
/// are dropped, each ping bounded by `call_timeout` and its outcome noted as a
/// call's would be. A connection that died while no request came (Redis restarted,
/// a failover) is then remade by the client in the background, so the first search
/// after the server is back finds a working connection instead of discovering the
/// dead one and being refused (Issue 31 §2). No budget call is ever retried: a
/// spend runs once or not at all.
pub(super) async fn check_link(link: std::sync::Weak<Link>, call_timeout: Duration) {
    loop {
        tokio::time::sleep(LINK_CHECK_INTERVAL).await;
        let Some(link) = link.upgrade() else { return };
        let (mut connection, generation) = link.current();
        let command = ::redis::cmd("PING");
        let ping = command.query_async::<String>(&mut connection);
        match tokio::time::timeout(call_timeout, ping).await {
            Err(_) => link.ran_out(generation),
            Ok(Err(e)) => link.failed(generation, &e),
            Ok(Ok(_)) => link.answered(generation),
        }
    }
}

/// Why `e` means its connection must be replaced, or `None` when the server (or
/// the client's own reconnect, for a dropped connection) sets it right by itself.
fn needs_new_connection(e: &RedisError) -> Option<&'static str> {
    if e.kind() == ErrorKind::AuthenticationFailed {
        return Some("the server refused the password (AUTH)");
    }
    match e.code()? {
        "NOAUTH" => Some("the server requires a password (NOAUTH)"),
        "WRONGPASS" => Some("the server refused the password (WRONGPASS)"),
        "READONLY" => Some("the server is a read-only replica (READONLY)"),
        "MASTERDOWN" => Some("the server is a replica without its primary (MASTERDOWN)"),
        _ => None,
    }
}
