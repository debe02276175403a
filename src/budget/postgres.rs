//! The budget counters in PostgreSQL, when the pages are there and no Redis/Valkey
//! is configured (SPEC §10): every replica on the same database shares one budget
//! per client.
//!
//! Shaped like the Redis backend ([`super::redis`]), with which it shares the
//! reading of the answer ([`super::server`]): one server-side call,
//! `budget_apply` (migrations/postgres/0002), does what the Redis script does, with
//! the same windows and the same both-or-neither decision, aligned with the
//! database server's clock. Unlike Redis, a call costs a commit, so calls are
//! group-committed as the SQLite RateLimiter does: requests queued while one call
//! is in flight are decided together in the next, in arrival order. The call also
//! reads the corpus generation, so a search learns whether its snapshot is current
//! without a second round trip.
//!
//! Its connections are its own (a pool of [`crate::pg::CONTROL_CONNECTIONS`], shared
//! with the page store's generation reads), so a budget write never waits for a
//! page write.
//! A call is one statement (one round trip, its own transaction), committed with
//! `synchronous_commit = off`: PostgreSQL answers before the WAL is flushed; a crash
//! of the database server can forget the last fraction of a second of counts (a
//! client may get that many requests again), never a page.

use std::collections::BTreeMap;

use tokio::sync::{mpsc, oneshot};

use futures_util::FutureExt as _;

use super::error::BudgetStoreError;
use super::server::{Answer, Mode, ServerCounters};
use super::store::{Ask, BudgetFuture};
use super::{BucketKeys, Budget};
use crate::pg::{CallError, Epoch, LastRead, Pg, PgError};

/// Most requests decided in one call.
pub const MAX_BATCH: usize = 512;

struct Request {
    mode: Mode,
    budget: std::sync::Arc<Budget>,
    keys: BucketKeys,
    now: i64,
    /// The server's answer, and the corpus generation it read.
    answer: oneshot::Sender<Result<(Answer, i64), PgError>>,
}

/// The handle on the PostgreSQL counters; cheap to clone.
#[derive(Clone)]
pub struct PgCounters {
    queue: mpsc::UnboundedSender<Request>,
    server_clock: bool,
    /// The pool the sweep runs on (the batching task has its own clone).
    pg: Pg,
}

impl PgCounters {
    /// Counters behind `pg` (a pool of its own, see [`crate::pg::CONTROL_CONNECTIONS`]);
    /// windows follow the database server's clock when `server_clock`, else the `now`
    /// each caller passes (tests with a manual clock). Every call notes in `epoch`
    /// which server answered it (the page store's history, [`Epoch`]). Starts the
    /// batching task on the current Tokio runtime.
    pub fn new(pg: Pg, server_clock: bool, epoch: Epoch) -> Self {
        let (queue, requests) = mpsc::unbounded_channel();
        tokio::spawn(decide_batches(pg.clone(), server_clock, epoch, requests));
        Self {
            queue,
            server_clock,
            pg,
        }
    }

    /// Sends `ask` to the batching task and waits for its call.
    async fn ask(&self, mode: Mode, ask: Ask<'_>) -> Result<(Answer, i64), BudgetStoreError> {
        let (answer, receive) = oneshot::channel();
        self.queue
            .send(Request {
                mode,
                budget: ask.budget.clone(),
                keys: ask.keys.clone(),
                now: ask.now,
                answer,
            })
            .map_err(|_| BudgetStoreError::bug("the budget task stopped"))?;
        let answer = receive
            .await
            .map_err(|_| BudgetStoreError::bug("the budget task stopped"))?;
        answer.map_err(|e| match e {
            PgError::Down(_) | PgError::Unavailable(_) | PgError::Busy(_) => {
                BudgetStoreError::unavailable(e.to_string())
            }
            PgError::Failed(_) => BudgetStoreError::bug(e.to_string()),
        })
    }
}

impl ServerCounters for PgCounters {
    const KIND: &'static str = "postgres";

    fn server_clock(&self) -> bool {
        self.server_clock
    }

    fn call<'a>(&'a self, mode: Mode, ask: Ask<'a>) -> BudgetFuture<'a, (Answer, Option<i64>)> {
        // Its function also reads the corpus generation (and notes the epoch).
        async move {
            let (answer, generation) = self.ask(mode, ask).await?;
            Ok((answer, Some(generation)))
        }
        .boxed()
    }

