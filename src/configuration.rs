//! Typed settings from environment variables or `serve` flags (SPEC §2).
//!
//! clap collects every value as text ([`ServeArgs`]); [`Settings::from_args`] parses
//! them so that a bad value names its variable in one line, e.g.
//! `SEARCH_CONCURRENCY: must be a whole number from 1 to 1024, got "0"`.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::budget::open::{self as budget_store, BudgetsAt};
use crate::budget::redis::RedisSettings;
use crate::budget::Budget;
use crate::client_ip::TrustedProxies;
use crate::clock::{Clock, SystemClock};
use crate::http::allowed_origins::AllowedOrigins;
use crate::http::own_origins::PublicUrl;
use crate::page_store::open::PagesAt;
use crate::pg::PgSettings;
use crate::request_limits::RequestLimits;
pub use crate::search::settings::SearchSettings;

/// Where the database lives unless `AGENT_PAGES_DATABASE` says otherwise.
pub const DEFAULT_DATABASE: &str = "data/agent-pages.sqlite3";

/// Failed PIN checks a client may have in one hour window; the next check is refused.
pub const PIN_FAILURES_PER_HOUR: u32 = 10;

/// Failed PIN checks one page may take in one hour window, from all clients
/// together (`PIN_FAILURES_PER_PAGE_PER_HOUR`); the next check of that page is
/// refused for everyone until the window ends.
pub const PIN_FAILURES_PER_PAGE_PER_HOUR: u32 = 20;

/// Flags shared by every subcommand that opens the database.
#[derive(Debug, Clone, clap::Args)]
pub struct DatabaseArgs {
    /// SQLite file; parent folders are created. Not used when the pages are in
    /// PostgreSQL (`AGENT_PAGES_DATABASE_URL`).
    #[arg(long, env = "AGENT_PAGES_DATABASE", default_value = DEFAULT_DATABASE)]
    pub database: PathBuf,
    /// Keep the pages in this PostgreSQL database instead of the SQLite file
    /// (`postgres://user:password@host:5432/db`, `?sslmode=verify-full` for TLS), so
    /// replicas on several hosts share them. Unset: SQLite.
    #[arg(long, env = "AGENT_PAGES_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// A file holding the PostgreSQL URL (a Docker or Kubernetes secret), read when
    /// AGENT_PAGES_DATABASE_URL is not set.
    #[arg(long, env = "AGENT_PAGES_DATABASE_URL_FILE")]
    pub database_url_file: Option<PathBuf>,
    /// PostgreSQL connections per process.
    #[arg(long, env = "AGENT_PAGES_DATABASE_POOL", default_value = "16")]
    pub database_pool: String,
    /// Milliseconds one PostgreSQL statement may take (the server cancels it; the
    /// client gives up on a call at 1.5 times this); past it the request is 503.
    #[arg(long, env = "AGENT_PAGES_DATABASE_TIMEOUT_MS", default_value = "2000")]
    pub database_timeout_ms: String,
    /// Versions of each page kept in its history (1–100000): the write that makes
    /// a new version deletes the ones older than the newest this many. At the body
    /// cap (256 KiB) a page's history holds at most this many times that.
    #[arg(long, env = "PAGE_HISTORY_VERSIONS", default_value = "100")]
    pub page_history_versions: String,
}

impl DatabaseArgs {
    /// `PAGE_HISTORY_VERSIONS`, parsed. Errors: not a whole number from 1 to
    /// [`crate::page_store::history::MAX_HISTORY_VERSIONS`].
    pub fn history_versions(&self) -> Result<i64, ConfigError> {
        number(
            "PAGE_HISTORY_VERSIONS",
            &self.page_history_versions,
            1,
            crate::page_store::history::MAX_HISTORY_VERSIONS,
        )
    }

