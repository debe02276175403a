//! Builds the application from [`Settings`]: the stores configuration chose, the
//! actors, the HTTP server on its own bound listener. Tests start it on port 0 with a temp database and read the port.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix::Actor;
use actix_web::dev::Server;
use actix_web::{middleware, web, App, HttpServer};
use anyhow::Context as _;
use tracing_actix_web::TracingLogger;

use crate::budget::error::BudgetStoreError;
use crate::budget::store::BudgetStore;
use crate::configuration::Settings;
use crate::http::own_origins::OwnOrigins;
use crate::metrics::Metrics;
use crate::page_store::open::PagesAt;
use crate::page_store::sqlite as sqlite_pages;
use crate::page_store::PageStore;
use crate::search::cache::Cache;
use crate::search::corpus::Corpus;
use crate::search::scorer::ScorerPool;
use crate::state::{ApiState, AppState, Budgets, PageState, RateLimitPolicies, SearchState};
use crate::telemetry::PathOnlyRootSpan;
use crate::{budget, import, page_store, routes, templates};

/// Corpus generations whose changed page stays in the change log: a process whose
/// snapshot fell further behind reloads every candidate instead.
pub const CHANGES_KEPT: i64 = 10_000;

/// How often ended budget windows are swept from `rate_limit_counters` (and the
/// corpus change log compacted).
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(300);

/// Pause between two batches of a change-log compaction (a batch of
/// `page_store::COMPACT_BATCH` rows takes about 10 ms at a million pages).
const COMPACT_PAUSE: Duration = Duration::from_millis(50);

/// How long a new connection may take to send its first request's headers
/// (actix `client_request_timeout`); slower is answered 408 and closed.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an idle keep-alive connection stays open between requests.
pub const KEEP_ALIVE: Duration = Duration::from_secs(5);

/// After an answer to a request whose body was not read (a refusal), how long the
/// server waits for the client to close before closing itself.
pub const LINGER: Duration = Duration::from_secs(1);

/// On SIGTERM/SIGINT, how long requests in flight may take to finish before their
/// connections are dropped.
pub const SHUTDOWN_DRAIN: Duration = Duration::from_secs(30);

/// Every read from the network has a deadline: the first headers, idle keep-alive,
/// the linger after a refusal, the drain at shutdown (bodies: `http::body`).
/// A macro because `HttpServer`'s type parameters make a function of it unwieldy.
macro_rules! with_deadlines {
    ($server:expr) => {
        $server
            .client_request_timeout(HEADER_TIMEOUT)
            .keep_alive(KEEP_ALIVE)
            .client_disconnect_timeout(LINGER)
            .shutdown_timeout(SHUTDOWN_DRAIN.as_secs())
    };
}

/// A built, bound, not yet running server (and its metrics listener, if any).
pub struct Application {
    address: SocketAddr,
    metrics_address: Option<SocketAddr>,
    servers: Vec<Server>,
    state: web::Data<AppState>,
}

impl Application {
    /// Opens the page store and the budget store configuration chose
    /// ([`page_store::open`], [`budget::open`]), loads the demo corpus if asked and
    /// the database is empty, starts the actors and binds the listeners. Call inside
    /// a running actix System (`#[actix_web::main]` or `#[actix_web::test]`).
    ///
    /// Errors: a store cannot be opened or migrated, or an address not bound.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let pages = page_store::open::open(&settings.pages, sqlite_pages::POOL_SIZE)
            .await?
            .with_history_versions(settings.history_versions);
        if let PagesAt::Postgres(pg) = &settings.pages {
            tracing::info!(
                postgres = %pg.describe(),
                tls = pg.tls(),
                pool = pg.pool_size,
                timeout_ms = pg.statement_timeout.as_millis() as u64,
                "pages in PostgreSQL"
            );
        }
        if settings.demo {
            load_demo(&pages, settings.clock.now()).await?;
        }
        let budgets = budget::open::open(&settings.budgets, &pages)?;
        let state = web::Data::new(app_state(&settings, pages, budgets)?);
        // Ready means a search can be answered at full speed: the candidate snapshot
        // is built before the server is handed back (and `listening on` printed).
        let snapshot = state
            .search
            .corpus
            .warm()
            .await
            .context("building the candidate snapshot")?;
        state.search.scorers.warm(snapshot.index.slot_count()).await;
        drop(snapshot);

