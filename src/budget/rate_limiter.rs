//! The RateLimiter actor: owns the SQLite write connection of the budget database
//! (a file of its own, never the page database's: see [`crate::sqlite::open_budget`])
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
//! committed. The corpus generation lives in the page database, which a budget
//! transaction never touches (so that no page write, of any size or process, can
//! hold a budget write up); but every search needs it after its spend, so once a
//! batch is committed the actor reads it once, through a [`GenerationProbe`] on a
//! read connection of the page file, and hands it to every spend of the batch.
//! Under load one read serves hundreds of searches, instead of one read (a read
//! transaction, two POSIX lock calls and a `statx`) on the HTTP worker for each.
//! Read after the commit, it is read after every request of the batch arrived, so
//! a search still sees every write acknowledged before it began. When the probe
//! cannot answer (a fault of the page file), the spends carry no generation and
//! the search reads it from the page store itself, which answers the fault
//! (`crate::search::corpus::Corpus`).
//!
//! It is the SQLite backend of the budget store ([`SqliteCounters`]): handlers
//! reach it through [`super::store::BudgetStore`], which hides whether the counters
//! live here or elsewhere; the SQL it runs is [`super::sqlite`]'s.

use std::sync::Arc;

use actix::{Actor, Addr, AsyncContext, Context, Handler, Message, MessageResult};
use futures_util::FutureExt as _;
use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::oneshot;

use super::checkpoint::Checkpointer;
use super::error::BudgetStoreError;
use super::store::{Ask, BudgetBackend, BudgetFuture, CountMode};
use super::{sqlite, BucketKeys, Budget, Decided, Decision, StoreClock, WindowCount};
use crate::faults::Fault;
use crate::sqlite::storage::{NotReady, Storage};
use crate::sqlite::DbError;

/// How long a budget transaction waits for another writer's lock before the
/// request is answered 503 `budget-unavailable`. Only another process's
/// RateLimiter (a server sharing the budget file) writes this file, in batches of
/// milliseconds; page writes and imports never do. Shorter than the page writes'
/// timeout: every search queues behind this one thread, so a long wait here
/// stalls them all.
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

/// A committed decision, with the corpus generation read after its batch was
/// committed (`None` without a [`GenerationProbe`] or when it failed).
pub type SpendOutcome = Result<(Decision, Option<i64>), SpendFailed>;

/// Reads the corpus generation of the page database (on the RateLimiter's
/// thread, once per committed batch); `None` when it cannot be read now, and the
/// search reads it through the page store instead. See the module docs.
pub type GenerationProbe = Box<dyn FnMut() -> Option<i64> + Send>;

impl Message for Spend {
    type Result = oneshot::Receiver<SpendOutcome>;
}

/// Why a batch of spends failed; shared by every request in the batch.
#[derive(Debug, Clone, thiserror::Error)]
#[error("budget transaction failed: {cause}")]
pub struct SpendFailed {
    /// Its class: not a bug (a lock held past [`BUSY_TIMEOUT`], a full disk, I/O)
    /// means the store cannot answer now, worth a retry.
    pub fault: Fault,
    /// The SQLite error, for logs.
    pub cause: String,
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
    /// The budget database's files: checked before every transaction, so a WAL
    /// index that became unsafe to touch is an error, never `SIGBUS`.
    storage: Arc<Storage>,
    pending: Vec<(Spend, oneshot::Sender<SpendOutcome>)>,
    flush_queued: bool,
    generation: Option<GenerationProbe>,
    /// The thread that checkpoints the file's WAL instead of this connection's
    /// commits (see [`super::checkpoint`]); stopped when the actor is dropped.
    _checkpoints: Option<Checkpointer>,
}

