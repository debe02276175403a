//! Operator signals in Prometheus text format, served on their own listener
//! (`AGENT_PAGES_METRICS_BIND`). No label ever holds query text, an IP, a slug or a
//! bucket key: every label value comes from a fixed set named at its metric (search
//! outcome, route family, status class, store backend and result, page operation,
//! problem kind, MCP tool, readiness check, build version and commit). Times are in
//! seconds, sizes in bytes (Prometheus' base units). docs/deploy.md "Metrics,
//! dashboard and alerts" lists them with the dashboard and the alerts that read them.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use prometheus::core::Collector;
use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

/// The route families of `agent_pages_http_request_duration_seconds{family}`:
/// `/search`; `/api/…`; `/mcp`; the ledger and pages (`/`, `/p/…`); everything else
/// (assets, health, theme).
pub const ROUTE_FAMILIES: [&str; 5] = ["search", "api", "mcp", "pages", "other"];

/// The family of a request path (see [`ROUTE_FAMILIES`]).
pub fn route_family(path: &str) -> &'static str {
    match path {
        "/search" => "search",
        "/mcp" => "mcp",
        "/" => "pages",
        _ if path.starts_with("/api/") => "api",
        _ if path.starts_with("/p/") => "pages",
        _ => "other",
    }
}

/// Every status class, in the order [`status_class`] names them.
pub const STATUS_CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// The `outcome` of a request duration: its status class, `2xx` … `5xx`.
pub fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

/// The checks of `agent_pages_ready{reason}` besides `ok` (`/readyz`'s fields).
pub const READY_REASONS: [&str; 4] = ["ok", "page_store", "snapshot", "budget_store"];

/// What one store call came to, the `result` label of the store call counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallResult {
    /// Answered (for the budget store: counted, or read).
    Ok,
    /// The budget store answered that a window is full.
    Refused,
    /// The page store's lock was held past its busy timeout.
    Busy,
    /// No answer: an error, a timeout, an unavailable store.
    Failed,
}

impl CallResult {
    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            CallResult::Ok => "ok",
            CallResult::Refused => "refused",
            CallResult::Busy => "busy",
            CallResult::Failed => "failed",
        }
    }
}

/// The handles one store updates per call: `agent_pages_{store}_calls_total
/// {backend, result}` and `agent_pages_{store}_call_duration_seconds{backend}`,
/// curried with its backend (`sqlite`, `redis`, `postgres`, …).
#[derive(Clone)]
pub struct StoreCalls {
    /// Per [`CallResult`] (`ok`, `refused`, `busy`, `failed`), resolved once.
    calls: [IntCounter; 4],
    seconds: Histogram,
}

impl StoreCalls {
    /// Counts one call's result, and its time when it was measured.
    pub fn record(&self, result: CallResult, took: Option<Duration>) {
        self.calls[result as usize].inc();
        if let Some(took) = took {
            self.seconds.observe(took.as_secs_f64());
        }
    }
}

/// Where a store keeps its [`StoreCalls`] once start-up has handed them over: shared
/// by the store's clones (those made before included); empty in stores that no
/// server counts (the CLI's, a test's own), whose calls are then not counted.
#[derive(Clone, Default)]
pub struct StoreCallsSlot(Arc<OnceLock<StoreCalls>>);

impl StoreCallsSlot {
    /// Counts from now on into `calls`; a second hand-over is ignored.
    pub fn set(&self, calls: StoreCalls) {
        let _ = self.0.set(calls);
    }

    /// [`StoreCalls::record`], when there are calls to record into.
    pub fn record(&self, result: CallResult, took: Option<Duration>) {
        if let Some(calls) = self.0.get() {
            calls.record(result, took);
        }
    }
}

/// A store's call counter and its latency histogram, registered under `store`
/// (`budget_store`, `page_store`).
struct StoreMetrics {
    calls: IntCounterVec,
    seconds: HistogramVec,
}

