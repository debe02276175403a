//! PostgreSQL access (`AGENT_PAGES_DATABASE_URL`), shared by the page store and the
//! budget store that live there: the settings and their URL, TLS, a bounded pool,
//! calls with deadlines, and what each failure means ([`PgError`]). The SQL of each
//! store is its own module's ([`crate::page_store::postgres`],
//! [`crate::budget::postgres`]); the schema is [`migrations`]'.
//!
//! Every call is bounded: the server cancels a statement after the deadline
//! (`statement_timeout`, and `lock_timeout` for lock waits), and the client gives up
//! on the whole call at 1.5 × the deadline, so a frozen server (or network) cannot
//! hold request handlers. A connection that failed in a way the server will not
//! repair by itself is dropped, never handed out again: closed or broken, the server
//! shutting down, a primary demoted behind the same address (SQLSTATE 25006, "read-only
//! transaction"), an authentication failure, a call cut off by the client. New
//! connections go to a server that accepts writes only (`target_session_attrs=
//! read-write`), so after a failover the pool reaches the new primary by itself.

pub mod migrations;

use std::str::FromStr as _;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod};
use futures_util::future::BoxFuture;
use tokio_postgres::config::{SslMode, TargetSessionAttrs};

/// Connections of the control pool: the budget calls and the generation reads,
/// apart from the page pool so writes holding every page connection never hold a
/// search up.
pub const CONTROL_CONNECTIONS: usize = 2;

/// Which history the corpus generations read last belong to (Issue 31 §1): the
/// database's `corpus_epoch()` (`migrations/postgres/0003_corpus_history.sql`: a
/// random id written with the schema and by `copy`, the database's OID, the
/// `corpus_generation` table's OID and the server's start time, hashed to 64 bits),
/// changed again each time a reader sees the generation go backwards within one
/// history (a restore that kept all four). Shared by every task that reads the
/// generation (the generation reader, the budget batches); each keeps its own
/// [`LastRead`], since only one task's reads are in order.
#[derive(Clone, Default)]
pub struct Epoch(Arc<EpochCell>);

#[derive(Default)]
struct EpochCell {
    /// The value [`Epoch::get`] answers.
    value: std::sync::atomic::AtomicU64,
    /// Generations seen going backwards, ever; mixed into `value`. Updated with
    /// `value` under this lock, so a reader that saw no rewind never stores a value
    /// without one another reader counted.
    rewinds: std::sync::Mutex<u64>,
}

/// What one reader saw last: the history and the generation, in read order (each
/// read starts after the one before it answered, so within one history its
/// generations never go down).
#[derive(Debug, Default)]
pub struct LastRead(Option<(i64, i64)>);

impl Epoch {
    /// Notes a read of `generation` in `history` (`corpus_epoch()`) by the reader
    /// whose previous read is `last`.
    pub fn saw(&self, last: &mut LastRead, history: i64, generation: i64) {
        use std::sync::atomic::Ordering;
        let mut rewinds = self.0.rewinds.lock().expect("epoch lock poisoned");
        if let Some((seen, before)) = last.0 {
            if seen == history && generation < before {
                *rewinds += 1;
                tracing::warn!(
                    generation,
                    before,
                    "the corpus generation went backwards: a new history (a restore)"
                );
            }
        }
        last.0 = Some((history, generation));
        let value = (history as u64) ^ rewinds.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0.value.store(value, Ordering::Release);
    }

    /// The history of the generations read last (0 before any read).
    pub fn get(&self) -> u64 {
        self.0.value.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// How long one statement may take unless `AGENT_PAGES_DATABASE_TIMEOUT_MS` says
/// otherwise.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_millis(2000);

/// Connections in the pool unless `AGENT_PAGES_DATABASE_POOL` says otherwise.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// How long a transaction may sit idle before the server ends it (a client that
/// froze mid-transaction must not hold the generation counter's lock for ever).
const IDLE_IN_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the PostgreSQL server is and how to talk to it.
#[derive(Clone)]
pub struct PgSettings {
    /// `postgres://` or `postgresql://` URL, as given (it may hold a password: never
    /// logged, never shown).
    url: String,
    /// The URL without `sslmode`, parsed.
    config: tokio_postgres::Config,
    /// `require`, `verify-ca` or `verify-full`: TLS, verified against the system's
    /// roots (or `SSL_CERT_FILE`) and the host name; else plain TCP.
    tls: bool,
    /// Connections at most.
    pub pool_size: usize,
    /// The deadline of one statement (server side) and, × 1.5, of one call.
    pub statement_timeout: Duration,
    /// `true` (the service): budget windows kept here follow the database server's
    /// clock. `false`: the `now` each caller passes (tests with a manual clock).
    pub server_clock: bool,
}

impl std::fmt::Debug for PgSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSettings")
            .field("url", &"<redacted>")
            .field("server", &self.describe())
            .field("tls", &self.tls)
            .field("pool_size", &self.pool_size)
            .field("statement_timeout", &self.statement_timeout)
            .finish()
    }
}

