//! Bounds on reading request bodies, where the settings that choose them
//! ([`crate::configuration`]), the app state that holds them and the body reader
//! that keeps them ([`crate::http::body`]) all find them: [`RequestLimits`]
//! (the configured values) and [`BodyGate`] (the process's slots and deadline).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, TryAcquireError};

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

/// The bounds on reading bodies: how long one may take to arrive, and how many are
/// read at once. actix-web has no body-read timeout of its own, so without these a
/// client that sends `Content-Length: 1000` and one byte holds a socket (and a
/// file descriptor) for good.
#[derive(Debug, Clone)]
pub struct BodyGate {
    deadline: Duration,
    cap: usize,
    slots: Arc<tokio::sync::Semaphore>,
}

impl BodyGate {
    /// A gate with `limits.body_timeout` and `limits.max_open_bodies` slots.
    pub fn new(limits: RequestLimits) -> Self {
        Self {
            deadline: limits.body_timeout,
            cap: limits.max_open_bodies,
            slots: Arc::new(tokio::sync::Semaphore::new(limits.max_open_bodies)),
        }
    }

    /// Bodies being read right now.
    pub fn open(&self) -> usize {
        self.cap - self.slots.available_permits()
    }

    /// How long a body may take to arrive in full, from when its reading began.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Bodies read at once at most.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// A slot to read one body in, held until dropped; `Err` when all
    /// [`Self::cap`] are taken (never waits).
    pub fn try_slot(&self) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        self.slots.clone().try_acquire_owned()
    }
}