impl StoreMetrics {
    /// The handles of `store`, registered in `registry`.
    fn new(registry: &Registry, store: &str, what: &str) -> Self {
        let calls = IntCounterVec::new(
            Opts::new(
                format!("{store}_calls_total"),
                format!("Calls to the {what} by backend and result (ok, refused, busy, failed)."),
            ),
            &["backend", "result"],
        )
        .expect("static metric");
        let seconds = HistogramVec::new(
            HistogramOpts::new(
                format!("{store}_call_duration_seconds"),
                format!("Time of one call to the {what}, by backend."),
            )
            .buckets(STORE_BUCKETS.to_vec()),
            &["backend"],
        )
        .expect("static metric");
        Self {
            calls: registered(registry, calls),
            seconds: registered(registry, seconds),
        }
    }

    /// The handles for `backend`, its series shown at 0 before any call.
    fn of(&self, backend: &'static str, results: &[CallResult]) -> StoreCalls {
        // Every result has its counter (shown at 0), resolved once: `results` are
        // the ones this store gives, the others stay 0.
        debug_assert!(!results.is_empty());
        let counter = |result: CallResult| self.calls.with_label_values(&[backend, result.label()]);
        StoreCalls {
            calls: [
                counter(CallResult::Ok),
                counter(CallResult::Refused),
                counter(CallResult::Busy),
                counter(CallResult::Failed),
            ],
            seconds: self.seconds.with_label_values(&[backend]),
        }
    }
}

/// Store call buckets, seconds: 0.1 ms (an in-process SQLite read) to 5 s (past
/// every configured store deadline).
const STORE_BUCKETS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0,
    3.0, 5.0,
];

/// Request buckets, seconds: 0.1 ms (a cache hit) to 10 s (a slow body).
const REQUEST_BUCKETS: [f64; 17] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.008, 0.01, 0.015, 0.025, 0.05, 0.1,
    0.25, 0.5, 1.0, 10.0,
];

/// The registry and the handles the service updates.
pub struct Metrics {
    registry: Registry,
    /// `agent_pages_search_requests_total{outcome}`.
    pub requests: IntCounterVec,
    /// Candidate fetches made for budgeted searches (gate 5).
    pub candidate_fetches: IntCounter,
    /// Scorer slots taken by cache misses.
    pub slots_acquired: IntCounter,
    /// Cache misses that found every scorer slot taken (the 503-busy row).
    pub slots_refused: IntCounter,
    /// Seconds each scoring took inside its slot.
    pub scoring_seconds: Histogram,
    /// Gauges set at scrape time from the live state.
    pub slots_busy: IntGauge,
    pub in_flight: IntGauge,
    pub cache_entries: IntGauge,
    /// Bytes the cache's entries keep alive (bounded by `SEARCH_CACHE_MAX_BYTES`).
    pub cache_bytes: IntGauge,
    /// What the cache's carry rule did per corpus move (`search::cache::carry`).
    pub cache_carries: CarryMetrics,
    pub candidates: IntGauge,
    pub generation: IntGauge,
    /// Log lines dropped because the queue to the log writer was full
    /// (`crate::telemetry::lines_dropped`, brought up to date at scrape time).
    pub log_lines_dropped: IntCounter,
    /// `SEARCH_CACHE_MAX_BYTES`, the bound of `cache_bytes`.
    pub cache_max_bytes: IntGauge,
    /// Scorer slots there are (`SEARCH_CONCURRENCY`), the bound of `slots_busy`.
    pub slots: IntGauge,
    /// `agent_pages_http_request_duration_seconds{family, outcome}`: from the
    /// request's arrival at the middleware to its answer's head, by route family
    /// ([`ROUTE_FAMILIES`]) and status class ([`status_class`]).
    pub request_seconds: HistogramVec,
    /// Its children, resolved once: `[family][class]` in [`ROUTE_FAMILIES`] and
    /// [`STATUS_CLASSES`] order (no label hashing or lock per request).
    request_children: Vec<Vec<Histogram>>,
    budget_store: StoreMetrics,
    page_store: StoreMetrics,
    /// `agent_pages_page_writes_total{operation, outcome}`: `publish`, `update`,
    /// `archive`, `claim`, `restore` ([`PAGE_OPERATIONS`]); `ok` or the problem kind that refused it
    /// (`/problems/wrong-pin` → `wrong-pin`).
    pub page_writes: IntCounterVec,
    /// `agent_pages_pin_failures_total{outcome}`: PIN checks that let nobody in, by
    /// why ([`PinFailure`]).
    pub pin_failures: IntCounterVec,
    /// `agent_pages_mcp_tool_calls_total{tool, outcome}`: `tools/call` by tool name
    /// (`unknown` for a name no tool has) and `ok` / `error` (a tool error result)
    /// / `unknown_tool`.
    pub mcp_tool_calls: IntCounterVec,
    /// `agent_pages_ready{reason}`: at scrape time, 1 on `ok` when `/readyz` would
    /// pass, else 1 on each failing check ([`READY_REASONS`]); 0 elsewhere.
    pub ready: IntGaugeVec,
}

