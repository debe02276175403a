//! What the two server-side backends share, [`super::redis`] and [`super::postgres`]:
//! each decides a request in one call on its server (the Redis script, PostgreSQL's
//! `budget_apply`), and both calls answer the same things, in the server's time:
//! the seconds the windows were aligned with, the microseconds past them, the
//! refusing window and each window's count ([`Answer`]). Reading that answer, and
//! making such a backend a [`BudgetBackend`], is written once, here: a backend
//! implements [`ServerCounters`] (its call and its sweep) and is a budget backend.

use std::time::Duration;

use futures_util::FutureExt as _;

use super::store::{Ask, BudgetBackend, BudgetFuture, CountMode};
use super::{Budget, Decided, StoreClock, WindowCount};

/// What one request asks of a server's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Count one in every window if all are under their limits, else nothing.
    Spend,
    /// Read the counts, changing nothing.
    Peek,
    /// Count one in every window whatever the limits.
    Record,
}

impl Mode {
    /// The mode as the server-side code takes it: `spend`, `peek` or `record`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Spend => "spend",
            Mode::Peek => "peek",
            Mode::Record => "record",
        }
    }
}

impl From<CountMode> for Mode {
    fn from(mode: CountMode) -> Self {
        match mode {
            CountMode::Peek => Mode::Peek,
            CountMode::Record => Mode::Record,
        }
    }
}

/// What the server answered for one request.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The unix seconds the windows were aligned with (the server's, or the
    /// caller's without the server clock).
    pub now: i64,
    /// Microseconds past `now` when the server's clock was read (0 with the
    /// caller's).
    pub micros: i64,
    /// 0-based index of the refusing window.
    pub refused: Option<usize>,
    /// Each window's count after the call, in the budget's order.
    pub counts: Vec<i64>,
}

impl Answer {
    /// The decision of a spend on `budget`; a refusal's window has its whole
    /// seconds left less the microseconds already past `now`.
    pub fn decided(self, budget: &Budget) -> Decided {
        let mut counts: Vec<Option<i64>> = self.counts.into_iter().map(Some).collect();
        if let Some(i) = self.refused {
            counts.truncate(i);
            counts.push(None);
        }
        let decision = budget.decide(&counts, self.now);
        let window_left = self.refused.map(|i| {
            let whole = budget.windows[i].seconds_left(self.now);
            Duration::from_secs(whole as u64)
                .saturating_sub(Duration::from_micros(self.micros as u64))
        });
        Decided {
            decision,
            window_left,
        }
    }

    /// Each window of `budget` with its count, what it has left, and its seconds
    /// left by the server's clock.
    pub fn window_counts(&self, budget: &Budget) -> Vec<WindowCount> {
        budget.window_counts(&self.counts, self.now)
    }
}

/// A budget backend whose server decides each request in one call. Every one is a
/// [`BudgetBackend`] (the impl below), so a backend writes only these.
pub trait ServerCounters: Send + Sync + 'static {
    /// Which store this is ([`BudgetBackend::kind`]).
    const KIND: &'static str;

    /// `true` (the service): windows follow the server's clock; `false`: the `now`
    /// each caller passes (tests with a manual clock).
    fn server_clock(&self) -> bool;

    /// One call deciding `ask` in `mode`, with the corpus generation when the
    /// server read it in the same call (`None` otherwise).
    fn call<'a>(&'a self, mode: Mode, ask: Ask<'a>) -> BudgetFuture<'a, (Answer, Option<i64>)>;

    /// [`BudgetBackend::sweep`].
    fn sweep(&self, now: i64, horizon: i64) -> BudgetFuture<'_, usize>;
}

impl<C: ServerCounters> BudgetBackend for C {
    fn kind(&self) -> &'static str {
        C::KIND
    }

    fn clock(&self) -> StoreClock {
        if self.server_clock() {
            StoreClock::Own
        } else {
            StoreClock::Caller
        }
    }

    fn spend<'a>(&'a self, ask: Ask<'a>) -> BudgetFuture<'a, (Decided, Option<i64>)> {
        async move {
            let (answer, generation) = self.call(Mode::Spend, ask).await?;
            Ok((answer.decided(ask.budget), generation))
        }
        .boxed()
    }

    fn counts<'a>(&'a self, ask: Ask<'a>, mode: CountMode) -> BudgetFuture<'a, Vec<WindowCount>> {
        async move {
            let (answer, _) = self.call(mode.into(), ask).await?;
            Ok(answer.window_counts(ask.budget))
        }
        .boxed()
    }

    fn sweep(&self, now: i64, horizon: i64) -> BudgetFuture<'_, usize> {
        ServerCounters::sweep(self, now, horizon)
    }
}
