//! The budget store's contract ([`agent_pages::budget::store`]'s docs, SPEC §5
//! gates 3/4): fixed windows aligned to the epoch, a spend admitted only when every
//! window has room and then counted once in each (both-or-neither), a refusal
//! naming the full window with whole seconds until it ends (`Retry-After`), a fresh
//! count when the window ends, exactly the limit admitted however many spend at
//! once from however many replicas. On every backend, with the caller's clock
//! (`now` below), so no test waits for a real window to pass.

use std::sync::Arc;

use agent_pages::budget::store::{BudgetStore, CountMode};
use agent_pages::budget::{Budget, Decision, StoreClock, WindowCount};

use crate::backends::BudgetsFixture;
use crate::helpers::T0;

/// A search-shaped budget: `per_minute` then `per_hour`.
fn budget(per_minute: u32, per_hour: u32) -> Arc<Budget> {
    Arc::new(Budget::search(per_minute, per_hour))
}

/// Spends once for `subject` at `now`; panics when the store fails.
async fn spend(store: &BudgetStore, budget: &Arc<Budget>, subject: &str, now: i64) -> Decision {
    store
        .spend(budget, budget.keys_of(subject), now)
        .await
        .expect("the store answers")
}

/// Each window's count of `subject` at `now`, read without counting.
async fn counts(store: &BudgetStore, budget: &Arc<Budget>, subject: &str, now: i64) -> Vec<i64> {
    store
        .counts(budget, budget.keys_of(subject), now, CountMode::Peek)
        .await
        .expect("the store answers")
        .iter()
        .map(|w| w.count)
        .collect()
}

/// The counts of an admission, panicking on a refusal.
fn admitted(decision: Decision) -> Vec<WindowCount> {
    match decision {
        Decision::Admitted(counts) => counts,
        refused => panic!("refused: {refused:?}"),
    }
}

pub async fn the_suite_runs_on_the_callers_clock(f: &BudgetsFixture) {
    assert_eq!(f.store.clock(), StoreClock::Caller);
}

pub async fn an_admission_counts_one_in_every_window_with_what_each_has_left(f: &BudgetsFixture) {
    let b = budget(20, 200);
    let now = T0 + 15;
    let first = admitted(spend(&f.store, &b, "198.51.100.1", now).await);
    assert_eq!(
        first,
        [
            WindowCount {
                count: 1,
                remaining: 19,
                reset: 45
            },
            WindowCount {
                count: 1,
                remaining: 199,
                reset: 3585
            }
        ]
    );
    let second = admitted(spend(&f.store, &b, "198.51.100.1", now + 1).await);
    assert_eq!(
        second
            .iter()
            .map(|w| (w.count, w.remaining, w.reset))
            .collect::<Vec<_>>(),
        [(2, 18, 44), (2, 198, 3584)]
    );
    assert_eq!(counts(&f.store, &b, "198.51.100.1", now + 1).await, [2, 2]);
}

pub async fn a_full_window_refuses_with_the_seconds_until_it_ends(f: &BudgetsFixture) {
    let b = budget(2, 100);
    let client = "198.51.100.2";
    admitted(spend(&f.store, &b, client, T0 + 10).await);
    admitted(spend(&f.store, &b, client, T0 + 11).await);
    assert_eq!(
        spend(&f.store, &b, client, T0 + 15).await,
        Decision::Refused {
            window: 0,
            retry_after: 45
        }
    );
    assert_eq!(
        spend(&f.store, &b, client, T0 + 59).await,
        Decision::Refused {
            window: 0,
            retry_after: 1
        }
    );
}

pub async fn a_refusal_counts_nothing_in_any_window(f: &BudgetsFixture) {
    let b = budget(1, 100);
    let client = "198.51.100.3";
    admitted(spend(&f.store, &b, client, T0).await);
    for i in 1..5 {
        assert!(matches!(
            spend(&f.store, &b, client, T0 + i).await,
            Decision::Refused { window: 0, .. }
        ));
    }
    assert_eq!(
        counts(&f.store, &b, client, T0 + 5).await,
        [1, 1],
        "both-or-neither"
    );
    // Another replica (no memo of the refusals) reads the same counts.
    let other = f.another().await;
    assert!(matches!(
        spend(&other, &b, client, T0 + 6).await,
        Decision::Refused { window: 0, .. }
    ));
    assert_eq!(counts(&other, &b, client, T0 + 6).await, [1, 1]);
}

pub async fn a_window_starts_afresh_at_its_end(f: &BudgetsFixture) {
    let b = budget(1, 100);
    let client = "198.51.100.4";
    admitted(spend(&f.store, &b, client, T0 + 30).await);
    assert!(matches!(
        spend(&f.store, &b, client, T0 + 59).await,
        Decision::Refused {
            window: 0,
            retry_after: 1
        }
    ));
    let next = admitted(spend(&f.store, &b, client, T0 + 60).await);
    assert_eq!(
        next.iter().map(|w| (w.count, w.reset)).collect::<Vec<_>>(),
        [(1, 60), (2, 3540)],
        "a new minute, the same hour"
    );
    assert_eq!(counts(&f.store, &b, client, T0 + 60).await, [1, 2]);
    assert_eq!(counts(&f.store, &b, client, T0 + 120).await, [0, 2]);
}

