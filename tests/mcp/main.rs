//! Integration tests of `/mcp` (the pages API as MCP tools) through real HTTP on a
//! loopback port 0, over a real SQLite file: JSON-RPC messages as an MCP client
//! sends them over Streamable HTTP, in both lifecycles (the `initialize` handshake
//! of 2025-11-25 and earlier, and 2026-07-28's `server/discover` with per-request
//! metadata). `tests/mcp_python.rs` drives the same endpoint with the official
//! Python SDK client.

mod helpers;

mod budgets;
mod envelope;
mod faces;
mod history;
mod idempotency;
mod lifecycle;
mod limits;
mod page_text;
mod rebinding;
mod stores_down;
mod tools;