impl PgSettings {
    /// Settings for `url` with the default pool size and deadline.
    ///
    /// Errors: the reason `url` is not a usable PostgreSQL URL, without the URL or
    /// any part of its credentials.
    pub fn parse(url: &str) -> Result<Self, String> {
        let url = url.trim();
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(SCHEME_HINT.into());
        };
        if !matches!(scheme, "postgres" | "postgresql") {
            return Err(SCHEME_HINT.into());
        }
        let secret = credentials(rest);
        let hide = |reason: String| {
            if secret.is_empty() || !reason.contains(secret) {
                reason
            } else {
                "invalid".to_owned()
            }
        };
        let (without_ssl, sslmode) = take_param(url, "sslmode");
        let tls = match sslmode.as_deref() {
            None | Some("disable") | Some("allow") | Some("prefer") => false,
            Some("require") | Some("verify-ca") | Some("verify-full") => true,
            Some(other) => {
                return Err(hide(format!(
                    "sslmode must be disable, require, verify-ca or verify-full, got {other:?}"
                )))
            }
        };
        let mut config = tokio_postgres::Config::from_str(&without_ssl)
            .map_err(|e| hide(format!("not a PostgreSQL URL ({e})")))?;
        if config.get_hosts().is_empty() {
            return Err("the URL names no host, e.g. postgres://user@db:5432/pages".into());
        }
        if config.get_dbname().is_none() {
            return Err("the URL names no database, e.g. postgres://user@db:5432/pages".into());
        }
        config.ssl_mode(if tls {
            SslMode::Require
        } else {
            SslMode::Disable
        });
        Ok(Self {
            url: url.to_owned(),
            config,
            tls,
            pool_size: DEFAULT_POOL_SIZE,
            statement_timeout: DEFAULT_STATEMENT_TIMEOUT,
            server_clock: true,
        })
    }

    /// Where the server is, without credentials: `host:port/db`, for logs.
    pub fn describe(&self) -> String {
        let host = match self.config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
            #[cfg(unix)]
            Some(tokio_postgres::config::Host::Unix(p)) => p.display().to_string(),
            None => "?".into(),
        };
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        let db = self.config.get_dbname().unwrap_or("?");
        format!("{host}:{port}/{db}")
    }

    /// The URL as given (holds the password: for child processes of tests and
    /// commands that pass it on, never for logs).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether connections use TLS.
    pub fn tls(&self) -> bool {
        self.tls
    }

    /// The client-side deadline of one call.
    pub fn call_timeout(&self) -> Duration {
        self.statement_timeout + self.statement_timeout / 2
    }

    /// The connection settings: the URL's, plus the deadlines as server settings,
    /// a connect timeout, and writable servers only.
    fn connection_config(&self) -> tokio_postgres::Config {
        let mut config = self.config.clone();
        let ms = self.statement_timeout.as_millis();
        let options = format!(
            "{} -c statement_timeout={ms} -c lock_timeout={ms} \
             -c idle_in_transaction_session_timeout={}",
            config.get_options().unwrap_or(""),
            IDLE_IN_TRANSACTION_TIMEOUT.as_millis()
        );
        config.options(options.trim());
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(self.statement_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("agent-pages");
        }
        if config.get_target_session_attrs() == TargetSessionAttrs::Any {
            config.target_session_attrs(TargetSessionAttrs::ReadWrite);
        }
        config
    }
}

const SCHEME_HINT: &str =
    "must start with postgres:// or postgresql://, e.g. postgres://user:password@db:5432/pages";

/// The `user:password` part of `rest` (what follows `scheme://`), or "".
fn credentials(rest: &str) -> &str {
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    authority
        .rsplit_once('@')
        .map_or("", |(userinfo, _)| userinfo)
}

/// `url` without the query parameter `name`, and its value.
fn take_param(url: &str, name: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_owned(), None);
    };
    let mut value = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.split_once('=') {
            Some((key, v)) if key == name => {
                value = Some(v.to_owned());
                false
            }
            _ => !pair.is_empty(),
        })
        .collect();
    if kept.is_empty() {
        (base.to_owned(), value)
    } else {
        (format!("{base}?{}", kept.join("&")), value)
    }
}

