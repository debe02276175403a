//! Operator signals in Prometheus text format, served on their own listener
//! (`AGENT_PAGES_METRICS_BIND`). No label ever holds query text, an IP or a bucket
//! key: the only label is the search outcome, from a fixed set.

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};

/// Every value of the `outcome` label, one per row of the outcome matrix.
pub const OUTCOMES: &[&str] = &[
    "303",
    "short",
    "400",
    "429-minute",
    "429-hour",
    "hit",
    "join",
    "miss",
    "503-busy",
    "503-admission",
    "500",
];

/// The registry and the handles the service updates.
pub struct Metrics {
    registry: Registry,
    /// `agent_pages_search_requests_total{outcome}`.
    pub requests: IntCounterVec,
    /// Seconds each scoring took inside its slot.
    pub scoring_seconds: Histogram,
    /// Gauges set at scrape time from the live state.
    pub slots_busy: IntGauge,
    pub in_flight: IntGauge,
    pub cache_entries: IntGauge,
    pub candidates: IntGauge,
    pub generation: IntGauge,
}

impl Metrics {
    /// A fresh registry with every outcome pre-registered at 0 (so a scrape shows
    /// the full set before any traffic).
    pub fn new() -> Self {
        let registry =
            Registry::new_custom(Some("agent_pages".into()), None).expect("static prefix is valid");
        let requests = IntCounterVec::new(
            Opts::new("search_requests_total", "Search requests by outcome."),
            &["outcome"],
        )
        .expect("static metric");
        for outcome in OUTCOMES {
            requests.with_label_values(&[outcome]);
        }
        let scoring_seconds = Histogram::with_opts(
            HistogramOpts::new(
                "search_scoring_seconds",
                "Time spent scoring one search in a scorer slot.",
            )
            .buckets(vec![
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
            ]),
        )
        .expect("static metric");
        let gauge = |name: &str, help: &str| IntGauge::new(name, help).expect("static metric");
        let metrics = Self {
            requests,
            scoring_seconds,
            slots_busy: gauge("search_scorer_slots_busy", "Scorer slots in use."),
            in_flight: gauge(
                "search_in_flight",
                "Valid search requests between gate 1 and their response.",
            ),
            cache_entries: gauge("search_cache_entries", "Entries in the search result LRU."),
            candidates: gauge(
                "search_candidates",
                "Candidate pages in the current snapshot.",
            ),
            generation: gauge(
                "corpus_generation",
                "Corpus generation of the current snapshot.",
            ),
            registry,
        };
        for collector in [
            Box::new(metrics.requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(metrics.scoring_seconds.clone()),
            Box::new(metrics.slots_busy.clone()),
            Box::new(metrics.in_flight.clone()),
            Box::new(metrics.cache_entries.clone()),
            Box::new(metrics.candidates.clone()),
            Box::new(metrics.generation.clone()),
        ] {
            metrics
                .registry
                .register(collector)
                .expect("unique metric names");
        }
        metrics
    }

    /// Counts one search answer.
    pub fn count(&self, outcome: &'static str) {
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

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
