//! The search pipeline, one module per gate, in the order a request meets them:
//! [`query`] (gate 1), [`crate::client_ip`] (gate 2), [`crate::budget`] (gates 3/4), [`corpus`]
//! and [`cache`] (gate 5: the LRU and single flight, an actor), then [`rank`] inside
//! a slot of the [`scorer`] pool (actors too).

pub mod cache;
pub(crate) mod chunked;
pub mod corpus;
pub mod normalize;
pub mod query;
pub mod rank;
pub mod rows;
pub mod scorer;
pub mod settings;
#[cfg(test)]
pub(crate) mod testing;
