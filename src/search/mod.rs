//! The search pipeline, one module per gate, in the order a request meets them:
//! [`query`] (gate 1), [`client_ip`] (gate 2), [`crate::budget`] (gates 3/4), [`corpus`]
//! and the cache (gate 5), then [`rank`] inside a scorer slot.

pub(crate) mod chunked;
pub mod client_ip;
pub mod corpus;
pub mod normalize;
pub mod query;
pub mod rank;
pub mod rows;
