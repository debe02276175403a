//! Bounds on reading request bodies, where the settings that choose them
//! ([`crate::configuration`]) and the body reader that keeps them
//! ([`crate::routes::api::body`]) both find them.

use std::time::Duration;

/// Bounds on reading request bodies (`AGENT_PAGES_BODY_TIMEOUT_SECS`,
/// `AGENT_PAGES_MAX_OPEN_BODIES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    /// A body must have arrived in full this long after its reading began.
    pub body_timeout: Duration,
    /// Bodies being read at once in the process.
    pub max_open_bodies: usize,
}

impl Default for RequestLimits {
    fn default() -> Self {
        Self {
            body_timeout: Duration::from_secs(10),
            max_open_bodies: 128,
        }
    }
}