        let (address, server) = serve_routes(&settings, state.clone())?;
        let mut servers = vec![server];
        let metrics_address = match settings.metrics_bind {
            None => None,
            Some(bind) => {
                let (address, server) = serve_metrics(bind, state.clone())?;
                servers.push(server);
                Some(address)
            }
        };
        spawn_background(&state);
        Ok(Self {
            address,
            metrics_address,
            servers,
            state,
        })
    }

    /// The bound address of `/metrics`, when it was asked for.
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics_address
    }

    /// The bound address (the real port when `bind` asked for port 0).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The shared state, for tests that look inside (scorer slots, cache size).
    pub fn state(&self) -> web::Data<AppState> {
        self.state.clone()
    }

    /// Serves until the server is stopped (SIGINT/SIGTERM, or its handle).
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let result = futures_util::future::try_join_all(self.servers)
            .await
            .map(drop);
        // Close the pools inside the runtime: deadpool drops each connection through
        // `spawn_blocking`, which panics once the runtime is shutting down.
        self.state.pages.store.close();
        result
    }

    /// Runs the servers on the current actix runtime's task set, for tests.
    pub fn spawn(self) {
        for server in self.servers {
            actix_web::rt::spawn(server);
        }
    }
}

/// Loads the demo corpus into `pages` when it has none.
async fn load_demo(pages: &PageStore, now: i64) -> anyhow::Result<()> {
    if let Some(report) = import::load_demo_if_empty(pages, now)
        .await
        .context("loading the demo corpus")?
    {
        tracing::info!(
            inserted = report.inserted,
            skipped = report.skipped.len(),
            "loaded the demo corpus"
        );
    }
    Ok(())
}