    /// The PostgreSQL settings when `AGENT_PAGES_DATABASE_URL` is set (and not
    /// blank); `None` keeps the pages in the SQLite file.
    ///
    /// Errors: the URL, pool size or deadline is not usable (the URL is never
    /// repeated: it may hold a password).
    pub fn postgres(&self) -> Result<Option<PgSettings>, ConfigError> {
        let given = self
            .database_url
            .as_deref()
            .map(str::trim)
            .filter(|url| !url.is_empty());
        let (variable, url) = match (given, &self.database_url_file) {
            (Some(url), _) => ("AGENT_PAGES_DATABASE_URL", url.to_owned()),
            (None, Some(file)) => {
                let url = std::fs::read_to_string(file).map_err(|e| ConfigError {
                    variable: "AGENT_PAGES_DATABASE_URL_FILE",
                    value: file.display().to_string(),
                    reason: format!("cannot be read ({e})"),
                })?;
                ("AGENT_PAGES_DATABASE_URL_FILE", url.trim().to_owned())
            }
            (None, None) => return Ok(None),
        };
        let mut settings = PgSettings::parse(&url).map_err(|reason| ConfigError {
            variable,
            value: "<hidden>".into(),
            reason,
        })?;
        settings.pool_size = number("AGENT_PAGES_DATABASE_POOL", &self.database_pool, 1, 1000)?;
        settings.statement_timeout = Duration::from_millis(number(
            "AGENT_PAGES_DATABASE_TIMEOUT_MS",
            &self.database_timeout_ms,
            1,
            600_000,
        )?);
        Ok(Some(settings))
    }

    /// Where the pages are: PostgreSQL when `AGENT_PAGES_DATABASE_URL` is set (see
    /// [`DatabaseArgs::postgres`]), else the SQLite file.
    ///
    /// Errors: as [`DatabaseArgs::postgres`].
    pub fn pages(&self) -> Result<PagesAt, ConfigError> {
        Ok(match self.postgres()? {
            Some(pg) => PagesAt::Postgres(pg),
            None => PagesAt::Sqlite(self.database.clone()),
        })
    }
}

/// Where the budget counters live with SQLite (`serve`, `migrate`).
#[derive(Debug, Clone, clap::Args)]
pub struct BudgetDatabaseArgs {
    /// SQLite file of the search, publish and PIN-failure counters (unused with
    /// AGENT_PAGES_REDIS_URL); default: beside the database, `NAME.budget.EXT`.
    #[arg(long, env = "AGENT_PAGES_BUDGET_DATABASE")]
    pub budget_database: Option<PathBuf>,
}

impl BudgetDatabaseArgs {
    /// The budget database of the page database `pages`: the one given, else
    /// [`budget_store::path_beside`] it.
    pub fn path_for(&self, pages: &std::path::Path) -> PathBuf {
        match &self.budget_database {
            Some(path) if !path.as_os_str().is_empty() => path.clone(),
            _ => budget_store::path_beside(pages),
        }
    }
}

