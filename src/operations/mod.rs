//! The operations layer: what agents can do with pages (publish, list, read,
//! update, archive, claim: [`pages`]) and search as an operation with a typed
//! outcome ([`search`]), written once below both faces. The HTTP routes
//! (`routes::api`, `routes::search`) and the MCP tools (`mcp::tools`) each read
//! their request into a call here, with the [`Caller`], and translate its answer
//! into HTTP or a tool result; a new operation is written here and exposed by each
//! face in a few lines.
//!
//! What both faces share lives here too, so neither imports the other: the field
//! rules ([`types`]: bodies, patterns; [`body`]: parsing a JSON object with the
//! failing field named), the one error type ([`error::ApiError`]) and its problem
//! rows, the RFC 9457 document ([`problem::Problem`]). Nothing here reads an HTTP
//! request or builds an HTTP response ([`crate::http`] does, for both faces' HTTP
//! routes).

pub mod body;
pub mod caller;
pub mod error;
pub mod history;
pub mod idempotency;
pub mod pages;
pub mod pin_check;
pub mod problem;
pub mod publish_budget;
pub mod search;
pub mod types;

pub use caller::{Caller, Origin};