/// The shared state over the opened stores: the search's actors and slots
/// started, every budget of `settings` with the store that counts them.
fn app_state(
    settings: &Settings,
    pages: PageStore,
    budget_store: BudgetStore,
) -> anyhow::Result<AppState> {
    let metrics = Arc::new(Metrics::new(&crate::operations::search::outcome::labels(
        &settings.search_budget,
    )));
    metrics
        .cache_max_bytes
        .set(settings.search.cache_max_bytes as i64);
    metrics.slots.set(settings.search.concurrency as i64);
    pages.count_calls_in(metrics.page_store_calls(pages.kind()));
    budget_store.count_calls_in(metrics.budget_store_calls(budget_store.kind()));
    for tool in crate::mcp::tools::TOOLS.iter() {
        metrics.show_tool(&tool.name);
    }
    let scorers = ScorerPool::start(
        settings.search.concurrency,
        metrics.slots_acquired.clone(),
        metrics.slots_refused.clone(),
        #[cfg(feature = "fault-injection")]
        settings.scoring_hook.clone(),
    );
    let corpus = Arc::new(Corpus::new(
        pages.clone(),
        metrics.candidate_fetches.clone(),
    ));
    let cache = Cache::new(
        settings.search.cache_entries,
        settings.search.cache_max_bytes,
        scorers.clone(),
        settings.search.result_limit,
        metrics.scoring_seconds.clone(),
    )
    .with_carry_metrics(metrics.cache_carries.clone());
    let cache_view = cache.view();
    let cache = cache.start();
    // Each move of the corpus by a few pages carries the entries it cannot affect.
    let (carrier, carrying) = (cache.clone(), cache_view.clone());
    corpus.on_move(move |moved| {
        // Counted before it is sent: until the actor applied it, the view leaves
        // every miss to the actor (see `search::cache::view`).
        carrying.carry_sent();
        carrier.do_send(crate::search::cache::Carry(moved));
    });
    let search_budget = Arc::new(settings.search_budget.clone());
    let publish_budget = Arc::new(settings.publish_budget.clone());
    let policies = RateLimitPolicies::of(&search_budget, &publish_budget)
        .context("formatting RateLimit-Policy")?;
    Ok(AppState {
        pages: PageState {
            store: pages,
            markdown: crate::markdown::MarkdownCache::start(
                crate::markdown::DEFAULT_CACHE_ENTRIES,
                crate::markdown::DEFAULT_CACHE_BYTES,
                #[cfg(feature = "fault-injection")]
                settings.markdown_hook.clone(),
            ),
        },
        search: SearchState {
            settings: settings.search,
            admission: Arc::new(tokio::sync::Semaphore::new(settings.search.max_in_flight)),
            corpus,
            cache,
            cache_view,
            scorers,
            notice_pages: crate::templates::StencilCache::new(256),
        },
        budgets: Budgets {
            store: budget_store,
            search: search_budget,
            publish: publish_budget,
            pin_failures: Arc::new(settings.pin_failure_budget.clone()),
            pin_page_failures: Arc::new(settings.pin_page_failure_budget.clone()),
            policies,
        },
        api: ApiState {
            bodies: crate::request_limits::BodyGate::new(settings.requests),
            hash_slots: Default::default(),
            pin_turns: Default::default(),
            page_pin_turns: Default::default(),
        },
        templates: templates::load().context("parsing templates")?,
        trusted_proxies: settings.trusted_proxies.clone(),
        clock: settings.clock.clone(),
        metrics,
    })
}

/// The service's routes on `settings.bind`, with the middleware every answer
/// passes and the network deadlines; its bound address.
fn serve_routes(
    settings: &Settings,
    state: web::Data<AppState>,
) -> anyhow::Result<(SocketAddr, Server)> {
    let listener =
        TcpListener::bind(settings.bind).with_context(|| format!("binding {}", settings.bind))?;
    let address = listener.local_addr()?;
    let mcp = web::Data::new(crate::mcp::transport::Endpoint::new(state.clone()));
    let own_origins = web::Data::new(OwnOrigins::new(
        settings.public_url.clone(),
        address,
        settings.mcp_allowed_origins.clone(),
    ));
    log_own_names(settings, address);
    let server = HttpServer::new(move || {
        App::new()
            // Innermost first: HEAD is routed as GET before any route is matched.
            .wrap(middleware::from_fn(routes::head_as_get))
            .wrap(middleware::from_fn(
                routes::unread_body::close_after_unread_body,
            ))
            .wrap(middleware::from_fn(
                routes::security_headers::security_headers,
            ))
            .wrap(TracingLogger::<PathOnlyRootSpan>::new())
            .app_data(state.clone())
            // For the root span's request-duration count (`telemetry::PathOnlyRootSpan`).
            .app_data(web::Data::from(state.metrics.clone()))
            .app_data(mcp.clone())
            .app_data(own_origins.clone())
            .configure(routes_config)
    });
    let server = match settings.http_workers {
        Some(workers) => server.workers(workers),
        None => server,
    };
    Ok((address, with_deadlines!(server).listen(listener)?.run()))
}

/// `/metrics` alone on `bind`, on one worker; its bound address.
fn serve_metrics(
    bind: SocketAddr,
    state: web::Data<AppState>,
) -> anyhow::Result<(SocketAddr, Server)> {
    let listener =
        TcpListener::bind(bind).with_context(|| format!("binding the metrics listener {bind}"))?;
    let address = listener.local_addr()?;
    let server = HttpServer::new(move || {
        App::new()
            .wrap(middleware::from_fn(routes::head_as_get))
            .app_data(state.clone())
            .route("/metrics", web::get().to(routes::metrics::metrics))
    })
    .workers(1);
    Ok((address, with_deadlines!(server).listen(listener)?.run()))
}