/// `serve` flags; each also reads the environment variable of the same meaning.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Load the bundled demo corpus (63,681 Debian package descriptions) when the
    /// database has no pages.
    #[arg(long)]
    pub demo: bool,
    /// Listen address; port 0 picks any free port (the bound address is printed).
    #[arg(long, env = "AGENT_PAGES_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,
    #[command(flatten)]
    pub db: DatabaseArgs,
    #[command(flatten)]
    pub budget_db: BudgetDatabaseArgs,
    /// Searches per client per minute (the burst window).
    #[arg(long, env = "SEARCH_RATE_PER_MINUTE", default_value = "20")]
    pub search_rate_per_minute: String,
    /// Searches per client per hour (the sustained window).
    #[arg(long, env = "SEARCH_RATE_PER_HOUR", default_value = "200")]
    pub search_rate_per_hour: String,
    /// Page writes (create, update, archive, claim) per client per minute.
    #[arg(long, env = "PUBLISH_RATE_PER_MINUTE", default_value = "30")]
    pub publish_rate_per_minute: String,
    /// Page writes per client per hour.
    #[arg(long, env = "PUBLISH_RATE_PER_HOUR", default_value = "300")]
    pub publish_rate_per_hour: String,
    /// Scoring slots in the process; a cache miss with none free is an immediate 503.
    #[arg(long, env = "SEARCH_CONCURRENCY", default_value = "2")]
    pub search_concurrency: String,
    /// Entries in the search result LRU.
    #[arg(long, env = "SEARCH_CACHE_ENTRIES", default_value = "256")]
    pub search_cache_entries: String,
    /// Bytes the search result LRU may keep alive (results, marks, keys and the
    /// answers rendered from them): a whole number of bytes, or of KiB, MiB or GiB
    /// (`64MiB`).
    #[arg(long, env = "SEARCH_CACHE_MAX_BYTES", default_value = "64MiB")]
    pub search_cache_max_bytes: String,
    /// Result rows shown on a search page.
    #[arg(long, env = "SEARCH_RESULT_LIMIT", default_value = "50")]
    pub search_result_limit: String,
    /// Valid searches between gate 1 and their response; beyond it a search is
    /// answered 503 before any budget is spent.
    #[arg(long, env = "SEARCH_MAX_IN_FLIGHT", default_value = "64")]
    pub search_max_in_flight: String,
    /// Address of the Prometheus `/metrics` listener; off when unset.
    #[arg(long, env = "AGENT_PAGES_METRICS_BIND")]
    pub metrics_bind: Option<String>,
    /// Seconds a request body may take to arrive in full; a slower one is answered
    /// 408 and its connection closed.
    #[arg(long, env = "AGENT_PAGES_BODY_TIMEOUT_SECS", default_value = "10")]
    pub body_timeout_secs: String,
    /// Request bodies being received at once, over all clients; one more is
    /// answered 503 at once.
    #[arg(long, env = "AGENT_PAGES_MAX_OPEN_BODIES", default_value = "128")]
    pub max_open_bodies: String,
    /// Comma-separated CIDRs of reverse proxies whose X-Forwarded-For is believed;
    /// a bare IP means /32 or /128.
    #[arg(long, env = "TRUSTED_PROXY_CIDRS", default_value = "")]
    pub trusted_proxy_cidrs: String,
    /// Keep the search, publish and PIN-failure counters in this Redis or Valkey
    /// (`redis://[:password@]host:port/db`, `rediss://` for TLS) instead of the
    /// SQLite file, so replicas on several hosts share one budget. Unset: SQLite.
    #[arg(long, env = "AGENT_PAGES_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// Milliseconds one Redis call may take; past it the request is answered 503
    /// (`budget-unavailable`) without the budget.
    #[arg(long, env = "AGENT_PAGES_REDIS_TIMEOUT_MS", default_value = "50")]
    pub redis_timeout_ms: String,
    /// Wrong PINs one page may take per hour from all clients together; past it
    /// every PIN check of that page is answered 429 until the hour ends.
    #[arg(long, env = "PIN_FAILURES_PER_PAGE_PER_HOUR", default_value = "20")]
    pub pin_failures_per_page_per_hour: String,
    /// Comma-separated browser origins (`https://app.example`) that may call
    /// `/mcp` beside the service's own, or `*` for any; requests without an
    /// `Origin` header (agents, command-line clients) are always served.
    #[arg(long, env = "AGENT_PAGES_MCP_ALLOWED_ORIGINS", default_value = "")]
    pub mcp_allowed_origins: String,
    /// Where visitors and agents reach the service, `https://pages.example` (no
    /// path): the base of every absolute URL in answers and the one name beside the
    /// loopback names and the bound address that `/mcp` answers. Unset: URLs follow
    /// each request's Host (or a trusted proxy's forwarded host).
    #[arg(long, env = "AGENT_PAGES_PUBLIC_URL", default_value = "")]
    pub public_url: String,
}

/// A configuration value that cannot be used; the message names the variable.
#[derive(Debug, thiserror::Error)]
#[error("{variable}: {reason}, got {value:?}")]
pub struct ConfigError {
    pub variable: &'static str,
    pub value: String,
    pub reason: String,
}

