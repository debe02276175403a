//! The page store's history contract (issue 32 §1–§2;
//! [`agent_pages::page_store::history`]): every write keeps the version it made,
//! the history is pruned to the bound in the write, a restore copies a kept
//! version, an import that changes a page adds a version, and a write expecting
//! another version than the page's changes nothing at all, under concurrency too.

use agent_pages::domain::{NewPage, PageBody, PageSlug, PageTitle};
use agent_pages::page_store::{
    ImportPage, PageStore, Restored, StateChange, VersionKind, VersionMismatch,
};

use crate::backends::PagesFixture;
use crate::helpers::T0;

async fn create(store: &PageStore, slug: &str, body: &str) -> i64 {
    let page = NewPage::parse(Some(slug), "Title", Some(body.to_owned())).unwrap();
    store.create(page, None, T0).await.unwrap().unwrap().id
}

fn body(text: &str) -> Option<PageBody> {
    Some(PageBody::parse(text.to_owned()).unwrap())
}

/// `(version, kind)` of every kept version of `id`, newest first.
async fn kept(store: &PageStore, id: i64) -> Vec<(i64, VersionKind)> {
    let list = store.versions(id, 0, 100).await.unwrap();
    assert_eq!(list.total as usize, list.rows.len());
    list.rows.iter().map(|v| (v.version, v.kind)).collect()
}

pub async fn every_write_keeps_the_version_it_made(f: &PagesFixture) {
    let store = &f.store;
    let id = create(store, "a", "one").await;
    store.update(id, None, body("two"), T0 + 1).await.unwrap();
    let title = Some(PageTitle::parse("Second title").unwrap());
    store.update(id, title, None, T0 + 2).await.unwrap();
    store
        .change_state(id, StateChange::Archive, T0 + 3)
        .await
        .unwrap();
    // Again: changes nothing, keeps nothing.
    store
        .change_state(id, StateChange::Archive, T0 + 4)
        .await
        .unwrap();
    store
        .change_state(id, StateChange::Claim, T0 + 5)
        .await
        .unwrap();
    assert_eq!(
        kept(store, id).await,
        [
            (5, VersionKind::Claim),
            (4, VersionKind::Archive),
            (3, VersionKind::Update),
            (2, VersionKind::Update),
            (1, VersionKind::Publish),
        ]
    );
    let v2 = store.version(id, 2).await.unwrap().unwrap();
    assert_eq!(
        (v2.title.as_str(), v2.body.as_str(), v2.created_at),
        ("Title", "two", T0 + 1)
    );
    let v3 = store.version(id, 3).await.unwrap().unwrap();
    assert_eq!(
        (v3.title.as_str(), v3.body.as_str()),
        ("Second title", "two")
    );
    assert_eq!(store.version(id, 6).await.unwrap(), None);
    assert_eq!(
        store.version_before(id, 3).await.unwrap().unwrap().version,
        2
    );
    assert_eq!(store.version_before(id, 1).await.unwrap(), None);
    let page = store.versions(id, 1, 2).await.unwrap();
    assert_eq!(page.total, 5);
    assert_eq!(
        page.rows.iter().map(|v| v.version).collect::<Vec<_>>(),
        [4, 3]
    );
    assert_eq!(page.rows[0].body_bytes, 3);
}

pub async fn the_history_is_pruned_to_the_bound_in_the_write(f: &PagesFixture) {
    let store = f.store.clone().with_history_versions(3);
    let id = create(&store, "a", "v1").await;
    for n in 2..=7 {
        store
            .update(id, None, body(&format!("v{n}")), T0 + n)
            .await
            .unwrap();
        assert!(store.versions(id, 0, 100).await.unwrap().total <= 3);
    }
    let versions: Vec<i64> = kept(&store, id).await.iter().map(|v| v.0).collect();
    assert_eq!(versions, [7, 6, 5]);
    assert_eq!(store.version(id, 4).await.unwrap(), None);
    assert_eq!(
        store.restore(id, 4, T0 + 9, None).await.unwrap(),
        Restored::NoSuchVersion
    );
}

pub async fn a_restore_is_a_new_version_with_the_old_title_and_body(f: &PagesFixture) {
    let store = &f.store;
    let id = create(store, "a", "good").await;
    let title = Some(PageTitle::parse("Vandalised").unwrap());
    store.update(id, title, body("bad"), T0 + 1).await.unwrap();
    assert_eq!(
        store.restore(id, 1, T0 + 2, None).await.unwrap(),
        Restored::Done(3)
    );
    let page = store.page("a").await.unwrap().unwrap();
    assert_eq!(
        (
            page.title.as_str(),
            page.body.as_str(),
            page.version,
            page.updated_at
        ),
        ("Title", "good", 3, T0 + 2)
    );
    assert_eq!(kept(store, id).await[0], (3, VersionKind::Restore));
    assert_eq!(
        store.restore(id, 9, T0 + 3, None).await.unwrap(),
        Restored::NoSuchVersion
    );
    assert_eq!(store.page("a").await.unwrap().unwrap().version, 3);
}

