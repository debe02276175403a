//! Operator signals in Prometheus text format, served on their own listener
//! (`AGENT_PAGES_METRICS_BIND`). No label ever holds query text, an IP or a bucket
//! key: the only label is the search outcome, from a fixed set.

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};

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
    pub cache_carries: crate::search::cache::carry::CarryMetrics,
    pub candidates: IntGauge,
    pub generation: IntGauge,
    /// Log lines dropped because the queue to the log writer was full
    /// (`crate::telemetry::lines_dropped`, brought up to date at scrape time).
    pub log_lines_dropped: IntCounter,
}

impl Metrics {
    /// A fresh registry with every label of `outcomes` pre-registered at 0 (so a
    /// scrape shows the full set before any traffic); see
    /// `operations::search::outcome::labels`.
    pub fn new(outcomes: &[String]) -> Self {
        let registry =
            Registry::new_custom(Some("agent_pages".into()), None).expect("static prefix is valid");
        let requests = IntCounterVec::new(
            Opts::new("search_requests_total", "Search requests by outcome."),
            &["outcome"],
        )
        .expect("static metric");
        for outcome in outcomes {
            requests.with_label_values(&[outcome.as_str()]);
        }
        let counter = |name: &str, help: &str| IntCounter::new(name, help).expect("static metric");
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
        let gauge = |name: &str, help: &str| IntGauge::new(name, help).expect("static metric");
        let metrics = Self {
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
            cache_carries: crate::search::cache::carry::CarryMetrics::new(),
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
            registry,
        };
        for collector in [
            Box::new(metrics.requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(metrics.scoring_seconds.clone()),
            Box::new(metrics.candidate_fetches.clone()),
            Box::new(metrics.slots_acquired.clone()),
            Box::new(metrics.slots_refused.clone()),
            Box::new(metrics.slots_busy.clone()),
            Box::new(metrics.in_flight.clone()),
            Box::new(metrics.cache_entries.clone()),
            Box::new(metrics.cache_bytes.clone()),
            Box::new(metrics.cache_carries.carries.clone()),
            Box::new(metrics.cache_carries.seconds.clone()),
            Box::new(metrics.candidates.clone()),
            Box::new(metrics.generation.clone()),
            Box::new(metrics.log_lines_dropped.clone()),
        ] {
            metrics
                .registry
                .register(collector)
                .expect("unique metric names");
        }
        metrics
    }

    /// Counts one search answer.
    pub fn count(&self, outcome: &str) {
        self.requests.with_label_values(&[outcome]).inc();
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
