//! [`AppState`]: what every handler shares. Built once by
//! [`crate::startup::Application::build`], the only place that knows the whole set;
//! handlers only read it.
//!
//! The fields are grouped by who needs them, so a handler's needs show in the
//! paths it reads: [`PageState`] (the page database), [`SearchState`] (gate 5 and
//! the bounds of `/search`), [`Budgets`] (gates 3/4, the publish budget, PIN
//! failures), [`ApiState`] (what only the agent API holds); the rest is shared by
//! every family of routes. This file sits below the routes: it imports none.

use std::sync::Arc;

use actix::Addr;
use tera::Tera;

use crate::budget::store::BudgetStore;
use crate::budget::Budget;
use crate::client_ip::TrustedProxies;
use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::page_store::PageStore;
use crate::search::cache::view::CacheView;
use crate::search::cache::Cache;
use crate::search::corpus::Corpus;
use crate::search::scorer::ScorerPool;
use crate::search::settings::SearchSettings;

/// The service's shared state; one per process, behind `web::Data`.
pub struct AppState {
    /// The page database, for the ledger, the API and readiness.
    pub pages: PageState,
    /// What `/search` holds beside the budgets.
    pub search: SearchState,
    /// Every budget, the store that counts them, and their header values.
    pub budgets: Budgets,
    /// What only the agent API holds.
    pub api: ApiState,
    /// The parsed templates of `templates/`.
    pub templates: Tera,
    /// Reverse proxies whose forwarding headers are believed (gate 2, the origin).
    pub trusted_proxies: TrustedProxies,
    /// The clock budgets count with (a manual one in tests).
    pub clock: Arc<dyn Clock>,
    /// The Prometheus registry and handles.
    pub metrics: Arc<Metrics>,
}

/// The page database and what is kept from it.
pub struct PageState {
    /// The page database (SQLite by default), behind the one page-store interface.
    pub store: PageStore,
    /// Rendered Markdown of recently shown page versions.
    pub markdown: crate::markdown::MarkdownCache,
}

/// What `/search` holds beside the budgets: admission, the candidate snapshot,
/// the cache and scorers of gate 5, and its notice pages.
pub struct SearchState {
    /// Slots, cache size, result rows and the in-flight ceiling.
    pub settings: SearchSettings,
    /// `SEARCH_MAX_IN_FLIGHT` permits: a valid search holds one from gate 1 until the
    /// cache decides (a leader until its scoring ends).
    pub admission: Arc<tokio::sync::Semaphore>,
    /// The candidate snapshot, refreshed when the corpus generation moves.
    pub corpus: Arc<Corpus>,
    /// The result LRU and the single flight of each scoring (gate 5).
    pub cache: Addr<Cache>,
    /// The Cache actor's entries, read by handlers for hits without a message.
    pub cache_view: CacheView,
    /// The scoring slots (`SEARCH_CONCURRENCY`), for metrics and readiness.
    pub scorers: ScorerPool,
    /// The pages of 429s, 503s and other notices, as stencils to fill with the
    /// query (`templates::Stencil`).
    pub notice_pages: crate::templates::StencilCache,
}

/// What only the agent API holds.
pub struct ApiState {
    /// The deadline and the cap on open bodies of API request bodies.
    pub bodies: crate::request_limits::BodyGate,
    /// The argon2 slots of this process (`pin::CONCURRENT_HASHES`).
    pub hash_slots: crate::pin::HashSlots,
    /// One PIN check at a time per client (striped), so the failure limit holds.
    pub pin_turns: crate::pin::PinTurns,
    /// One PIN check at a time per page (striped), taken after the client's turn,
    /// so the per-page failure limit holds under guesses from many clients at once.
    pub page_pin_turns: crate::pin::PinTurns,
}

/// The `RateLimit-Policy` header values of the budgets answers carry
/// ([`Budget::policy_header`]).
#[derive(Debug, Clone)]
pub struct RateLimitPolicies {
    pub search: actix_web::http::header::HeaderValue,
    pub publish: actix_web::http::header::HeaderValue,
}

impl RateLimitPolicies {
    /// Formats the policies of the `search` and `publish` budgets. Errors: a window
    /// name that is not a valid header value (a configuration defect).
    pub fn of(
        search: &Budget,
        publish: &Budget,
    ) -> Result<Self, actix_web::http::header::InvalidHeaderValue> {
        use actix_web::http::header::HeaderValue;
        Ok(Self {
            search: HeaderValue::from_str(&search.policy_header())?,
            publish: HeaderValue::from_str(&publish.policy_header())?,
        })
    }
}

/// The budgets, shared with the store calls that count them, and the store.
#[derive(Clone)]
pub struct Budgets {
    /// The counters of every budget (SQLite via the RateLimiter actor, PostgreSQL
    /// or Redis).
    pub store: BudgetStore,
    /// Gates 3/4 of `/search`.
    pub search: Arc<Budget>,
    /// API page writes: create, update, archive, claim.
    pub publish: Arc<Budget>,
    /// Failed PIN checks of a client, counted after each failure.
    pub pin_failures: Arc<Budget>,
    /// Failed PIN checks against a page from all clients, counted after each
    /// failure beside the client's.
    pub pin_page_failures: Arc<Budget>,
    /// `RateLimit-Policy` of the search and publish budgets, formatted once (they
    /// never change while the server runs).
    pub policies: RateLimitPolicies,
}
