//! Integration tests of `GET /search` through real HTTP on a loopback port 0, over a
//! real SQLite file, with real concurrency.

mod admission;
mod budget;
mod cache;
mod carry;
mod coalescing;
mod consistency;
#[path = "../common/mod.rs"]
mod helpers;
mod highlight;
mod identity;
mod matrix;
mod pages;
mod paging;
mod privacy;
mod rendering;
mod slots;
mod validation;
