//! [`AppState`]: what every handler shares. Built once by
//! [`crate::startup::Application::build`], the only place that knows the whole set;
//! handlers only read it.

use std::sync::Arc;

use actix::Addr;
use deadpool_sqlite::Pool;
use tera::Tera;

use crate::actors::cache::Cache;
use crate::actors::cache_view::CacheView;
use crate::actors::scorer::ScorerPool;
use crate::budget::store::BudgetStore;
use crate::budget::Budget;
use crate::clock::Clock;
use crate::configuration::SearchSettings;
use crate::metrics::Metrics;
use crate::search::client_ip::TrustedProxies;
use crate::search::corpus::Corpus;

/// The service's shared state; one per process, behind `web::Data`.
pub struct AppState {
    /// Read connections to the page database (and page writes through
    /// `db::with_write`); at most 16.
    pub pool: Pool,
    /// The parsed templates of `templates/`.
    pub templates: Tera,
    /// The counters of every budget (SQLite via the RateLimiter actor, or Redis).
    pub budget_store: BudgetStore,
    /// The budgets' windows and key prefixes.
    pub budgets: Budgets,
    /// `RateLimit-Policy` of the search and publish budgets, formatted once (they
    /// never change while the server runs).
    pub policies: RateLimitPolicies,
    /// The result LRU and the single flight of each scoring (gate 5).
    pub cache: Addr<Cache>,
    /// The Cache actor's entries, read by handlers for hits without a message.
    pub cache_view: CacheView,
    /// The scoring slots (`SEARCH_CONCURRENCY`), for metrics and readiness.
    pub scorers: ScorerPool,
    /// The candidate snapshot, refreshed when the corpus generation moves.
    pub corpus: Arc<Corpus>,
    /// Reverse proxies whose forwarding headers are believed (gate 2).
    pub trusted_proxies: TrustedProxies,
    /// Slots, cache size, result rows and the in-flight ceiling.
    pub search_settings: SearchSettings,
    /// The clock budgets count with (a manual one in tests).
    pub clock: Arc<dyn Clock>,
    /// `SEARCH_MAX_IN_FLIGHT` permits: a valid search holds one from gate 1 until the
    /// cache decides (a leader until its scoring ends).
    pub admission: Arc<tokio::sync::Semaphore>,
    /// The Prometheus registry and handles.
    pub metrics: Arc<Metrics>,
    /// The deadline and the cap on open bodies of API request bodies.
    pub bodies: crate::routes::api::body::BodyGate,
    /// The argon2 slots of this process (`pin::CONCURRENT_HASHES`).
    pub hash_slots: crate::pin::HashSlots,
    /// One PIN check at a time per client (striped), so the failure limit holds.
    pub pin_turns: crate::routes::api::pin_check::PinTurns,
    /// The database file as opened at start, to tell when it is gone or replaced.
    pub storage: crate::db::storage::Storage,
    /// Rendered Markdown of recently shown page versions, and the render threads.
    pub markdown: crate::markdown::MarkdownCache,
    /// The pages of 429s, 503s and other notices, as stencils to fill with the
    /// query (`templates::Stencil`).
    pub notice_pages: crate::templates::StencilCache,
}

/// The `RateLimit-Policy` header values of the budgets answers carry
/// ([`Budget::policy_header`]).
#[derive(Debug, Clone)]
pub struct RateLimitPolicies {
    pub search: actix_web::http::header::HeaderValue,
    pub publish: actix_web::http::header::HeaderValue,
}

impl RateLimitPolicies {
    /// Formats the policies of `budgets`. Errors: a window name that is not a
    /// valid header value (a configuration defect).
    pub fn of(budgets: &Budgets) -> Result<Self, actix_web::http::header::InvalidHeaderValue> {
        use actix_web::http::header::HeaderValue;
        Ok(Self {
            search: HeaderValue::from_str(&budgets.search.policy_header())?,
            publish: HeaderValue::from_str(&budgets.publish.policy_header())?,
        })
    }
}

/// The three budgets, shared with the store calls that count them.
#[derive(Debug, Clone)]
pub struct Budgets {
    /// Gates 3/4 of `/search`.
    pub search: Arc<Budget>,
    /// API page writes: create, update, archive, claim.
    pub publish: Arc<Budget>,
    /// Failed PIN checks, counted after each failure.
    pub pin_failures: Arc<Budget>,
}
