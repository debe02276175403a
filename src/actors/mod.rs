//! The actors behind `/search`: [`rate_limiter::RateLimiter`] serializes the budget
//! transaction on the one write connection, [`scorer`] is the pool of scoring slots,
//! [`cache::Cache`] owns the result LRU, which handlers read for hits through
//! [`cache_view::CacheView`].

pub mod cache;
pub mod cache_view;
pub mod rate_limiter;
pub mod scorer;