/// Why a PIN check let nobody in: the `outcome` of `agent_pages_pin_failures_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinFailure {
    /// A PIN was given and was not the page's.
    Wrong,
    /// No `X-Page-Pin` (or `pin` argument) for a page that has a PIN.
    Missing,
    /// The client's failure budget is used up.
    ClientRefused,
    /// The page's failure budget (from all clients) is used up.
    PageRefused,
}

impl PinFailure {
    /// Every outcome, in label order.
    pub const ALL: [PinFailure; 4] = [
        PinFailure::Wrong,
        PinFailure::Missing,
        PinFailure::ClientRefused,
        PinFailure::PageRefused,
    ];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            PinFailure::Wrong => "wrong",
            PinFailure::Missing => "missing",
            PinFailure::ClientRefused => "client_refused",
            PinFailure::PageRefused => "page_refused",
        }
    }
}

/// The page operations of `agent_pages_page_writes_total`, shown at 0 before any.
pub const PAGE_OPERATIONS: [&str; 5] = ["publish", "update", "archive", "claim", "restore"];

/// The commit the binary was built from: `AGENT_PAGES_COMMIT` in the build's
/// environment (`AGENT_PAGES_COMMIT=$(git rev-parse --short HEAD) cargo build`;
/// the Dockerfile's build argument of that name), else `unknown`.
pub const BUILD_COMMIT: &str = match option_env!("AGENT_PAGES_COMMIT") {
    Some(commit) => commit,
    None => "unknown",
};

/// `metric`, registered in `registry` as well (the names are static, so a name
/// registered twice is a bug).
fn registered<M: Collector + Clone + 'static>(registry: &Registry, metric: M) -> M {
    registry
        .register(Box::new(metric.clone()))
        .expect("unique metric names");
    metric
}

