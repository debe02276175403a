//! The RateLimiter actor: owns the SQLite write connection of the budget counters
//! and runs the budget transactions (gates 3/4, the publish budget, PIN failures).
//!
//! It runs on an arbiter (thread) of its own, because SQLite calls block. One
//! thread also serializes the transactions, so `BEGIN IMMEDIATE` never waits on a
//! sibling of its own.
//!
//! Spends are group-committed: a [`Spend`] only queues its request; once the
//! mailbox has been drained (every request that arrived meanwhile), one
//! transaction decides them all in arrival order (each both-or-neither: its
//! windows are all checked before any is written), commits once, and only then
//! answers each. Under load this turns
//! hundreds of commits into one, and no answer is sent before its count is
//! committed. The batch also reads the corpus generation, so a search needs no
//! second database round trip to know whether its candidate snapshot is current.
//!
//! It is the SQLite backend of the budget store: handlers reach it through
//! [`super::store::BudgetStore`], which hides whether the counters live here or in
//! Redis; the SQL it runs is [`super::sqlite`]'s.

use std::sync::Arc;

use actix::{Actor, AsyncContext, Context, Handler, Message, MessageResult};
use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::oneshot;

use super::{sqlite, BucketKeys, Budget, Decision};
use crate::db::{pages, DbError};

/// How long a budget transaction waits for another writer's lock (an import's
/// final transaction, a page write of another process) before the request is
/// answered 503 `budget-unavailable`. Shorter than the page writes' timeout: every
/// search queues behind this one thread, so a long wait here stalls them all.
pub const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// Most spends decided in one transaction.
pub const MAX_BATCH: usize = 512;

/// Spend one request from every window of `budget` for `keys` at `now` (unix
/// seconds): both-or-neither. Answers a receiver of the decision, sent once the
/// batch it joined is committed.
#[derive(Debug)]
pub struct Spend {
    pub budget: Arc<Budget>,
    pub keys: BucketKeys,
    pub now: i64,
}

/// A committed decision and the corpus generation read in the same transaction.
pub type Spent = Result<(Decision, i64), SpendFailed>;

impl Message for Spend {
    type Result = oneshot::Receiver<Spent>;
}

/// Why a batch of spends failed; shared by every request in the batch.
#[derive(Debug, Clone, thiserror::Error)]
#[error("budget transaction failed: {cause}")]
pub struct SpendFailed {
    /// Another writer held the lock past [`BUSY_TIMEOUT`]: worth a retry.
    pub busy: bool,
    /// The SQLite error, for logs.
    pub cause: String,
}

/// What [`Counts`] does with the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountMode {
    /// Read them, changing nothing.
    Peek,
    /// Count one event in every window, whatever the limits.
    Record,
}

/// Read (or record one event in) the counters of `keys` at `now`; answers the
/// counts after.
#[derive(Debug)]
pub struct Counts {
    pub budget: Arc<Budget>,
    pub keys: BucketKeys,
    pub now: i64,
    pub mode: CountMode,
}

impl Message for Counts {
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

/// Decide the queued spends (sent to itself once the mailbox is drained).
struct Flush;

impl Message for Flush {
    type Result = ();
}

/// The actor; see the module docs.
pub struct RateLimiter {
    conn: Connection,
    pending: Vec<(Spend, oneshot::Sender<Spent>)>,
    flush_queued: bool,
}

impl RateLimiter {
    /// Takes the (migrated) write connection and sets its [`BUSY_TIMEOUT`].
    ///
    /// Errors: SQLite refused the setting.
    pub fn new(conn: Connection) -> rusqlite::Result<Self> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        Ok(Self {
            conn,
            pending: Vec::new(),
            flush_queued: false,
        })
    }

    /// One transaction for `batch`: each spend decided in order, the generation
    /// read, one commit.
    fn decide(
        &mut self,
        batch: &[(Spend, oneshot::Sender<Spent>)],
    ) -> rusqlite::Result<(Vec<Decision>, i64)> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Each checks every window before writing any: a refusal writes nothing.
        let decisions = sqlite::spend_batch(
            &tx,
            batch
                .iter()
                .map(|(spend, _)| (&*spend.budget, &spend.keys, spend.now)),
        )?;
        let generation = pages::generation(&tx)?;
        tx.commit()?;
        Ok((decisions, generation))
    }
}

impl Actor for RateLimiter {
    type Context = Context<Self>;
}

impl Handler<Spend> for RateLimiter {
    type Result = MessageResult<Spend>;

    fn handle(&mut self, msg: Spend, ctx: &mut Self::Context) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.pending.push((msg, tx));
        if self.pending.len() >= MAX_BATCH {
            self.handle(Flush, ctx);
        } else if !self.flush_queued {
            // Runs after the messages already in the mailbox: they join this batch.
            self.flush_queued = true;
            ctx.notify(Flush);
        }
        MessageResult(rx)
    }
}

impl Handler<Flush> for RateLimiter {
    type Result = ();

    fn handle(&mut self, _: Flush, _: &mut Self::Context) {
        self.flush_queued = false;
        // Spends whose caller went away need no decision.
        let mut batch = std::mem::take(&mut self.pending);
        batch.retain(|(_, answer)| !answer.is_closed());
        if batch.is_empty() {
            return;
        }
        match self.decide(&batch) {
            Ok((decisions, generation)) => {
                for ((_, answer), decision) in batch.into_iter().zip(decisions) {
                    let _ = answer.send(Ok((decision, generation)));
                }
            }
            Err(e) => {
                let e = DbError::from(e);
                let failed = SpendFailed {
                    busy: e.is_busy(),
                    cause: e.to_string(),
                };
                for (_, answer) in batch {
                    let _ = answer.send(Err(failed.clone()));
                }
            }
        }
    }
}

impl Handler<Counts> for RateLimiter {
    type Result = Result<Vec<i64>, DbError>;

    fn handle(&mut self, msg: Counts, _: &mut Self::Context) -> Self::Result {
        match msg.mode {
            CountMode::Peek => Ok(sqlite::peek(&self.conn, &msg.budget, &msg.keys, msg.now)?),
            CountMode::Record => {
                let tx = self
                    .conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)?;
                let counts = sqlite::record(&tx, &msg.budget, &msg.keys, msg.now)?;
                tx.commit()?;
                Ok(counts)
            }
        }
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
