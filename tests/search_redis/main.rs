//! The budget-related search tests of `tests/search/` (budget, outcome matrix,
//! admission and rate-limit headers) run again with the counters in Redis: each app
//! gets a real `redis-server` of its own (no persistence, free port), and the
//! tests' counter reads go to Redis instead of SQLite. Same assertions, other store.

#[path = "../search/admission.rs"]
mod admission;
#[path = "../search/budget.rs"]
mod budget;
mod forwarder;
mod helpers;
#[path = "../search/matrix.rs"]
mod matrix;
mod outage;
mod pins;
mod recovery;
mod recovery_times;
mod skew;