pub async fn an_import_that_changes_a_page_adds_a_version(f: &PagesFixture) {
    let store = &f.store;
    let page = |text: &str| ImportPage {
        slug: PageSlug::parse("a").unwrap(),
        title: PageTitle::parse("A").unwrap(),
        body: PageBody::parse(text.to_owned()).unwrap(),
        pin_hash: None,
    };
    store.import(vec![page("one")], T0).await.unwrap();
    let id = store.pin_record("a").await.unwrap().unwrap().id;
    store.import(vec![page("one")], T0 + 1).await.unwrap();
    store.import(vec![page("two")], T0 + 2).await.unwrap();
    assert_eq!(
        kept(store, id).await,
        [(2, VersionKind::Import), (1, VersionKind::Import)]
    );
    assert_eq!(store.version(id, 2).await.unwrap().unwrap().body, "two");
}

pub async fn a_stale_expected_version_changes_nothing(f: &PagesFixture) {
    let store = &f.store;
    let id = create(store, "a", "one").await;
    store.update(id, None, body("two"), T0 + 1).await.unwrap();
    let generation = store.generation().await.unwrap();
    let stale = Err(VersionMismatch { current: 2 });
    assert_eq!(
        store
            .update_expecting(id, None, body("x"), T0 + 2, Some(1))
            .await
            .unwrap(),
        stale
    );
    for change in [StateChange::Archive, StateChange::Claim] {
        assert_eq!(
            store
                .change_state_expecting(id, change, T0 + 2, Some(1))
                .await
                .unwrap()
                .map(|s| s.version),
            stale
        );
    }
    assert_eq!(
        store.restore(id, 1, T0 + 2, Some(1)).await.unwrap(),
        Restored::Mismatch(VersionMismatch { current: 2 })
    );
    assert_eq!(store.generation().await.unwrap(), generation);
    assert_eq!(kept(store, id).await.len(), 2);
    let page = store.page("a").await.unwrap().unwrap();
    assert_eq!((page.body.as_str(), page.version), ("two", 2));

    // The right version writes.
    assert_eq!(
        store
            .update_expecting(id, None, body("three"), T0 + 3, Some(2))
            .await
            .unwrap(),
        Ok(3)
    );
    assert_eq!(
        store.restore(id, 1, T0 + 4, Some(3)).await.unwrap(),
        Restored::Done(4)
    );
    let archived = store
        .change_state_expecting(id, StateChange::Archive, T0 + 5, Some(4))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(archived.version, 5);
    // Archiving again at the version it is at changes nothing and is no mismatch.
    let again = store
        .change_state_expecting(id, StateChange::Archive, T0 + 6, Some(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.version, 5);
}

pub async fn of_writers_expecting_the_same_version_at_once_exactly_one_writes(f: &PagesFixture) {
    let other = f.another().await;
    let id = create(&f.store, "a", "one").await;
    for round in 1..=8 {
        // Two tasks, two handles (as two replicas), released together by a barrier.
        let start = std::sync::Arc::new(tokio::sync::Barrier::new(2));
        let writer = |store: PageStore, text: &'static str| {
            let start = start.clone();
            tokio::spawn(async move {
                start.wait().await;
                store
                    .update_expecting(id, None, body(text), T0 + round, Some(round))
                    .await
                    .unwrap()
            })
        };
        let a = writer(f.store.clone(), "from a");
        let b = writer(other.clone(), "from b");
        let (a, b) = (a.await.unwrap(), b.await.unwrap());
        assert!(
            matches!(
                (&a, &b),
                (Ok(v), Err(VersionMismatch { current: c }))
                    | (Err(VersionMismatch { current: c }), Ok(v)) if *v == round + 1 && *c == round + 1
            ),
            "round {round}: {a:?} / {b:?}"
        );
        assert_eq!(
            kept(&f.store, id).await.len() as i64,
            round + 1,
            "exactly one new history row"
        );
        let page = f.store.page("a").await.unwrap().unwrap();
        assert_eq!(page.version, round + 1);
        let winner = if a.is_ok() { "from a" } else { "from b" };
        assert_eq!(page.body.as_str(), winner, "the loser changed nothing");
    }
}

contract_suite!(PagesFixture; [sqlite, postgres]; [
    every_write_keeps_the_version_it_made,
    the_history_is_pruned_to_the_bound_in_the_write,
    a_restore_is_a_new_version_with_the_old_title_and_body,
    an_import_that_changes_a_page_adds_a_version,
    a_stale_expected_version_changes_nothing,
    of_writers_expecting_the_same_version_at_once_exactly_one_writes,
]);
