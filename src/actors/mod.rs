//! The actors behind `/search`: [`scorer`] is the pool of scoring slots,
//! [`cache::Cache`] owns the result LRU, which handlers read for hits through
//! [`cache_view::CacheView`]. (The budget's SQLite actor is
//! [`crate::budget::rate_limiter`].)

pub mod cache;
pub mod cache_view;
pub mod scorer;