/// Everything the server needs, parsed.
#[derive(Clone)]
pub struct Settings {
    pub bind: SocketAddr,
    /// Where `/metrics` listens; `None` serves no metrics.
    pub metrics_bind: Option<SocketAddr>,
    /// Where the pages are: the SQLite file (`AGENT_PAGES_DATABASE`), or PostgreSQL
    /// (`AGENT_PAGES_DATABASE_URL`).
    pub pages: PagesAt,
    /// Where the budget counters are: Redis when `AGENT_PAGES_REDIS_URL` is set,
    /// else PostgreSQL with PostgreSQL pages, else their own SQLite file
    /// (`AGENT_PAGES_BUDGET_DATABASE`, by default beside the page file).
    pub budgets: BudgetsAt,
    pub demo: bool,
    pub search: SearchSettings,
    /// Searches per client: `SEARCH_RATE_PER_MINUTE`, `SEARCH_RATE_PER_HOUR`.
    pub search_budget: Budget,
    /// Page writes per client: `PUBLISH_RATE_PER_MINUTE`, `PUBLISH_RATE_PER_HOUR`.
    pub publish_budget: Budget,
    /// Failed PIN checks per client and hour.
    pub pin_failure_budget: Budget,
    /// Failed PIN checks per page and hour, from all clients:
    /// `PIN_FAILURES_PER_PAGE_PER_HOUR`.
    pub pin_page_failure_budget: Budget,
    pub trusted_proxies: TrustedProxies,
    pub requests: RequestLimits,
    /// Browser origins `/mcp` serves beside the service's own.
    pub mcp_allowed_origins: AllowedOrigins,
    /// `AGENT_PAGES_PUBLIC_URL`: the service's own origin and the base of absolute
    /// URLs; `None` when unset (or blank).
    pub public_url: Option<PublicUrl>,
    /// `PAGE_HISTORY_VERSIONS`: versions kept per page.
    pub history_versions: i64,
    /// The clock budgets are counted with; tests inject a manual one.
    pub clock: Arc<dyn Clock>,
    /// Test-only fault injection: called with the match copy at the start of every
    /// scoring, inside the scorer slot (may panic or block).
    #[cfg(feature = "fault-injection")]
    pub scoring_hook: Option<crate::search::scorer::ScoringHook>,
    /// HTTP worker threads of the main listener; `None` is actix's default (one
    /// per CPU). Not read from the environment: tests set 1 to show that nothing
    /// slow runs on a worker.
    pub http_workers: Option<usize>,
    /// Test-only fault injection: called with the body on the render thread before
    /// every Markdown render (may block, to hold a render in progress).
    #[cfg(feature = "fault-injection")]
    pub markdown_hook: Option<crate::markdown::RenderHook>,
}