pub async fn the_second_window_refuses_once_the_first_has_room_again(f: &BudgetsFixture) {
    let b = budget(2, 3);
    let client = "198.51.100.5";
    admitted(spend(&f.store, &b, client, T0).await);
    admitted(spend(&f.store, &b, client, T0 + 1).await);
    admitted(spend(&f.store, &b, client, T0 + 60).await);
    assert_eq!(
        spend(&f.store, &b, client, T0 + 61).await,
        Decision::Refused {
            window: 1,
            retry_after: 3600 - 61
        }
    );
    // The hour is full: the minute counter does not move either.
    assert_eq!(counts(&f.store, &b, client, T0 + 62).await, [1, 3]);
    let after = admitted(spend(&f.store, &b, client, T0 + 3600).await);
    assert_eq!(after.iter().map(|w| w.count).collect::<Vec<_>>(), [1, 1]);
}

pub async fn clients_and_budgets_count_apart(f: &BudgetsFixture) {
    let search = budget(1, 10);
    let publish = Arc::new(Budget::publish(1, 10));
    admitted(spend(&f.store, &search, "198.51.100.6", T0).await);
    admitted(spend(&f.store, &search, "198.51.100.7", T0).await);
    admitted(spend(&f.store, &publish, "198.51.100.6", T0).await);
    assert_eq!(counts(&f.store, &search, "198.51.100.6", T0).await, [1, 1]);
    assert_eq!(counts(&f.store, &publish, "198.51.100.8", T0).await, [0, 0]);
}

pub async fn recording_counts_past_the_limit_and_peeking_counts_nothing(f: &BudgetsFixture) {
    let failures = Arc::new(Budget::pin_failures(2));
    let keys = || failures.keys_of("198.51.100.9");
    for expected in 1..=4 {
        let after = f
            .store
            .counts(&failures, keys(), T0 + 10, CountMode::Record)
            .await
            .unwrap();
        assert_eq!(
            after,
            [WindowCount {
                count: expected,
                remaining: (2 - expected).max(0),
                reset: 3590
            }]
        );
    }
    let peeked = f
        .store
        .counts(&failures, keys(), T0 + 20, CountMode::Peek)
        .await
        .unwrap();
    assert_eq!(
        peeked,
        [WindowCount {
            count: 4,
            remaining: 0,
            reset: 3580
        }]
    );
    assert!(matches!(
        f.store.spend(&failures, keys(), T0 + 20).await.unwrap(),
        Decision::Refused {
            window: 0,
            retry_after: 3580
        }
    ));
}

pub async fn concurrent_spends_on_two_replicas_admit_exactly_the_limit(f: &BudgetsFixture) {
    let b = budget(10, 1000);
    let other = f.another().await;
    let mut spends = Vec::new();
    for i in 0..40 {
        let store = if i % 2 == 0 {
            f.store.clone()
        } else {
            other.clone()
        };
        let b = b.clone();
        spends.push(tokio::spawn(async move {
            spend(&store, &b, "198.51.100.10", T0 + 5).await
        }));
    }
    let mut admissions = 0;
    for s in spends {
        match s.await.unwrap() {
            Decision::Admitted(_) => admissions += 1,
            Decision::Refused {
                window,
                retry_after,
            } => {
                assert_eq!((window, retry_after), (0, 55));
            }
        }
    }
    assert_eq!(admissions, 10);
    assert_eq!(
        counts(&f.store, &b, "198.51.100.10", T0 + 5).await,
        [10, 10]
    );
}

pub async fn a_sweep_keeps_every_live_window(f: &BudgetsFixture) {
    let b = budget(5, 50);
    admitted(spend(&f.store, &b, "198.51.100.11", T0).await);
    admitted(spend(&f.store, &b, "198.51.100.11", T0 + 61).await);
    // The minute of T0 is over; the hour is not.
    f.store.sweep(T0 + 100, b.horizon()).await.unwrap();
    assert_eq!(
        counts(&f.store, &b, "198.51.100.11", T0 + 100).await,
        [1, 2]
    );
    // Past the hour every counter may go, and none is counted in the new windows.
    f.store.sweep(T0 + 2 * 3600, b.horizon()).await.unwrap();
    assert_eq!(
        counts(&f.store, &b, "198.51.100.11", T0 + 2 * 3600).await,
        [0, 0]
    );
}

pub async fn a_generation_read_with_a_spend_is_the_pages_generation(f: &BudgetsFixture) {
    let pages = &f.pages().store;
    let page = agent_pages::domain::NewPage::parse(Some("counted"), "Counted", None).unwrap();
    pages.create(page, None, T0).await.unwrap().unwrap();
    let b = budget(5, 50);
    let (decision, generation) = f
        .store
        .spend_with_generation(&b, b.keys_of("198.51.100.12"), T0)
        .await
        .unwrap();
    admitted(decision);
    if let Some(generation) = generation {
        assert_eq!(generation, pages.generation().await.unwrap());
    }
}

pub async fn a_fresh_store_is_ready(f: &BudgetsFixture) {
    f.store.check_ready(T0).await.unwrap();
    assert_eq!(f.store.check_files(), Ok(()));
}

contract_suite!(BudgetsFixture; [sqlite, postgres, redis]; [
    the_suite_runs_on_the_callers_clock,
    an_admission_counts_one_in_every_window_with_what_each_has_left,
    a_full_window_refuses_with_the_seconds_until_it_ends,
    a_refusal_counts_nothing_in_any_window,
    a_window_starts_afresh_at_its_end,
    the_second_window_refuses_once_the_first_has_room_again,
    clients_and_budgets_count_apart,
    recording_counts_past_the_limit_and_peeking_counts_nothing,
    concurrent_spends_on_two_replicas_admit_exactly_the_limit,
    a_sweep_keeps_every_live_window,
    a_generation_read_with_a_spend_is_the_pages_generation,
    a_fresh_store_is_ready,
]);