/// What a failed PostgreSQL call means for the request that made it. The text is
/// for logs (it never holds the URL); answers show only the kind.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PgError {
    /// No connection: the server refused or did not take it (not running, starting
    /// up, unreachable). Answered as [`PgError::Unavailable`]; start-up waits for it
    /// to pass.
    #[error("PostgreSQL does not take connections: {0}")]
    Down(String),
    /// No answer now: the server is down, unreachable, frozen, shutting down, read-only
    /// (demoted), refuses the credentials, or out of disk or connections. Answer 503;
    /// it may pass by itself.
    #[error("PostgreSQL unavailable: {0}")]
    Unavailable(String),
    /// A lock was held, or a statement ran, past the deadline, two writers
    /// collided (serialization failure, deadlock), or every pooled connection
    /// stayed in use past the deadline: retry in a second.
    #[error("PostgreSQL busy: {0}")]
    Busy(String),
    /// The server refused the statement itself (a bug, corruption): answer 500.
    #[error("PostgreSQL: {0}")]
    Failed(String),
}

/// What `e` means, and whether the connection that returned it must go.
fn classify(e: &tokio_postgres::Error) -> (PgError, bool) {
    let text = e.to_string();
    let Some(code) = e.code() else {
        // The causes too: "error performing TLS handshake" alone does not say that
        // the certificate was not trusted. None of them holds the URL.
        let text = with_causes(e);
        // I/O, TLS, a closed connection, a connect timeout: the connection is gone.
        if refused_or_unreachable(e) {
            return (PgError::Down(text), true);
        }
        return (PgError::Unavailable(text), true);
    };
    let code = code.code();
    let detail = match e.as_db_error() {
        Some(db) => format!("{text}: {} (SQLSTATE {code})", db.message()),
        None => format!("{text} (SQLSTATE {code})"),
    };
    match code {
        // The server is starting up, shutting down or in recovery (before the
        // 57P class below, which would take it); or it has no connection slot free
        // for us (too many connections for the server, the database or the role,
        // before the 53 class below): it takes none now, as one not up yet, and
        // start-up waits for it the same way (Issue 31 §3).
        "57P03" | "53300" => (PgError::Down(detail), true),
        // Connection exceptions, admin/crash shutdown, cannot connect now, a demoted
        // primary (read-only transaction), authentication and authorization.
        c if c.starts_with("08") || c.starts_with("57P") || c.starts_with("28") => {
            (PgError::Unavailable(detail), true)
        }
        "25006" => (PgError::Unavailable(detail), true),
        // Insufficient resources (disk full, out of memory, too many connections),
        // I/O errors, a database that does not exist (yet).
        c if c.starts_with("53") || c.starts_with("58") || c == "3D000" => {
            (PgError::Unavailable(detail), false)
        }
        // Statement or lock timeout, lock not available, serialization failure,
        // deadlock: another writer held us up.
        "57014" | "55P03" | "40001" | "40P01" => (PgError::Busy(detail), false),
        _ => (PgError::Failed(detail), false),
    }
}

/// `e` and each of its sources, joined by ": ".
fn with_causes(e: &tokio_postgres::Error) -> String {
    use std::error::Error as _;
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

/// Whether connecting failed because nothing took the connection (refused, timed
/// out, reset, the host unknown): what a server that is not up yet looks like.
fn refused_or_unreachable(e: &tokio_postgres::Error) -> bool {
    use std::error::Error as _;
    use std::io::ErrorKind;
    if e.to_string().contains("timed out") {
        return true;
    }
    let mut cause = e.source();
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::TimedOut
                    | ErrorKind::NotFound
                    | ErrorKind::AddrNotAvailable
                    | ErrorKind::HostUnreachable
                    | ErrorKind::NetworkUnreachable
            ) || io.to_string().contains("failed to lookup address");
        }
        cause = c.source();
    }
    false
}

impl PgError {
    /// Whether the server is simply not there yet ([`PgError::Down`]).
    pub fn is_down(&self) -> bool {
        matches!(self, PgError::Down(_))
    }

    /// The kind of a failed statement.
    pub fn of(e: &tokio_postgres::Error) -> Self {
        classify(e).0
    }

