//! Integration tests of the agent JSON API (`/api/…`) through real HTTP on a loopback
//! port 0, over a real SQLite file, with real concurrency.

#[path = "../common/mod.rs"]
mod common;
mod helpers;

mod concurrency;
mod create;
mod errors;
mod lifecycle;
mod openapi;
mod pins;
mod publish_budget;
mod read;
mod search_effects;
mod update;