impl RateLimiter {
    /// Takes the write connection of the (migrated) budget database
    /// ([`crate::sqlite::open_budget`]) and its files as captured (`storage`), and sets
    /// its [`BUSY_TIMEOUT`].
    ///
    /// Errors: SQLite refused the setting.
    pub fn new(conn: Connection, storage: Arc<Storage>) -> rusqlite::Result<Self> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        Ok(Self {
            conn,
            storage,
            pending: Vec::new(),
            flush_queued: false,
            generation: None,
            _checkpoints: None,
        })
    }

    /// Leaves the WAL checkpoints of the budget file to `checkpoints`: this
    /// connection's commits no longer run them (see [`super::checkpoint`]).
    ///
    /// Errors: SQLite refused the setting.
    pub fn with_checkpointer(mut self, checkpoints: Checkpointer) -> rusqlite::Result<Self> {
        super::checkpoint::disable_auto_checkpoints(&self.conn)?;
        self._checkpoints = Some(checkpoints);
        Ok(self)
    }

    /// Reads the corpus generation with `probe` after each committed batch of
    /// spends, and answers it with each decision (see the module docs).
    pub fn with_generation_probe(mut self, probe: GenerationProbe) -> Self {
        self.generation = Some(probe);
        self
    }

    /// One transaction for `batch`: each spend decided in order, one commit.
    fn decide(
        &mut self,
        batch: &[(Spend, oneshot::Sender<SpendOutcome>)],
    ) -> Result<Vec<Decision>, DbError> {
        self.storage.check_mapped()?;
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
        tx.commit()?;
        Ok(decisions)
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
            Ok(decisions) => {
                let generation = self.generation.as_mut().and_then(|read| read());
                for ((_, answer), decision) in batch.into_iter().zip(decisions) {
                    let _ = answer.send(Ok((decision, generation)));
                }
            }
            Err(e) => {
                let failed = SpendFailed {
                    fault: e.fault(),
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
        self.storage.check_mapped()?;
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
        self.storage.check_mapped()?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let deleted = sqlite::sweep(&tx, msg.now, msg.horizon)?;
        tx.commit()?;
        Ok(deleted)
    }
}

/// The SQLite budget backend: the RateLimiter's address, and the budget file as
/// opened (for readiness). Windows follow the caller's clock, the process's.
pub struct SqliteCounters {
    limiter: Addr<RateLimiter>,
    storage: Arc<Storage>,
}

impl SqliteCounters {
    /// The counters `limiter` writes in the budget file `storage` captured.
    pub fn new(limiter: Addr<RateLimiter>, storage: Arc<Storage>) -> Self {
        Self { limiter, storage }
    }
}

impl BudgetBackend for SqliteCounters {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn clock(&self) -> StoreClock {
        StoreClock::Caller
    }

    fn spend<'a>(&'a self, ask: Ask<'a>) -> BudgetFuture<'a, (Decided, Option<i64>)> {
        async move {
            let answer = self
                .limiter
                .send(Spend {
                    budget: ask.budget.clone(),
                    keys: ask.keys.clone(),
                    now: ask.now,
                })
                .await?;
            match answer.await {
                // The caller's `now` is the SQLite store's clock, in whole seconds;
                // the generation is the page file's, read after the batch's commit.
                Ok(Ok((decision, generation))) => {
                    Ok((Decided::at_whole_second(decision), generation))
                }
                // A lock held too long, a full disk, failing I/O: not ours.
                Ok(Err(failed)) if !failed.fault.is_bug() => {
                    Err(BudgetStoreError::unavailable(failed.cause))
                }
                Ok(Err(failed)) => Err(BudgetStoreError::bug(failed.to_string())),
                Err(_) => Err(actix::MailboxError::Closed.into()),
            }
        }
        .boxed()
    }

    fn counts<'a>(&'a self, ask: Ask<'a>, mode: CountMode) -> BudgetFuture<'a, Vec<WindowCount>> {
        async move {
            let counts = self
                .limiter
                .send(Counts {
                    budget: ask.budget.clone(),
                    keys: ask.keys.clone(),
                    now: ask.now,
                    mode,
                })
                .await??;
            Ok(ask.budget.window_counts(&counts, ask.now))
        }
        .boxed()
    }

    fn sweep(&self, now: i64, horizon: i64) -> BudgetFuture<'_, usize> {
        async move { Ok(self.limiter.send(Sweep { now, horizon }).await??) }.boxed()
    }

    fn check_files(&self) -> Result<(), String> {
        // Free space that cannot be read fails nothing, and is not worth a line.
        self.storage
            .check_ready("budget database")
            .map(drop)
            .map_err(NotReady::into_reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client_ip::ClientIp;
    use crate::sqlite;

    #[actix_web::test]
    async fn every_spend_of_a_batch_answers_the_page_generation_read_after_its_commit() {
        let dir = tempfile::tempdir().unwrap();
        let pages_path = dir.path().join("pages.sqlite3");
        let writer = sqlite::open_migrated(&pages_path).unwrap();
        let budget_path = dir.path().join("pages.budget.sqlite3");
        let budget_conn = sqlite::open_budget(&budget_path).unwrap();
        let storage = Arc::new(Storage::capture(&budget_path).unwrap());
        let reader =
            sqlite::open_reader(&pages_path, std::time::Duration::from_millis(20)).unwrap();
        let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = reads.clone();
        let probe: GenerationProbe = Box::new(move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            crate::page_store::sqlite::pages::generation(&reader).ok()
        });
        let limiter = RateLimiter::new(budget_conn, storage)
            .unwrap()
            .with_generation_probe(probe)
            .start();
        let budget = Arc::new(Budget::search(100, 1000));
        let spend = |n: u8| {
            let keys = budget.keys(&ClientIp::from_addr([192, 0, 2, n].into()));
            let sent = limiter.send(Spend {
                budget: budget.clone(),
                keys,
                now: 1_800_000_000,
            });
            async move { sent.await.unwrap().await.unwrap().unwrap() }
        };

        // Eight spends sent at once are one batch: one read answers them all.
        let batch = futures_util::future::join_all((0..8).map(spend)).await;
        assert!(batch
            .iter()
            .all(|(d, g)| matches!(d, Decision::Admitted(_)) && *g == Some(0)));
        assert_eq!(reads.load(std::sync::atomic::Ordering::SeqCst), 1);

        // A page write committed before the next spend is sent is in its answer.
        writer
            .execute(
                "UPDATE corpus_generation SET generation = generation + 5 WHERE id = 1",
                [],
            )
            .unwrap();
        assert_eq!(spend(9).await.1, Some(5));
    }
}