    fn of_pool(e: PoolError) -> Self {
        match e {
            PoolError::Backend(e) => Self::of(&e),
            PoolError::Timeout(deadpool_postgres::TimeoutType::Create) => {
                Self::Down("connecting took longer than the deadline".into())
            }
            // Every connection of the pool is in use by this process's own calls
            // (each bounded by the deadline): the database answers, it is busy
            // (Issue 31 §3).
            PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => {
                Self::Busy("no pooled database connection came free within the deadline".into())
            }
            PoolError::Timeout(kind) => {
                Self::Unavailable(format!("no database connection in time ({kind:?})"))
            }
            PoolError::Closed => Self::Failed("the connection pool is closed".into()),
            other => Self::Unavailable(other.to_string()),
        }
    }
}

/// A call on one pooled connection: gets a future that uses the client.
pub type Call<'c, T> = BoxFuture<'c, Result<T, CallError>>;

/// Why a call failed: a statement, or what the call itself found.
#[derive(Debug)]
pub enum CallError {
    /// A statement failed (classified by its SQLSTATE).
    Pg(tokio_postgres::Error),
    /// The connection answers but must not be used: it reaches a server in
    /// recovery (a standby, or a demoted primary). Unavailable; the connection goes.
    Stale(&'static str),
}

impl From<tokio_postgres::Error> for CallError {
    fn from(e: tokio_postgres::Error) -> Self {
        CallError::Pg(e)
    }
}

/// A cheap, cloneable handle on the pool.
#[derive(Clone)]
pub struct Pg {
    pool: Pool,
    settings: Arc<PgSettings>,
}

impl Pg {
    /// A pool that connects on first use (no I/O here, so the service starts while
    /// the server is down). Call inside a Tokio runtime.
    ///
    /// Errors: the system's root certificates cannot be read for TLS, or the pool
    /// cannot be built.
    pub fn connect_lazily(settings: &PgSettings) -> Result<Self, PgError> {
        let config = settings.connection_config();
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = if settings.tls {
            Manager::from_config(config, tls_connector()?, manager_config)
        } else {
            Manager::from_config(config, tokio_postgres::NoTls, manager_config)
        };
        let wait = settings.statement_timeout;
        let pool = Pool::builder(manager)
            .pre_recycle(deadpool_postgres::Hook::async_fn(move |client, metrics| {
                Box::pin(check_before_use(client, metrics.last_used(), wait))
            }))
            .max_size(settings.pool_size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(wait))
            .create_timeout(Some(wait))
            .recycle_timeout(Some(wait))
            .build()
            .map_err(|e| PgError::Failed(format!("building the connection pool: {e}")))?;
        Ok(Self {
            pool,
            settings: Arc::new(settings.clone()),
        })
    }

    /// The settings this pool was made with.
    pub fn settings(&self) -> &PgSettings {
        &self.settings
    }

    /// Runs `call` on a pooled connection within the call deadline.
    ///
    /// Errors: [`PgError`] by kind. A connection that failed in a way it will not
    /// recover from, or that was cut off by the deadline, is dropped from the pool.
    pub async fn run<T, F>(&self, call: F) -> Result<T, PgError>
    where
        F: for<'c> FnOnce(&'c mut Object) -> Call<'c, T>,
    {
        self.run_within(Some(self.settings.call_timeout()), call)
            .await
    }

    /// [`Pg::run`] with no client-side deadline on the call itself (the server's
    /// statement deadline still holds, unless `call` lifts it for its transaction):
    /// for imports and copies, which the operator waits for.
    pub async fn run_unbounded<T, F>(&self, call: F) -> Result<T, PgError>
    where
        F: for<'c> FnOnce(&'c mut Object) -> Call<'c, T>,
    {
        self.run_within(None, call).await
    }

    async fn run_within<T, F>(&self, deadline: Option<Duration>, call: F) -> Result<T, PgError>
    where
        F: for<'c> FnOnce(&'c mut Object) -> Call<'c, T>,
    {
        let mut client = self.pool.get().await.map_err(PgError::of_pool)?;
        let result = match deadline {
            Some(deadline) => match tokio::time::timeout(deadline, call(&mut client)).await {
                Ok(result) => result,
                Err(_) => {
                    discard(client, "cut off by the call deadline");
                    return Err(PgError::Unavailable(format!(
                        "PostgreSQL did not answer within {} ms",
                        deadline.as_millis()
                    )));
                }
            },
            None => call(&mut client).await,
        };
        result.map_err(|e| {
            let (error, fatal) = match e {
                CallError::Pg(e) => classify(&e),
                CallError::Stale(why) => (PgError::Unavailable(why.to_owned()), true),
            };
            if fatal {
                discard(client, "connection failed");
            }
            error
        })
    }

    /// A pooled connection for a long piece of work of its own (a copy), which
    /// classifies its errors with [`PgError::of`].
    ///
    /// Errors: no connection could be had.
    pub async fn client(&self) -> Result<Object, PgError> {
        self.pool.get().await.map_err(PgError::of_pool)
    }

    /// Closes the pool (its connections end).
    pub fn close(&self) {
        self.pool.close();
    }

    /// Connections open and idle now, for tests and logs.
    pub fn status(&self) -> deadpool_postgres::Status {
        self.pool.status()
    }
}