impl Metrics {
    /// A fresh registry with every label of `outcomes` pre-registered at 0 (so a
    /// scrape shows the full set before any traffic); see
    /// `operations::search::outcome::labels`.
    pub fn new(outcomes: &[String]) -> Self {
        let registry =
            Registry::new_custom(Some("agent_pages".into()), None).expect("static prefix is valid");
        // Each metric is registered as it is made.
        let counter = |name: &str, help: &str| {
            registered(
                &registry,
                IntCounter::new(name, help).expect("static metric"),
            )
        };
        let counter_vec = |name: &str, help: &str, labels: &[&str]| {
            let metric = IntCounterVec::new(Opts::new(name, help), labels).expect("static metric");
            registered(&registry, metric)
        };
        let gauge = |name: &str, help: &str| {
            registered(&registry, IntGauge::new(name, help).expect("static metric"))
        };
        let gauge_vec = |name: &str, help: &str, labels: &[&str]| {
            let metric = IntGaugeVec::new(Opts::new(name, help), labels).expect("static metric");
            registered(&registry, metric)
        };
        let requests = counter_vec(
            "search_requests_total",
            "Search requests by outcome.",
            &["outcome"],
        );
        for outcome in outcomes {
            requests.with_label_values(&[outcome.as_str()]);
        }
        let scoring_seconds = Histogram::with_opts(
            HistogramOpts::new(
                "search_scoring_seconds",
                "Time spent scoring one search in a scorer slot.",
            )
            // Fine from 1 to 30 ms, where misses are (a p99 goal of 8 ms needs
            // buckets on both sides of it).
            .buckets(vec![
                0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.01, 0.0125,
                0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0,
            ]),
        )
        .expect("static metric");
        let scoring_seconds = registered(&registry, scoring_seconds);
        let request_seconds = HistogramVec::new(
            HistogramOpts::new(
                "http_request_duration_seconds",
                "Time from a request's arrival to its answer's head, by route family and status class.",
            )
            .buckets(REQUEST_BUCKETS.to_vec()),
            &["family", "outcome"],
        )
        .expect("static metric");
        let request_seconds = registered(&registry, request_seconds);
        gauge_vec(
            "build_info",
            "Always 1; the version and commit of this binary are its labels.",
            &["version", "commit"],
        )
        .with_label_values(&[env!("CARGO_PKG_VERSION"), BUILD_COMMIT])
        .set(1);
        let mut metrics = Self {
            requests,
            candidate_fetches: counter(
                "search_candidate_fetches_total",
                "Candidate fetches made for budgeted searches.",
            ),
            slots_acquired: counter(
                "search_scorer_slots_acquired_total",
                "Scorer slots taken by cache misses.",
            ),
            slots_refused: counter(
                "search_scorer_slots_refused_total",
                "Cache misses that found every scorer slot taken.",
            ),
            scoring_seconds,
            slots_busy: gauge("search_scorer_slots_busy", "Scorer slots in use."),
            in_flight: gauge(
                "search_in_flight",
                "Valid search requests between gate 1 and their response.",
            ),
            cache_entries: gauge("search_cache_entries", "Entries in the search result LRU."),
            cache_bytes: gauge(
                "search_cache_bytes",
                "Bytes kept alive by the search result LRU's entries (results, keys, renderings).",
            ),
            cache_carries: CarryMetrics::new().registered(&registry),
            candidates: gauge(
                "search_candidates",
                "Candidate pages in the current snapshot.",
            ),
            generation: gauge(
                "corpus_generation",
                "Corpus generation of the current snapshot.",
            ),
            log_lines_dropped: counter(
                "log_lines_dropped_total",
                "Log lines dropped because the queue to the log writer was full.",
            ),
            cache_max_bytes: gauge(
                "search_cache_max_bytes",
                "The bound of search_cache_bytes (SEARCH_CACHE_MAX_BYTES).",
            ),
            slots: gauge(
                "search_scorer_slots",
                "Scorer slots there are (SEARCH_CONCURRENCY).",
            ),
            request_seconds,
            request_children: Vec::new(),
            budget_store: StoreMetrics::new(&registry, "budget_store", "budget store"),
            page_store: StoreMetrics::new(&registry, "page_store", "page store"),
            page_writes: counter_vec(
                "page_writes_total",
                "Page publishes, updates, archives and claims by outcome (ok or the problem kind).",
                &["operation", "outcome"],
            ),
            pin_failures: counter_vec(
                "pin_failures_total",
                "PIN checks that let nobody in, by why (wrong, missing, client_refused, page_refused).",
                &["outcome"],
            ),
            mcp_tool_calls: counter_vec(
                "mcp_tool_calls_total",
                "MCP tools/call requests by tool and outcome (ok, error, unknown_tool).",
                &["tool", "outcome"],
            ),
            ready: gauge_vec(
                "ready",
                "1 on reason=ok when /readyz passes, else 1 on each failing check; at scrape time.",
                &["reason"],
            ),
            registry,
        };
        metrics.request_children = ROUTE_FAMILIES
            .iter()
            .map(|family| {
                STATUS_CLASSES
                    .iter()
                    .map(|class| metrics.request_seconds.with_label_values(&[family, class]))
                    .collect()
            })
            .collect();
        for operation in PAGE_OPERATIONS {
            metrics.page_writes.with_label_values(&[operation, "ok"]);
        }
        for failure in PinFailure::ALL {
            metrics.pin_failures.with_label_values(&[failure.label()]);
        }
        for reason in READY_REASONS {
            metrics.ready.with_label_values(&[reason]);
        }
        metrics
    }

