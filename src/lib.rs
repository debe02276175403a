//! agent-pages: a small publishing service for agents with a five-gate fuzzy title
//! search. See README.md for the product and `docs/spec.md` for the contract.
//!
//! One search request reads top to bottom through [`operations::search`], which
//! calls the gates in order: [`search::query`] (1), [`client_ip`] (2),
//! [`budget`] through [`budget::store`] (3/4), [`search::corpus`] and
//! [`search::cache`] (5), then [`search::scorer`] running [`search::rank`].
//!
//! # Layout
//!
//! Five groups, each importing only from the groups below it (a face never from
//! another face, a store never from an operation):
//!
//! - **Faces**, how the service is reached: [`routes`] (the HTTP routes: the agent
//!   API, `/search`, the HTML pages, health, metrics), [`mcp`] (`/mcp` and the stdio
//!   bridge), [`cli`] (`serve`, `import`, `migrate`, `copy`), with [`http`] (what
//!   every HTTP route shares: the caller, origins, body reading, problem answers,
//!   `RateLimit` headers) and [`templates`] below them. Wired once by [`startup`]
//!   from [`configuration`] into [`state`], which every handler reads.
//! - **Operations**, what a caller can do, written once for both faces:
//!   [`operations`] (publish, list, read, update, archive, claim, search; each a
//!   typed outcome the face translates).
//! - **Gates**, what an operation checks before it works: [`search::query`],
//!   [`client_ip`], [`budget`] (windows as data, the decision, the headers),
//!   [`pin`] (argon2id PINs and their bounds), [`request_limits`]; and the search's
//!   own engine: [`search`] (the corpus snapshot, the cache, the scorer and
//!   [`search::rank`]), [`markdown`] (page bodies rendered).
//! - **Stores**, where data lives, each one seam opened in one place:
//!   [`page_store`] (one [`page_store::PageBackend`] per database, with its
//!   [`page_store::PageHistory`] and [`page_store::IdempotencyBackend`]; chosen by
//!   [`page_store::open`]), [`budget::store`] (one [`budget::store::BudgetBackend`]
//!   per store: SQLite, Redis, PostgreSQL, chosen by [`budget::open`]); below them
//!   the databases themselves, known only to the stores, the budget backends and
//!   the CLI's `copy`: [`sqlite`] (the SQLite files, their migrations and identity)
//!   and [`pg`] (PostgreSQL settings, pool, migrations); [`import`] writes through
//!   the page store.
//! - **Leaves**, imported by anything, importing only other leaves:
//!   [`domain`] (the page fields and their rules), [`page_records`] (what the page
//!   store hands out and takes in), [`faults`] (the one fault vocabulary every store
//!   maps into and every face maps out of), [`clock`], [`metrics`], [`telemetry`],
//!   [`thread_priority`].
//!
//! Each seam's behaviour is written once as a contract suite run against every
//! backend (`tests/contract`): a new backend implements the trait and passes it.

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