/// Says which names `/mcp` answers when that is not obvious: the service is bound
/// beyond loopback and no public URL is set.
fn log_own_names(settings: &Settings, address: SocketAddr) {
    match &settings.public_url {
        Some(public) => tracing::info!(
            public_url = %public.origin().url(""),
            "page URLs use the public URL; /mcp answers it and the loopback names"
        ),
        None if !address.ip().is_loopback() => tracing::info!(
            %address,
            "AGENT_PAGES_PUBLIC_URL is not set: /mcp answers only localhost, 127.0.0.1, \
             [::1] and the bound address, and page URLs follow each request's Host"
        ),
        None => {}
    }
}

/// Every route of the service.
pub fn routes_config(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(routes::ledger::ledger))
        .route("/search", web::get().to(routes::search::search))
        .route("/p/{slug}", web::get().to(routes::ledger::page))
        .route("/p/{slug}/raw", web::get().to(routes::ledger::raw))
        .route("/p/{slug}/history", web::get().to(routes::history::history))
        .route(
            "/p/{slug}/v/{version}",
            web::get().to(routes::history::version),
        )
        .route("/theme/{name}", web::get().to(routes::theme::set_theme))
        .route("/healthz", web::get().to(routes::health::healthz))
        .route("/readyz", web::get().to(routes::health::readyz))
        .route("/static/{name}", web::get().to(routes::assets::asset))
        .route("/favicon.ico", web::get().to(routes::assets::favicon_ico))
        .route("/robots.txt", web::get().to(routes::assets::robots))
        // A browser page of another origin may not write (own_origins: DNS rebinding
        // and bodies without a Content-Type).
        .service(routes::api::scope().wrap(middleware::from_fn(
            crate::http::own_origins::refuse_foreign_writes,
        )))
        .route("/mcp", web::to(crate::mcp::transport::mcp))
        .route(
            crate::mcp::face::READ_ONLY_PATH,
            web::to(crate::mcp::transport::mcp),
        )
        .default_service(web::to(routes::not_found));
}

/// Sweeps ended budget windows periodically. (The candidate snapshot is warmed in
/// [`Application::build`], before the server is ready.)
fn spawn_background(state: &AppState) {
    let budgets = &state.budgets;
    let horizon = [
        &budgets.search,
        &budgets.publish,
        &budgets.pin_failures,
        &budgets.pin_page_failures,
    ]
    .iter()
    .map(|b| b.horizon())
    .max()
    .unwrap_or(0);
    let budget_store = budgets.store.clone();
    let clock = state.clock.clone();
    let pages = state.pages.store.clone();
    actix_web::rt::spawn(async move {
        let mut tick = tokio::time::interval(SWEEP_INTERVAL);
        loop {
            tick.tick().await;
            // In batches, with a pause between them: after a fresh import the
            // log holds a row per page, and the first searches come in now.
            let mut deleted = 0;
            loop {
                match pages.compact_changes(CHANGES_KEPT).await {
                    Ok(n) => {
                        deleted += n;
                        if n < crate::page_store::COMPACT_BATCH {
                            break;
                        }
                        tokio::time::sleep(COMPACT_PAUSE).await;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "compacting the corpus change log failed");
                        break;
                    }
                }
            }
            if deleted > 0 {
                tracing::debug!(deleted, "compacted the corpus change log");
            }
            match budget_store.sweep(clock.now(), horizon).await {
                Ok(deleted) if deleted > 0 => {
                    tracing::debug!(deleted, "swept ended budget windows")
                }
                Ok(_) => {}
                Err(BudgetStoreError::Closed(_)) => break,
                Err(e) => tracing::warn!(error = %e, "sweeping budget windows failed"),
            }
        }
    });
}