    /// Counts one search answer.
    pub fn count(&self, outcome: &str) {
        self.requests.with_label_values(&[outcome]).inc();
    }

    /// The handles a budget store of `backend` counts its calls into.
    pub fn budget_store_calls(&self, backend: &'static str) -> StoreCalls {
        self.budget_store.of(
            backend,
            &[CallResult::Ok, CallResult::Refused, CallResult::Failed],
        )
    }

    /// The handles a page store of `backend` counts its calls into.
    pub fn page_store_calls(&self, backend: &'static str) -> StoreCalls {
        self.page_store.of(
            backend,
            &[CallResult::Ok, CallResult::Busy, CallResult::Failed],
        )
    }

    /// Counts one request's answer: `path`'s family, `status`'s class, `took`.
    pub fn observe_request(&self, path: &str, status: u16, took: Duration) {
        let family = route_family(path);
        let class = status_class(status);
        let at = |names: &[&str], name: &str| names.iter().position(|n| *n == name);
        if let (Some(f), Some(c)) = (at(&ROUTE_FAMILIES, family), at(&STATUS_CLASSES, class)) {
            self.request_children[f][c].observe(took.as_secs_f64());
        }
    }

    /// Counts one page write `operation` (one of [`PAGE_OPERATIONS`] or another
    /// fixed name) that came to `outcome`: `None` when it was kept, else the
    /// refusing problem's `type` (`/problems/…`, of which only the last part is kept).
    pub fn count_page_write(&self, operation: &str, refused: Option<&str>) {
        let outcome = match refused {
            None => "ok",
            Some(problem_type) => problem_type.rsplit('/').next().unwrap_or(problem_type),
        };
        self.page_writes
            .with_label_values(&[operation, outcome])
            .inc();
    }

    /// Counts one PIN check that let nobody in.
    pub fn count_pin_failure(&self, failure: PinFailure) {
        self.pin_failures
            .with_label_values(&[failure.label()])
            .inc();
    }

    /// Counts one MCP `tools/call`: `tool` as asked, kept only when `known` (else
    /// `unknown`), with `outcome` `ok`, `error` or `unknown_tool`.
    pub fn count_tool_call(&self, tool: &str, known: bool, outcome: &'static str) {
        let tool = if known { tool } else { "unknown" };
        self.mcp_tool_calls
            .with_label_values(&[tool, outcome])
            .inc();
    }

    /// Shows the series of `tool`'s successful calls at 0 before any call.
    pub fn show_tool(&self, tool: &str) {
        self.mcp_tool_calls.with_label_values(&[tool, "ok"]);
    }

    /// Sets `agent_pages_ready` from the failing checks (`READY_REASONS` names).
    pub fn set_ready(&self, failing: &[&str]) {
        for reason in READY_REASONS {
            let on = if reason == "ok" {
                failing.is_empty()
            } else {
                failing.contains(&reason)
            };
            self.ready.with_label_values(&[reason]).set(i64::from(on));
        }
    }

    /// The exposition text (`text/plain; version=0.0.4`).
    pub fn encode(&self) -> String {
        let mut buf = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .expect("encoding to a Vec cannot fail");
        String::from_utf8(buf).expect("the text format is UTF-8")
    }
}

