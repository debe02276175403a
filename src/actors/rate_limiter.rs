//! The RateLimiter actor: owns the SQLite write connection of the budget counters
//! and runs each budget transaction (gates 3/4, the publish budget, PIN failures)
//! one at a time.
//!
//! It is a one-thread `SyncArbiter` actor because SQLite calls block; one thread is
//! also what serializes the transactions, so `BEGIN IMMEDIATE` never waits on a
//! sibling of its own. Handlers reach it through [`crate::budget::store::BudgetStore`],
//! which hides whether the counters live here or in Redis.

use std::sync::Arc;

use actix::{Actor, Handler, Message, SyncContext};
use rusqlite::{Connection, TransactionBehavior};

use crate::budget::{sqlite, BucketKeys, Budget, Decision};
use crate::db::DbError;

/// Spend one request from every window of `budget` for `keys` at `now` (unix
/// seconds): both-or-neither.
#[derive(Debug)]
pub struct Spend {
    pub budget: Arc<Budget>,
    pub keys: BucketKeys,
    pub now: i64,
}

impl Message for Spend {
    type Result = Result<Decision, DbError>;
}

/// Read the counts of `keys` at `now` without changing them.
#[derive(Debug)]
pub struct Peek {
    pub budget: Arc<Budget>,
    pub keys: BucketKeys,
    pub now: i64,
}

impl Message for Peek {
    type Result = Result<Vec<i64>, DbError>;
}

/// Count one event in every window of `keys` at `now`, whatever the limits.
#[derive(Debug)]
pub struct Record {
    pub budget: Arc<Budget>,
    pub keys: BucketKeys,
    pub now: i64,
}

impl Message for Record {
    type Result = Result<Vec<i64>, DbError>;
}

/// Delete counter rows whose window started at least `horizon` seconds before `now`.
#[derive(Debug)]
pub struct Sweep {
    pub now: i64,
    pub horizon: i64,
}

impl Message for Sweep {
    type Result = Result<usize, DbError>;
}

/// How long a budget transaction waits for another writer's lock (an import's
/// final transaction, a page write of another process) before the request is
/// answered 503 `budget-unavailable`. Shorter than the page writes' timeout: every
/// search queues behind this one thread, so a long wait here stalls them all.
pub const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// The actor; see the module docs.
pub struct RateLimiter {
    conn: Connection,
}

impl RateLimiter {
    /// Takes the (migrated) write connection and sets its [`BUSY_TIMEOUT`].
    ///
    /// Errors: SQLite refused the setting.
    pub fn new(conn: Connection) -> rusqlite::Result<Self> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        Ok(Self { conn })
    }
}

impl Actor for RateLimiter {
    type Context = SyncContext<Self>;
}

impl Handler<Spend> for RateLimiter {
    type Result = Result<Decision, DbError>;

    fn handle(&mut self, msg: Spend, _: &mut Self::Context) -> Self::Result {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let decision = sqlite::spend(&tx, &msg.budget, &msg.keys, msg.now)?;
        match decision {
            Decision::Admitted(_) => tx.commit()?,
            // A refusal leaves every counter as it was.
            Decision::Refused { .. } => tx.rollback()?,
        }
        Ok(decision)
    }
}

impl Handler<Peek> for RateLimiter {
    type Result = Result<Vec<i64>, DbError>;

    fn handle(&mut self, msg: Peek, _: &mut Self::Context) -> Self::Result {
        Ok(sqlite::peek(&self.conn, &msg.budget, &msg.keys, msg.now)?)
    }
}

impl Handler<Record> for RateLimiter {
    type Result = Result<Vec<i64>, DbError>;

    fn handle(&mut self, msg: Record, _: &mut Self::Context) -> Self::Result {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let counts = sqlite::record(&tx, &msg.budget, &msg.keys, msg.now)?;
        tx.commit()?;
        Ok(counts)
    }
}

impl Handler<Sweep> for RateLimiter {
    type Result = Result<usize, DbError>;

    fn handle(&mut self, msg: Sweep, _: &mut Self::Context) -> Self::Result {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let deleted = sqlite::sweep(&tx, msg.now, msg.horizon)?;
        tx.commit()?;
        Ok(deleted)
    }
}