    /// Deletes counters whose window started at least `horizon` seconds before
    /// `now`. Returns how many.
    fn sweep(&self, now: i64, horizon: i64) -> BudgetFuture<'_, usize> {
        async move {
            self.pg
                .run(|c| {
                    Box::pin(async move {
                        let n = c
                            .execute(
                                "DELETE FROM rate_limit_counters WHERE window_start <= $1",
                                &[&(now - horizon)],
                            )
                            .await?;
                        Ok(n as usize)
                    })
                })
                .await
                .map_err(|e| BudgetStoreError::unavailable(e.to_string()))
        }
        .boxed()
    }
}

/// The batching task: every request queued when a call starts joins it.
async fn decide_batches(
    pg: Pg,
    server_clock: bool,
    epoch: Epoch,
    mut requests: mpsc::UnboundedReceiver<Request>,
) {
    let mut last = LastRead::default();
    while let Some(first) = requests.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match requests.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        // Requests whose caller went away need no decision.
        batch.retain(|r| !r.answer.is_closed());
        if batch.is_empty() {
            continue;
        }
        match apply(&pg, server_clock, &batch).await {
            Ok((answers, history)) => {
                if let Some((_, generation)) = answers.first() {
                    epoch.saw(&mut last, history, *generation);
                }
                for (request, answer) in batch.into_iter().zip(answers) {
                    let _ = request.answer.send(Ok(answer));
                }
            }
            Err(e) => {
                for request in batch {
                    let _ = request.answer.send(Err(e.clone()));
                }
            }
        }
    }
}

/// One `budget_apply` call for `batch`: each request's answer with the corpus
/// generation read in the call, and the history of that generation
/// (`corpus_epoch()`, [`Epoch`]).
async fn apply(
    pg: &Pg,
    server_clock: bool,
    batch: &[Request],
) -> Result<(Vec<(Answer, i64)>, i64), PgError> {
    // Distinct keys, sorted (the lock order), and each entry's 1-based slot.
    let mut slots: BTreeMap<&str, i32> = BTreeMap::new();
    for request in batch {
        for key in &request.keys.0 {
            slots.insert(key, 0);
        }
    }
    for (i, slot) in slots.values_mut().enumerate() {
        *slot = i as i32 + 1;
    }
    let buckets: Vec<String> = slots.keys().map(|k| k.to_string()).collect();
    let modes: Vec<&str> = batch.iter().map(|r| r.mode.name()).collect();
    let mut windows = Vec::with_capacity(batch.len());
    let (mut entry_slots, mut seconds, mut limits) = (Vec::new(), Vec::new(), Vec::new());
    for request in batch {
        windows.push(request.budget.windows.len() as i32);
        for (window, key) in request.budget.windows.iter().zip(&request.keys.0) {
            entry_slots.push(slots[key.as_str()]);
            seconds.push(window.seconds);
            limits.push(i64::from(window.limit));
        }
    }
    // NULL: the server's clock.
    let now: Vec<Option<i64>> = batch
        .iter()
        .map(|r| (!server_clock).then_some(r.now))
        .collect();
    let rows = pg
        .run(|c| {
            Box::pin(async move {
                let statement = c
                    .prepare_cached(
                        "SELECT refused, counts, at, micros, generation, started
                         FROM budget_apply($1, $2, $3, $4, $5, $6, $7)",
                    )
                    .await?;
                let rows = c
                    .query(
                        &statement,
                        &[
                            &now,
                            &modes,
                            &windows,
                            &entry_slots,
                            &seconds,
                            &limits,
                            &buckets,
                        ],
                    )
                    .await?;
                Ok::<_, CallError>(rows)
            })
        })
        .await?;
    if rows.len() != batch.len() {
        return Err(PgError::Failed(format!(
            "budget_apply answered {} rows for {} requests",
            rows.len(),
            batch.len()
        )));
    }
    let started = rows[0].get(5);
    let answers = rows
        .iter()
        .map(|row| {
            let refused: i32 = row.get(0);
            let answer = Answer {
                refused: (refused > 0).then(|| refused as usize - 1),
                counts: row.get(1),
                now: row.get(2),
                micros: row.get(3),
            };
            (answer, row.get(4))
        })
        .collect();
    Ok((answers, started))
}