/// What carrying shows an operator: `agent_pages_search_cache_carries_total{result}`
/// (entries of the old fingerprint per move: `carried`, `patched` (replaced by
/// their result with the changed titles patched in), `dropped` after a check,
/// `unchecked` past the budget) and `agent_pages_search_cache_carry_seconds` (the
/// Cache actor's time for one move: the checks and the re-keying). No label holds
/// query text.
#[derive(Debug, Clone)]
pub struct CarryMetrics {
    pub carries: IntCounterVec,
    pub seconds: Histogram,
}

impl CarryMetrics {
    /// Unregistered handles, every `result` label at 0.
    pub fn new() -> Self {
        let carries = IntCounterVec::new(
            Opts::new(
                "search_cache_carries_total",
                "Search cache entries of the fingerprint a write replaced, by what the carry rule did: carried, patched, dropped, unchecked.",
            ),
            &["result"],
        )
        .expect("static metric");
        for result in ["carried", "patched", "dropped", "unchecked"] {
            carries.with_label_values(&[result]);
        }
        let seconds = Histogram::with_opts(
            HistogramOpts::new(
                "search_cache_carry_seconds",
                "Time the search cache spent carrying its entries across one corpus move.",
            )
            .buckets(vec![
                0.00001, 0.00002, 0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01,
                0.025, 0.05,
            ]),
        )
        .expect("static metric");
        Self { carries, seconds }
    }

    /// The same handles, registered in `registry`.
    fn registered(self, registry: &Registry) -> Self {
        Self {
            carries: registered(registry, self.carries),
            seconds: registered(registry, self.seconds),
        }
    }

    /// Counts what one move did.
    pub fn observe(
        &self,
        carried: usize,
        patched: usize,
        dropped: usize,
        unchecked: usize,
        seconds: f64,
    ) {
        for (result, n) in [
            ("carried", carried),
            ("patched", patched),
            ("dropped", dropped),
            ("unchecked", unchecked),
        ] {
            self.carries.with_label_values(&[result]).inc_by(n as u64);
        }
        self.seconds.observe(seconds);
    }
}

impl Default for CarryMetrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_fall_in_their_route_family_and_statuses_in_their_class() {
        for (path, family) in [
            ("/search", "search"),
            ("/api/pages", "api"),
            ("/api/pages/vim/history", "api"),
            ("/mcp", "mcp"),
            ("/", "pages"),
            ("/p/vim", "pages"),
            ("/p/vim/raw", "pages"),
            ("/static/app.css", "other"),
            ("/readyz", "other"),
            ("/searchx", "other"),
            ("/apix", "other"),
        ] {
            assert_eq!(route_family(path), family, "{path}");
        }
        for (status, class) in [
            (200, "2xx"),
            (303, "3xx"),
            (404, "4xx"),
            (429, "4xx"),
            (503, "5xx"),
        ] {
            assert_eq!(status_class(status), class, "{status}");
        }
    }

    #[test]
    fn readiness_sets_ok_alone_or_each_failing_check() {
        let metrics = Metrics::new(&[]);
        let on = |reason: &str| metrics.ready.with_label_values(&[reason]).get();
        metrics.set_ready(&[]);
        assert_eq!(
            READY_REASONS.map(on),
            [1, 0, 0, 0],
            "ok, page_store, snapshot, budget_store"
        );
        metrics.set_ready(&["snapshot", "budget_store"]);
        assert_eq!(READY_REASONS.map(on), [0, 0, 1, 1]);
    }

    #[test]
    fn a_refused_write_is_counted_under_the_last_part_of_its_problem_type() {
        let metrics = Metrics::new(&[]);
        metrics.count_page_write("update", Some("/problems/wrong-pin"));
        metrics.count_page_write("update", None);
        let count = |outcome: &str| {
            metrics
                .page_writes
                .with_label_values(&["update", outcome])
                .get()
        };
        assert_eq!((count("wrong-pin"), count("ok")), (1, 1));
        let text = metrics.encode();
        assert!(!text.contains("/problems/"), "{text}");
    }
}