/// A pooled connection unused for this long is asked one empty query before it is
/// handed out again: the server may have restarted or gone meanwhile.
pub const IDLE_CHECK: Duration = Duration::from_secs(1);

/// Whether an idle pooled connection may be handed out (Issue 31 §2): a server
/// restart (or `DROP DATABASE … WITH (FORCE)`, `pg_terminate_backend`) ends every
/// connection with a goodbye the connection's own task reads; yielding first lets
/// the runtime poll the sockets, so that task has read it and closed the client
/// before the pool checks `is_closed` (else a request would be the one to find the
/// connection dead). One unused for [`IDLE_CHECK`] or more is also asked an empty
/// query (within `wait`), which finds a connection to a vanished host. A connection
/// refused here is dropped and the pool takes or makes another: the request waits,
/// it is not refused, and nothing of it was sent.
async fn check_before_use(
    client: &mut deadpool_postgres::ClientWrapper,
    idle: Duration,
    wait: Duration,
) -> Result<(), deadpool_postgres::HookError> {
    tokio::task::yield_now().await;
    if client.is_closed() {
        return Err(deadpool_postgres::HookError::Message(
            "the connection was closed".into(),
        ));
    }
    if idle < IDLE_CHECK {
        return Ok(());
    }
    match tokio::time::timeout(wait, client.simple_query("")).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(deadpool_postgres::HookError::Backend(e)),
        Err(_) => Err(deadpool_postgres::HookError::Message(
            "an idle connection did not answer".into(),
        )),
    }
}

/// Takes `client` out of the pool for good; the pool opens a new one when needed.
pub fn discard(client: Object, why: &str) {
    tracing::debug!(why, "dropping a PostgreSQL connection from the pool");
    drop(Object::take(client));
}

/// rustls with ring, verifying the server's certificate against the system's roots
/// (`SSL_CERT_FILE` / `SSL_CERT_DIR` when set) and its host name.
fn tls_connector() -> Result<tokio_postgres_rustls::MakeRustlsConnect, PgError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(PgError::Failed(format!(
            "sslmode asks for TLS but no root certificate could be read (set SSL_CERT_FILE): {:?}",
            found.errors
        )));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| PgError::Failed(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_postgres_urls_are_accepted_and_no_reason_repeats_the_password() {
        for ok in [
            "postgres://app:s3cret@db:5432/pages",
            "postgresql://app@db/pages?sslmode=verify-full",
            "postgres://app:s3cret@db/pages?sslmode=require&application_name=x",
        ] {
            assert!(PgSettings::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "mysql://app:s3cret@db/pages",
            "s3cret",
            "postgres://app:s3cret@db:notaport/pages",
            "postgres://app:s3cret@db/pages?sslmode=sometimes",
            "postgres://app:s3cret@db:5432",
            "postgres://app:s3cret@db/pages?nosuchoption=1",
        ] {
            let reason = PgSettings::parse(bad)
                .err()
                .unwrap_or_else(|| panic!("{bad}"));
            assert!(!reason.contains("s3cret"), "{bad}: {reason}");
        }
    }

    #[test]
    fn sslmode_picks_tls_and_the_rest_of_the_url_stays() {
        let s = PgSettings::parse(
            "postgres://app:pw@db.example:6543/pages?sslmode=verify-full&application_name=x",
        )
        .unwrap();
        assert!(s.tls());
        assert_eq!(s.describe(), "db.example:6543/pages");
        assert_eq!(s.config.get_application_name(), Some("x"));
        assert!(!PgSettings::parse("postgres://db/pages").unwrap().tls());
        assert!(!format!("{s:?}").contains("pw"));
        let c = s.connection_config();
        assert!(c.get_options().unwrap().contains("statement_timeout=2000"));
        assert_eq!(c.get_target_session_attrs(), TargetSessionAttrs::ReadWrite);
    }
}
