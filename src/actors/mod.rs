//! The actors behind `/search`: [`rate_limiter::RateLimiter`] serializes the budget
//! transaction on the one write connection, [`scorer`] is the pool of scoring slots,
//! [`cache::Cache`] owns the result LRU.

pub mod cache;
pub mod rate_limiter;
pub mod scorer;