impl Settings {
    /// Settings for `database` with every other value at its default, except
    /// `bind`, which is `127.0.0.1:0` so tests get a free port.
    pub fn for_tests(database: PathBuf) -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            metrics_bind: None,
            budgets: BudgetsAt::Sqlite(budget_store::path_beside(&database)),
            pages: PagesAt::Sqlite(database),
            demo: false,
            search: SearchSettings::default(),
            search_budget: Budget::search(20, 200),
            publish_budget: Budget::publish(30, 300),
            pin_failure_budget: Budget::pin_failures(PIN_FAILURES_PER_HOUR),
            pin_page_failure_budget: Budget::pin_page_failures(PIN_FAILURES_PER_PAGE_PER_HOUR),
            trusted_proxies: TrustedProxies::default(),
            requests: RequestLimits::default(),
            mcp_allowed_origins: AllowedOrigins::default(),
            public_url: None,
            history_versions: crate::page_store::history::DEFAULT_HISTORY_VERSIONS,
            clock: Arc::new(SystemClock),
            #[cfg(feature = "fault-injection")]
            scoring_hook: None,
            http_workers: None,
            #[cfg(feature = "fault-injection")]
            markdown_hook: None,
        }
    }

    /// Parses the collected flags/variables. Errors: the first bad value, by name.
    pub fn from_args(args: &ServeArgs) -> Result<Self, ConfigError> {
        let search_budget = Budget::search(
            number(
                "SEARCH_RATE_PER_MINUTE",
                &args.search_rate_per_minute,
                1,
                1_000_000,
            )?,
            number(
                "SEARCH_RATE_PER_HOUR",
                &args.search_rate_per_hour,
                1,
                100_000_000,
            )?,
        );
        let publish_budget = Budget::publish(
            number(
                "PUBLISH_RATE_PER_MINUTE",
                &args.publish_rate_per_minute,
                1,
                1_000_000,
            )?,
            number(
                "PUBLISH_RATE_PER_HOUR",
                &args.publish_rate_per_hour,
                1,
                100_000_000,
            )?,
        );
        let search = SearchSettings {
            concurrency: number("SEARCH_CONCURRENCY", &args.search_concurrency, 1, 1024)?,
            cache_entries: number(
                "SEARCH_CACHE_ENTRIES",
                &args.search_cache_entries,
                1,
                1_000_000,
            )?,
            cache_max_bytes: byte_size(
                "SEARCH_CACHE_MAX_BYTES",
                &args.search_cache_max_bytes,
                1 << 40,
            )?,
            result_limit: number("SEARCH_RESULT_LIMIT", &args.search_result_limit, 1, 1000)?,
            max_in_flight: number(
                "SEARCH_MAX_IN_FLIGHT",
                &args.search_max_in_flight,
                1,
                1_000_000,
            )?,
        };
        let trusted_proxies = args.trusted_proxy_cidrs.parse().map_err(|e| ConfigError {
            variable: "TRUSTED_PROXY_CIDRS",
            value: args.trusted_proxy_cidrs.clone(),
            reason: format!("{e}"),
        })?;
        let redis_timeout_ms: u64 = number(
            "AGENT_PAGES_REDIS_TIMEOUT_MS",
            &args.redis_timeout_ms,
            1,
            60_000,
        )?;
        let redis = args
            .redis_url
            .as_deref()
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .map(|url| {
                RedisSettings::check_url(url).map_err(|reason| ConfigError {
                    variable: "AGENT_PAGES_REDIS_URL",
                    // The URL may hold a password: never echo it.
                    value: "<hidden>".into(),
                    reason,
                })?;
                Ok(RedisSettings {
                    call_timeout: Duration::from_millis(redis_timeout_ms),
                    ..RedisSettings::new(url)
                })
            })
            .transpose()?;
        let pages = args.db.pages()?;
        let requests = RequestLimits {
            body_timeout: Duration::from_secs(number(
                "AGENT_PAGES_BODY_TIMEOUT_SECS",
                &args.body_timeout_secs,
                1,
                3600,
            )?),
            max_open_bodies: number(
                "AGENT_PAGES_MAX_OPEN_BODIES",
                &args.max_open_bodies,
                1,
                100_000,
            )?,
        };
        Ok(Self {
            bind: socket_addr("AGENT_PAGES_BIND", &args.bind)?,
            metrics_bind: args
                .metrics_bind
                .as_deref()
                .filter(|v| !v.trim().is_empty())
                .map(|v| socket_addr("AGENT_PAGES_METRICS_BIND", v))
                .transpose()?,
            budgets: match (redis, &pages) {
                (Some(redis), _) => BudgetsAt::Redis(redis),
                (None, PagesAt::Postgres(_)) => BudgetsAt::Postgres,
                (None, PagesAt::Sqlite(file)) => BudgetsAt::Sqlite(args.budget_db.path_for(file)),
            },
            pages,
            demo: args.demo,
            search,
            search_budget,
            publish_budget,
            pin_failure_budget: Budget::pin_failures(PIN_FAILURES_PER_HOUR),
            pin_page_failure_budget: Budget::pin_page_failures(number(
                "PIN_FAILURES_PER_PAGE_PER_HOUR",
                &args.pin_failures_per_page_per_hour,
                1,
                1_000_000,
            )?),
            trusted_proxies,
            requests,
            mcp_allowed_origins: args.mcp_allowed_origins.parse().map_err(
                |e: crate::http::allowed_origins::InvalidOrigin| ConfigError {
                    variable: "AGENT_PAGES_MCP_ALLOWED_ORIGINS",
                    value: args.mcp_allowed_origins.clone(),
                    reason: e.to_string(),
                },
            )?,
            public_url: Some(args.public_url.trim())
                .filter(|url| !url.is_empty())
                .map(|url| {
                    url.parse()
                        .map_err(
                            |e: crate::http::own_origins::InvalidPublicUrl| ConfigError {
                                variable: "AGENT_PAGES_PUBLIC_URL",
                                value: args.public_url.clone(),
                                reason: e.to_string(),
                            },
                        )
                })
                .transpose()?,
            history_versions: args.db.history_versions()?,
            clock: Arc::new(SystemClock),
            #[cfg(feature = "fault-injection")]
            scoring_hook: None,
            http_workers: None,
            #[cfg(feature = "fault-injection")]
            markdown_hook: None,
        })
    }
}

fn number<T>(variable: &'static str, value: &str, min: T, max: T) -> Result<T, ConfigError>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    value
        .trim()
        .parse::<T>()
        .ok()
        .filter(|n| *n >= min && *n <= max)
        .ok_or_else(|| ConfigError {
            variable,
            value: value.to_owned(),
            reason: format!("must be a whole number from {min} to {max}"),
        })
}

/// A size in bytes from 1 to `max`: a whole number, optionally followed by `B`,
/// `KiB`, `MiB` or `GiB` (case aside, spaces allowed between).
fn byte_size(variable: &'static str, value: &str, max: u64) -> Result<usize, ConfigError> {
    let text = value.trim();
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let (number, unit) = text.split_at(digits);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        _ => 0,
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|n| (1..=max).contains(n))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| ConfigError {
            variable,
            value: value.to_owned(),
            reason: format!(
                "must be a whole number of bytes from 1 to {max}, or of KiB, MiB or GiB"
            ),
        })
}

