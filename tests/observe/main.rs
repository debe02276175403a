//! The `observe` compose profile's files checked with real tools: Prometheus' own
//! `promtool` validates the configuration and the alert rules and runs their unit
//! tests (deploy/prometheus/alerts.test.yml); the Grafana dashboard is checked
//! against its provisioning; a real server's `/metrics` has every series the
//! dashboard and the alerts read, moved by the requests that should move them.

#[path = "../common/mod.rs"]
mod helpers;
use helpers::support;

mod dashboard;
mod metrics;
mod prometheus;
mod rules;

use std::path::PathBuf;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `promtool` (Debian's `prometheus` package), or `PROMTOOL`.
pub fn promtool() -> PathBuf {
    support::require_program("promtool", "PROMTOOL", "prometheus")
}
