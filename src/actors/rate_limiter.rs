//! The RateLimiter actor: owns the write connection and runs the two-window budget
//! transaction (gates 3/4) one request at a time.
//!
//! It is a one-thread `SyncArbiter` actor because SQLite calls block; one thread is
//! also what serializes the transactions, so `BEGIN IMMEDIATE` never waits on a
//! sibling of its own.

use actix::{Actor, Handler, Message, SyncContext};
use rusqlite::{Connection, TransactionBehavior};

use crate::db::DbError;
use crate::search::budget::{self, Limits};
use crate::search::client_ip::BucketKeys;

/// Spend one request from both windows of `keys` at `now` (unix seconds).
#[derive(Debug)]
pub struct Spend {
    pub keys: BucketKeys,
    pub now: i64,
}

impl Message for Spend {
    type Result = Result<budget::Spend, DbError>;
}

/// Delete counter rows of windows that ended at least an hour before `now`.
#[derive(Debug)]
pub struct Sweep {
    pub now: i64,
}

impl Message for Sweep {
    type Result = Result<usize, DbError>;
}

pub struct RateLimiter {
    conn: Connection,
    limits: Limits,
}

impl RateLimiter {
    pub fn new(conn: Connection, limits: Limits) -> Self {
        Self { conn, limits }
    }
}

impl Actor for RateLimiter {
    type Context = SyncContext<Self>;
}

impl Handler<Spend> for RateLimiter {
    type Result = Result<budget::Spend, DbError>;

    fn handle(&mut self, msg: Spend, _: &mut Self::Context) -> Self::Result {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let outcome = budget::spend(&tx, &msg.keys, self.limits, msg.now)?;
        match outcome {
            budget::Spend::Admitted { .. } => tx.commit()?,
            // A refusal leaves neither counter changed.
            budget::Spend::Refused { .. } => tx.rollback()?,
        }
        Ok(outcome)
    }
}

impl Handler<Sweep> for RateLimiter {
    type Result = Result<usize, DbError>;

    fn handle(&mut self, msg: Sweep, _: &mut Self::Context) -> Self::Result {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let deleted = budget::sweep(&tx, msg.now)?;
        tx.commit()?;
        Ok(deleted)
    }
}