fn socket_addr(variable: &'static str, value: &str) -> Result<SocketAddr, ConfigError> {
    let bad = |reason: String| ConfigError {
        variable,
        value: value.to_owned(),
        reason,
    };
    value
        .to_socket_addrs()
        .map_err(|e| bad(format!("must be HOST:PORT ({e})")))?
        .next()
        .ok_or_else(|| bad("resolves to no address".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn parse(flags: &[&str]) -> Result<Settings, ConfigError> {
        let mut argv = vec!["test"];
        argv.extend_from_slice(flags);
        Settings::from_args(&Cli::parse_from(argv).serve)
    }

    /// The error `flags` are refused with.
    fn refusal(flags: &[&str]) -> ConfigError {
        parse(flags).err().expect("the flags are refused")
    }

    /// The variable the refusal of `flags` names.
    fn refused_variable(flags: &[&str]) -> &'static str {
        refusal(flags).variable
    }

    #[test]
    fn a_zero_concurrency_names_its_variable() {
        let err = refusal(&["--search-concurrency", "0"]);
        assert_eq!(err.variable, "SEARCH_CONCURRENCY");
        assert!(err.to_string().starts_with("SEARCH_CONCURRENCY: "));
    }

    #[test]
    fn a_cidr_with_a_33_bit_prefix_names_its_variable() {
        assert_eq!(
            refused_variable(&["--trusted-proxy-cidrs", "10.0.0.0/33"]),
            "TRUSTED_PROXY_CIDRS"
        );
    }

    #[test]
    fn a_database_url_selects_postgresql_with_its_pool_and_deadline() {
        let s = parse(&[
            "--database-url",
            "postgres://app:pw@db:5432/pages?sslmode=verify-full",
            "--database-pool",
            "7",
            "--database-timeout-ms",
            "1500",
        ])
        .unwrap();
        let PagesAt::Postgres(pg) = s.pages else {
            panic!("{:?}", s.pages)
        };
        assert_eq!(
            (pg.pool_size, pg.statement_timeout, pg.tls()),
            (7, std::time::Duration::from_millis(1500), true)
        );
        assert_eq!(pg.describe(), "db:5432/pages");
        assert!(matches!(s.budgets, BudgetsAt::Postgres));
        for sqlite in [
            parse(&[]).unwrap(),
            parse(&["--database-url", " "]).unwrap(),
        ] {
            assert!(matches!(sqlite.pages, PagesAt::Sqlite(_)));
            assert!(matches!(sqlite.budgets, BudgetsAt::Sqlite(_)));
        }
    }

    #[test]
    fn a_bad_database_setting_names_its_variable_and_never_the_password() {
        for (flags, variable) in [
            (
                &["--database-url", "mysql://app:s3cret@db/pages"][..],
                "AGENT_PAGES_DATABASE_URL",
            ),
            (
                &["--database-url", "postgres://app:s3cret@db:x/pages"],
                "AGENT_PAGES_DATABASE_URL",
            ),
            (
                &["--database-url", "postgres://db/p", "--database-pool", "0"],
                "AGENT_PAGES_DATABASE_POOL",
            ),
            (
                &[
                    "--database-url",
                    "postgres://db/p",
                    "--database-timeout-ms",
                    "x",
                ],
                "AGENT_PAGES_DATABASE_TIMEOUT_MS",
            ),
            (
                &["--database-url-file", "/nonexistent/url"],
                "AGENT_PAGES_DATABASE_URL_FILE",
            ),
        ] {
            let err = refusal(flags);
            assert_eq!(err.variable, variable, "{flags:?}");
            assert!(!err.to_string().contains("s3cret"), "{err}");
        }
    }

    #[test]
    fn the_url_can_come_from_a_secret_file_and_is_never_echoed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("url");
        std::fs::write(&file, "postgres://app:s3cret@db/pages\n").unwrap();
        let path = file.to_str().unwrap();
        let PagesAt::Postgres(pg) = parse(&["--database-url-file", path]).unwrap().pages else {
            panic!("the file's URL is PostgreSQL")
        };
        assert_eq!(pg.describe(), "db:5432/pages");
        std::fs::write(&file, "postgres://app:s3cret@db:port/pages").unwrap();
        let err = refusal(&["--database-url-file", path]);
        assert_eq!(err.variable, "AGENT_PAGES_DATABASE_URL_FILE");
        assert!(!err.to_string().contains("s3cret"), "{err}");
    }

    #[test]
    fn a_bad_redis_url_names_its_variable_and_hides_the_password() {
        for url in ["http://:s3cret@cache", "redis://:s3cret@cache:6379/x"] {
            let err = refusal(&["--redis-url", url]);
            assert_eq!(err.variable, "AGENT_PAGES_REDIS_URL");
            assert!(!err.to_string().contains("s3cret"), "{err}");
        }
    }

    #[test]
    fn a_redis_url_selects_the_shared_store_with_its_deadline() {
        let s = parse(&[
            "--redis-url",
            "redis://127.0.0.1:6379/3",
            "--redis-timeout-ms",
            "80",
        ])
        .unwrap();
        let BudgetsAt::Redis(redis) = s.budgets else {
            panic!("{:?}", s.budgets)
        };
        assert_eq!(redis.url.as_str(), "redis://127.0.0.1:6379/3");
        assert_eq!(redis.call_timeout, std::time::Duration::from_millis(80));
        assert!(redis.server_clock);
        let with_postgres = parse(&[
            "--redis-url",
            "redis://r/0",
            "--database-url",
            "postgres://db/p",
        ]);
        assert!(matches!(
            with_postgres.unwrap().budgets,
            BudgetsAt::Redis(_)
        ));
    }

    #[test]
    fn the_per_page_pin_failure_bound_is_configurable_and_never_zero() {
        let s = parse(&["--pin-failures-per-page-per-hour", "5"]).unwrap();
        assert_eq!(s.pin_page_failure_budget, Budget::pin_page_failures(5));
        assert_eq!(
            refused_variable(&["--pin-failures-per-page-per-hour", "0"]),
            "PIN_FAILURES_PER_PAGE_PER_HOUR"
        );
    }

    #[test]
    fn a_zero_body_timeout_names_its_variable() {
        assert_eq!(
            refused_variable(&["--body-timeout-secs", "0"]),
            "AGENT_PAGES_BODY_TIMEOUT_SECS"
        );
        assert_eq!(
            refused_variable(&["--max-open-bodies", "none"]),
            "AGENT_PAGES_MAX_OPEN_BODIES"
        );
    }

    #[test]
    fn a_cache_byte_bound_takes_binary_units_and_names_its_variable() {
        let max_bytes = |v: &str| {
            parse(&[&format!("--search-cache-max-bytes={v}")]).map(|s| s.search.cache_max_bytes)
        };
        assert_eq!(max_bytes("65536").unwrap(), 65536);
        assert_eq!(max_bytes("64KiB").unwrap(), 64 << 10);
        assert_eq!(max_bytes(" 2 mib ").unwrap(), 2 << 20);
        assert_eq!(max_bytes("1GiB").unwrap(), 1 << 30);
        for bad in ["0", "", "64MB", "1.5MiB", "-1", "2048GiB", "MiB"] {
            let err = max_bytes(bad).err().unwrap();
            assert_eq!(err.variable, "SEARCH_CACHE_MAX_BYTES", "{bad}");
        }
    }

    #[test]
    fn a_public_url_is_an_origin_or_names_its_variable() {
        let s = parse(&["--public-url", "https://pages.example/"]).unwrap();
        let url = s.public_url.unwrap();
        assert_eq!(url.origin().url("/p/a"), "https://pages.example/p/a");
        assert!(parse(&["--public-url", " "]).unwrap().public_url.is_none());
        for bad in [
            "pages.example",
            "https://pages.example/app",
            "ftp://pages.example",
        ] {
            let err = refusal(&["--public-url", bad]);
            assert_eq!(err.variable, "AGENT_PAGES_PUBLIC_URL", "{bad}");
        }
    }

    #[test]
    fn defaults_parse() {
        let s = parse(&["--bind", "127.0.0.1:0"]).unwrap();
        assert_eq!(s.search, SearchSettings::default());
        assert_eq!(s.search_budget, Budget::search(20, 200));
        assert_eq!(s.publish_budget, Budget::publish(30, 300));
        assert_eq!(
            s.pin_page_failure_budget,
            Budget::pin_page_failures(PIN_FAILURES_PER_PAGE_PER_HOUR)
        );
        assert_eq!(s.requests, RequestLimits::default());
        assert!(s.trusted_proxies.is_empty());
        assert!(s.public_url.is_none());
    }
}
