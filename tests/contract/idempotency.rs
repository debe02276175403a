//! The page store's idempotency-key contract (issue 32 §3;
//! [`agent_pages::page_store::idempotency`]): a fresh claim is `running` until it
//! is finished (then replayed for the same fingerprint, refused for another) or
//! released (then free again); a key expires a day after its claim, a running
//! claim is taken over after a minute, a client's live keys are bounded, and two
//! handles claiming one key at once see one winner.

use agent_pages::page_store::idempotency::{ABANDONED_AFTER_SECS, KEY_LIFETIME_SECS};
use agent_pages::page_store::{Claimed, KeyClaim, PageStore, StoredAnswer};

use crate::backends::PagesFixture;
use crate::helpers::T0;

/// A claim of key `key` by client `client` for request `fingerprint` at `now`.
fn claim(client: &str, key: &str, fingerprint: &str, now: i64) -> KeyClaim {
    KeyClaim {
        key_hash: format!("{client}/{key}"),
        client_hash: client.to_owned(),
        fingerprint: fingerprint.to_owned(),
        now,
        max_keys: 1000,
    }
}

fn answer(slug: &str) -> StoredAnswer {
    StoredAnswer {
        status: 201,
        body: format!(r#"{{"slug":"{slug}","version":1,"url":"http://x/p/{slug}"}}"#),
    }
}

async fn claimed(store: &PageStore, c: KeyClaim) -> Claimed {
    store.claim_key(c).await.unwrap()
}

pub async fn a_finished_key_is_replayed_for_the_same_request_only(f: &PagesFixture) {
    let store = &f.store;
    assert_eq!(
        claimed(store, claim("c", "k", "f1", T0)).await,
        Claimed::Fresh
    );
    // Running: the same request waits, another one is refused.
    assert_eq!(
        claimed(store, claim("c", "k", "f1", T0 + 1)).await,
        Claimed::InFlight
    );
    assert_eq!(
        claimed(store, claim("c", "k", "f2", T0 + 1)).await,
        Claimed::Reused
    );
    store.finish_key("c/k", T0, answer("a")).await.unwrap();
    for _ in 0..2 {
        assert_eq!(
            claimed(store, claim("c", "k", "f1", T0 + 2)).await,
            Claimed::Replay(answer("a"))
        );
    }
    assert_eq!(
        claimed(store, claim("c", "k", "f2", T0 + 2)).await,
        Claimed::Reused
    );
    // Another handle (a replica) finds the same row.
    let other = f.another().await;
    assert_eq!(
        claimed(&other, claim("c", "k", "f1", T0 + 3)).await,
        Claimed::Replay(answer("a"))
    );
}

pub async fn a_released_key_is_free_again(f: &PagesFixture) {
    let store = &f.store;
    assert_eq!(
        claimed(store, claim("c", "k", "f1", T0)).await,
        Claimed::Fresh
    );
    store.release_key("c/k", T0).await.unwrap();
    // Free for any request, the first one's too.
    assert_eq!(
        claimed(store, claim("c", "k", "f2", T0 + 1)).await,
        Claimed::Fresh
    );
    store.release_key("c/k", T0 + 1).await.unwrap();
    assert_eq!(
        claimed(store, claim("c", "k", "f1", T0 + 2)).await,
        Claimed::Fresh
    );
}

pub async fn a_key_expires_a_day_after_its_claim(f: &PagesFixture) {
    let store = &f.store;
    assert_eq!(
        claimed(store, claim("c", "k", "f1", T0)).await,
        Claimed::Fresh
    );
    store.finish_key("c/k", T0, answer("a")).await.unwrap();
    let last = T0 + KEY_LIFETIME_SECS - 1;
    assert_eq!(
        claimed(store, claim("c", "k", "f1", last)).await,
        Claimed::Replay(answer("a"))
    );
    assert_eq!(
        claimed(store, claim("c", "k", "f2", last)).await,
        Claimed::Reused
    );
    // A day on: a new claim, even for another request.
    let later = T0 + KEY_LIFETIME_SECS;
    assert_eq!(
        claimed(store, claim("c", "k", "f2", later)).await,
        Claimed::Fresh
    );
    store.finish_key("c/k", later, answer("b")).await.unwrap();
    assert_eq!(
        claimed(store, claim("c", "k", "f2", later + 1)).await,
        Claimed::Replay(answer("b"))
    );
}

pub async fn a_running_claim_is_taken_over_after_a_minute(f: &PagesFixture) {
    let store = &f.store;
    assert_eq!(
        claimed(store, claim("c", "k", "f1", T0)).await,
        Claimed::Fresh
    );
    let abandoned = T0 + ABANDONED_AFTER_SECS;
    assert_eq!(
        claimed(store, claim("c", "k", "f1", abandoned - 1)).await,
        Claimed::InFlight
    );
    assert_eq!(
        claimed(store, claim("c", "k", "f1", abandoned)).await,
        Claimed::Fresh
    );
    // The first claim ends late: it changes nothing of the second's row.
    store.finish_key("c/k", T0, answer("old")).await.unwrap();
    store.release_key("c/k", T0).await.unwrap();
    assert_eq!(
        claimed(store, claim("c", "k", "f1", abandoned + 1)).await,
        Claimed::InFlight
    );
    store
        .finish_key("c/k", abandoned, answer("new"))
        .await
        .unwrap();
    assert_eq!(
        claimed(store, claim("c", "k", "f1", abandoned + 2)).await,
        Claimed::Replay(answer("new"))
    );
    // A finished key is never abandoned.
    assert_eq!(
        claimed(store, claim("c", "k", "f1", abandoned + 3600)).await,
        Claimed::Replay(answer("new"))
    );
}

pub async fn a_clients_live_keys_are_bounded(f: &PagesFixture) {
    let store = &f.store;
    let bounded = |client: &str, key: &str, now: i64| KeyClaim {
        max_keys: 3,
        ..claim(client, key, "f", now)
    };
    for (n, key) in ["k1", "k2", "k3"].iter().enumerate() {
        let at = T0 + 10 * n as i64;
        assert_eq!(claimed(store, bounded("c", key, at)).await, Claimed::Fresh);
    }
    store.finish_key("c/k1", T0, answer("a")).await.unwrap();
    // A fourth key waits for the oldest to expire; nothing was written.
    let now = T0 + 100;
    assert_eq!(
        claimed(store, bounded("c", "k4", now)).await,
        Claimed::TooMany {
            retry_after: T0 + KEY_LIFETIME_SECS - now
        }
    );
    // Keys held are still answered, another client is not held up.
    assert_eq!(
        claimed(store, bounded("c", "k1", now)).await,
        Claimed::Replay(answer("a"))
    );
    assert_eq!(
        claimed(store, bounded("d", "k4", now)).await,
        Claimed::Fresh
    );
    // A released key frees its place.
    store.release_key("c/k2", T0 + 10).await.unwrap();
    assert_eq!(
        claimed(store, bounded("c", "k4", now)).await,
        Claimed::Fresh
    );
    assert!(matches!(
        claimed(store, bounded("c", "k5", now)).await,
        Claimed::TooMany { .. }
    ));
    // Expired keys do not count.
    let later = T0 + KEY_LIFETIME_SECS;
    assert_eq!(
        claimed(store, bounded("c", "k5", later)).await,
        Claimed::Fresh
    );
}

pub async fn of_two_handles_claiming_one_key_at_once_one_wins(f: &PagesFixture) {
    let other = f.another().await;
    for round in 0..5 {
        let key = format!("k{round}");
        let (a, b) = futures_util::join!(
            f.store.claim_key(claim("c", &key, "f", T0)),
            other.claim_key(claim("c", &key, "f", T0)),
        );
        let mut outcomes = [a.unwrap(), b.unwrap()];
        outcomes.sort_by_key(|c| format!("{c:?}"));
        assert_eq!(
            outcomes,
            [Claimed::Fresh, Claimed::InFlight],
            "round {round}"
        );
    }
}

contract_suite!(PagesFixture; [sqlite, postgres]; [
    a_finished_key_is_replayed_for_the_same_request_only,
    a_released_key_is_free_again,
    a_key_expires_a_day_after_its_claim,
    a_running_claim_is_taken_over_after_a_minute,
    a_clients_live_keys_are_bounded,
    of_two_handles_claiming_one_key_at_once_one_wins,
]);
