//! agent-pages: a small publishing service for agents with a five-gate fuzzy title
//! search. See README.md for the product and `docs/spec.md` for the contract.
//!
//! One search request reads top to bottom through [`operations::search`], which
//! calls the gates in order: [`search::query`] (1), [`client_ip`] (2),
//! [`budget`] through [`budget::store`] (3/4), [`search::corpus`] and
//! [`search::cache`] (5), then [`search::scorer`] running [`search::rank`].

pub mod budget;
pub mod cli;
pub mod client_ip;
pub mod clock;
pub mod configuration;
pub mod domain;
pub mod faults;
pub mod http;
pub mod import;
pub mod invisible;
pub mod markdown;
pub mod mcp;
pub mod metrics;
pub mod operations;
pub mod page_records;
pub mod page_store;
pub mod pg;
pub mod pin;
pub mod request_limits;
pub mod routes;
pub mod search;
pub mod sqlite;
pub mod startup;
pub mod state;
pub mod telemetry;
pub mod templates;
pub mod thread_priority;
