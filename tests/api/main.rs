//! Integration tests of the agent JSON API (`/api/…`) through real HTTP on a loopback
//! port 0, over a real SQLite file, with real concurrency.

mod helpers;

mod concurrency;
mod conditional_reads;
mod create;
mod deadlines;
mod errors;
mod forwarded;
mod head;
mod history;
mod idempotency;
mod lifecycle;
mod openapi;
mod other_writers;
mod pins;
mod publish_budget;
mod read;
mod read_only;
mod search_effects;
mod storage;
mod titles;
mod update;
