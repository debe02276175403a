//! The page store's contract ([`agent_pages::page_store::PageBackend`]'s docs and
//! SPEC §3): publish, read, update, archive, claim, the ledger, the PIN record,
//! the search snapshot, the change log and the corpus generation, on every backend.
//! Times are the caller's unix seconds; nothing here reads a clock.

use agent_pages::domain::{NewPage, PageBody, PageSlug, PageTitle};
use agent_pages::page_store::{
    Candidate, CreateRefused, CreatedRow, ImportCounts, ImportPage, PageStore, PageStoreError,
    StateChange,
};

use crate::backends::PagesFixture;
use crate::helpers::T0;

/// The PIN hash the suite stores (any text: the store never reads it).
const HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA";

/// Creates a page (slug given or derived from `title`, body `body`) at `now`;
/// panics when the store refuses or fails.
async fn create(store: &PageStore, slug: Option<&str>, title: &str, now: i64) -> CreatedRow {
    let page = NewPage::parse(slug, title, Some(format!("Body of {title}"))).unwrap();
    store
        .create(page, Some(HASH.to_owned()), now)
        .await
        .expect("the store answers")
        .expect("the slug is free")
}

fn title(text: &str) -> PageTitle {
    PageTitle::parse(text).unwrap()
}

fn body(text: &str) -> PageBody {
    PageBody::parse(text.to_owned()).unwrap()
}

/// The slugs of every candidate of the store's snapshot, in its (id) order.
async fn candidate_slugs(store: &PageStore) -> Vec<String> {
    let (_, candidates) = store.candidates().await.unwrap();
    candidates.into_iter().map(|c| c.slug).collect()
}

pub async fn a_created_page_reads_back_at_version_1(f: &PagesFixture) {
    let store = &f.store;
    assert_eq!(store.count_all().await.unwrap(), 0);
    let created = create(store, Some("first"), "First page", T0).await;
    assert_eq!(created.slug.as_str(), "first");
    assert_eq!(created.version, 1);
    let page = store.page("first").await.unwrap().expect("a candidate");
    assert_eq!(page.id, created.id);
    assert_eq!(
        (page.title.as_str(), page.body.as_str(), page.version),
        ("First page", "Body of First page", 1)
    );
    assert_eq!(page.lifecycle, "active");
    assert_eq!((page.created_at, page.updated_at), (T0, T0));
    let pin = store.pin_record("first").await.unwrap().expect("a record");
    assert_eq!(
        (pin.id, pin.pin_hash.as_deref(), pin.gone),
        (created.id, Some(HASH), false)
    );
    assert_eq!(store.count_all().await.unwrap(), 1);
    assert_eq!(store.page("other").await.unwrap(), None);
    assert_eq!(store.pin_record("other").await.unwrap(), None);
}

pub async fn a_page_without_a_pin_has_no_hash(f: &PagesFixture) {
    let page = NewPage::parse(Some("open"), "Open page", None).unwrap();
    let created = f.store.create(page, None, T0).await.unwrap().unwrap();
    let pin = f.store.pin_record("open").await.unwrap().unwrap();
    assert_eq!((pin.id, pin.pin_hash, pin.gone), (created.id, None, false));
    assert_eq!(f.store.page("open").await.unwrap().unwrap().body, "");
}

pub async fn a_given_slug_in_use_in_any_state_is_refused_and_nothing_is_written(f: &PagesFixture) {
    let store = &f.store;
    let a = create(store, Some("taken"), "Taken", T0).await;
    let again = NewPage::parse(Some("taken"), "Another", None).unwrap();
    assert_eq!(
        store.create(again.clone(), None, T0 + 1).await.unwrap(),
        Err(CreateRefused::SlugTaken(PageSlug::parse("taken").unwrap()))
    );
    store
        .change_state(a.id, StateChange::Archive, T0 + 2)
        .await
        .unwrap();
    assert_eq!(
        store.create(again, None, T0 + 3).await.unwrap(),
        Err(CreateRefused::SlugTaken(PageSlug::parse("taken").unwrap())),
        "an archived page keeps its slug"
    );
    assert_eq!(store.count_all().await.unwrap(), 1);
}

pub async fn derived_slugs_take_the_next_number_after_the_highest_in_use(f: &PagesFixture) {
    let store = &f.store;
    let slug = |created: CreatedRow| created.slug.to_string();
    assert_eq!(slug(create(store, None, "Guide", T0).await), "guide");
    assert_eq!(slug(create(store, None, "Guide", T0).await), "guide-2");
    // Not numbers of `guide`: a leading zero, a word, a longer stem.
    for other in ["guide-07", "guide-book", "guide-3x"] {
        create(store, Some(other), "Other", T0).await;
    }
    assert_eq!(slug(create(store, None, "guide", T0).await), "guide-3");
    create(store, Some("guide-41"), "Other", T0).await;
    assert_eq!(slug(create(store, None, "GUIDE", T0).await), "guide-42");
}

pub async fn ids_are_never_reused_and_grow(f: &PagesFixture) {
    let store = &f.store;
    let mut last = 0;
    for i in 0..5 {
        let created = create(store, Some(&format!("p{i}")), "Page", T0 + i).await;
        assert!(created.id > last, "{} after {last}", created.id);
        last = created.id;
        if i % 2 == 0 {
            store
                .change_state(created.id, StateChange::Claim, T0 + i)
                .await
                .unwrap();
        }
    }
}

pub async fn an_update_bumps_the_version_and_keeps_what_it_does_not_name(f: &PagesFixture) {
    let store = &f.store;
    let id = create(store, Some("doc"), "Doc", T0).await.id;
    let v2 = store
        .update(id, Some(title("Doc two")), None, T0 + 10)
        .await
        .unwrap();
    assert_eq!(v2, 2);
    let page = store.page("doc").await.unwrap().unwrap();
    assert_eq!(
        (page.title.as_str(), page.body.as_str(), page.version),
        ("Doc two", "Body of Doc", 2)
    );
    assert_eq!((page.created_at, page.updated_at), (T0, T0 + 10));
    let v3 = store
        .update(id, None, Some(body("New body")), T0 + 20)
        .await
        .unwrap();
    assert_eq!(v3, 3);
    let page = store.page("doc").await.unwrap().unwrap();
    assert_eq!(
        (page.title.as_str(), page.body.as_str(), page.version),
        ("Doc two", "New body", 3)
    );
    assert_eq!(page.updated_at, T0 + 20);
    // Naming nothing still bumps the version (a write happened).
    assert_eq!(store.update(id, None, None, T0 + 30).await.unwrap(), 4);
}

pub async fn archive_happens_once_and_takes_the_page_out_of_reads(f: &PagesFixture) {
    let store = &f.store;
    let id = create(store, Some("old"), "Old", T0).await.id;
    let archived = store
        .change_state(id, StateChange::Archive, T0 + 5)
        .await
        .unwrap();
    assert_eq!(
        (
            archived.slug.as_str(),
            archived.version,
            archived.lifecycle.as_str(),
            archived.claimed_at,
            archived.updated_at
        ),
        ("old", 2, "archived", None, T0 + 5)
    );
    let again = store
        .change_state(id, StateChange::Archive, T0 + 6)
        .await
        .unwrap();
    assert_eq!(again, archived, "archiving again changes nothing");
    assert_eq!(store.page("old").await.unwrap(), None);
    let pin = store.pin_record("old").await.unwrap().unwrap();
    assert_eq!((pin.id, pin.gone), (id, true));
    assert_eq!(store.count_all().await.unwrap(), 1, "still counted");
    assert_eq!(store.ledger(0, 10).await.unwrap().total, 0);
}

pub async fn claim_happens_once_and_keeps_the_first_claimed_at(f: &PagesFixture) {
    let store = &f.store;
    let id = create(store, Some("mine"), "Mine", T0).await.id;
    let claimed = store
        .change_state(id, StateChange::Claim, T0 + 7)
        .await
        .unwrap();
    assert_eq!((claimed.version, claimed.claimed_at), (2, Some(T0 + 7)));
    let again = store
        .change_state(id, StateChange::Claim, T0 + 8)
        .await
        .unwrap();
    assert_eq!(again, claimed, "claiming again changes nothing");
    assert_eq!(store.page("mine").await.unwrap(), None);
    assert!(store.pin_record("mine").await.unwrap().unwrap().gone);
    // An archived page can still be claimed, once.
    let other = create(store, Some("other"), "Other", T0).await.id;
    store
        .change_state(other, StateChange::Archive, T0 + 9)
        .await
        .unwrap();
    let claimed = store
        .change_state(other, StateChange::Claim, T0 + 10)
        .await
        .unwrap();
    assert_eq!((claimed.version, claimed.claimed_at), (3, Some(T0 + 10)));
}

pub async fn the_ledger_counts_candidates_and_pages_them_newest_first(f: &PagesFixture) {
    let store = &f.store;
    // Three at one second (newest id first among them), one later, one gone.
    let a = create(store, Some("a"), "A", T0).await.id;
    create(store, Some("b"), "B", T0).await;
    create(store, Some("c"), "C", T0).await;
    let gone = create(store, Some("gone"), "Gone", T0 + 1).await.id;
    store
        .change_state(gone, StateChange::Archive, T0 + 2)
        .await
        .unwrap();
    store
        .update(a, Some(title("A new")), None, T0 + 3)
        .await
        .unwrap();
    let first = store.ledger(0, 2).await.unwrap();
    assert_eq!(first.total, 3);
    let slugs: Vec<&str> = first.rows.iter().map(|r| r.slug.as_str()).collect();
    assert_eq!(slugs, ["a", "c"]);
    assert_eq!(
        (
            first.rows[0].title.as_str(),
            first.rows[0].version,
            first.rows[0].updated_at
        ),
        ("A new", 2, T0 + 3)
    );
    let rest = store.ledger(2, 2).await.unwrap();
    assert_eq!(rest.total, 3);
    let slugs: Vec<&str> = rest.rows.iter().map(|r| r.slug.as_str()).collect();
    assert_eq!(slugs, ["b"]);
    assert!(store.ledger(3, 2).await.unwrap().rows.is_empty());
}

pub async fn the_snapshot_holds_every_candidate_by_id_at_the_generation_now(f: &PagesFixture) {
    let store = &f.store;
    let (generation, empty) = store.candidates().await.unwrap();
    assert!(empty.is_empty());
    assert_eq!(generation, store.generation().await.unwrap());
    let a = create(store, Some("a"), "A", T0).await;
    let b = create(store, Some("b"), "B", T0 + 1).await;
    let c = create(store, Some("c"), "C", T0 + 2).await;
    store
        .change_state(b.id, StateChange::Claim, T0 + 3)
        .await
        .unwrap();
    store
        .update(c.id, Some(title("C two")), None, T0 + 4)
        .await
        .unwrap();
    let (generation, candidates) = store.candidates().await.unwrap();
    assert_eq!(generation, store.generation().await.unwrap());
    assert_eq!(
        candidates,
        [
            Candidate {
                id: a.id,
                version: 1,
                slug: "a".into(),
                title: "A".into(),
                updated_at: T0
            },
            Candidate {
                id: c.id,
                version: 2,
                slug: "c".into(),
                title: "C two".into(),
                updated_at: T0 + 4
            }
        ]
    );
    // The streaming read hands over the same rows at the same generation.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let streamed = store
        .each_candidate(Box::new(move |c| {
            sink.lock().unwrap().push(c.to_candidate())
        }))
        .await
        .unwrap();
    assert_eq!(streamed, generation);
    assert_eq!(*seen.lock().unwrap(), candidates);
}

pub async fn the_generation_moves_on_every_committed_change_and_only_then(f: &PagesFixture) {
    let store = &f.store;
    let mut last = store.generation().await.unwrap();
    let mut moved = |now: i64, what: &str| {
        assert!(
            now > last,
            "{what}: the generation stayed at {last} (now {now})"
        );
        last = now;
    };
    let id = create(store, Some("g"), "G", T0).await.id;
    moved(store.generation().await.unwrap(), "create");
    store.update(id, None, Some(body("b")), T0).await.unwrap();
    moved(store.generation().await.unwrap(), "update");
    store
        .change_state(id, StateChange::Archive, T0)
        .await
        .unwrap();
    moved(store.generation().await.unwrap(), "archive");
    store
        .change_state(id, StateChange::Claim, T0)
        .await
        .unwrap();
    moved(store.generation().await.unwrap(), "claim");
    // Reads and refusals change nothing.
    store.page("g").await.unwrap();
    store.ledger(0, 5).await.unwrap();
    store.candidates().await.unwrap();
    let taken = NewPage::parse(Some("g"), "G", None).unwrap();
    assert!(store.create(taken, None, T0).await.unwrap().is_err());
    assert_eq!(store.generation().await.unwrap(), last);
}

pub async fn changes_since_name_each_changed_page_once_with_its_row_now(f: &PagesFixture) {
    let store = &f.store;
    let a = create(store, Some("a"), "A", T0).await.id;
    let b = create(store, Some("b"), "B", T0).await.id;
    let since = store.generation().await.unwrap();
    assert_eq!(
        store.changes_since(since).await.unwrap(),
        Some((since, vec![]))
    );
    store
        .update(a, Some(title("A two")), None, T0 + 1)
        .await
        .unwrap();
    store.update(a, None, None, T0 + 2).await.unwrap();
    store
        .change_state(b, StateChange::Archive, T0 + 3)
        .await
        .unwrap();
    let c = create(store, Some("c"), "C", T0 + 4).await.id;
    let (now, changes) = store
        .changes_since(since)
        .await
        .unwrap()
        .expect("reaches back");
    assert_eq!(now, store.generation().await.unwrap());
    let ids: Vec<i64> = changes.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, [a, b, c], "each once, ids ascending");
    let row_a = changes[0].1.as_ref().expect("a is a candidate");
    assert_eq!(
        (row_a.title.as_str(), row_a.version, row_a.updated_at),
        ("A two", 3, T0 + 2)
    );
    assert_eq!(changes[1].1, None, "b is no longer a candidate");
    assert_eq!(changes[2].1.as_ref().map(|r| r.slug.as_str()), Some("c"));
    // Nothing changed since now.
    assert_eq!(store.changes_since(now).await.unwrap(), Some((now, vec![])));
}

pub async fn a_compacted_change_log_asks_for_a_full_reload(f: &PagesFixture) {
    let store = &f.store;
    let id = create(store, Some("a"), "A", T0).await.id;
    let since = store.generation().await.unwrap();
    for i in 0..4 {
        store.update(id, None, None, T0 + i).await.unwrap();
    }
    let now = store.generation().await.unwrap();
    // Keep the last generation's rows only.
    while store.compact_changes(1).await.unwrap() >= agent_pages::page_store::COMPACT_BATCH {}
    assert_eq!(
        store.changes_since(since).await.unwrap(),
        None,
        "log no longer reaches back"
    );
    let (at, changes) = store
        .changes_since(now - 1)
        .await
        .unwrap()
        .expect("still reaches");
    assert_eq!(at, now);
    assert_eq!(changes.len(), 1);
    // Compacting again deletes nothing more.
    assert_eq!(store.compact_changes(1).await.unwrap(), 0);
}

pub async fn another_handle_sees_every_committed_write_and_the_same_generation(f: &PagesFixture) {
    let other = f.another().await;
    let since = other.generation().await.unwrap();
    let id = create(&f.store, Some("shared"), "Shared", T0).await.id;
    assert_eq!(other.page("shared").await.unwrap().unwrap().id, id);
    let generation = f.store.generation().await.unwrap();
    assert_eq!(other.generation().await.unwrap(), generation);
    let (now, changes) = other.changes_since(since).await.unwrap().unwrap();
    assert_eq!((now, changes.len()), (generation, 1));
    // And the other way round: a write there refuses the slug here.
    other
        .update(id, Some(title("Shared two")), None, T0 + 1)
        .await
        .unwrap();
    assert_eq!(f.store.page("shared").await.unwrap().unwrap().version, 2);
    assert!(f.store.generation().await.unwrap() > generation);
}

pub async fn concurrent_creates_on_two_handles_never_share_a_slug_or_an_id(f: &PagesFixture) {
    let other = f.another().await;
    let mut writes = Vec::new();
    for i in 0..16 {
        let store = if i % 2 == 0 {
            f.store.clone()
        } else {
            other.clone()
        };
        writes.push(tokio::spawn(async move {
            // Busy is a promised answer under contention (retry it); a shared slug
            // or id never is.
            for _ in 0..100 {
                let page = NewPage::parse(None, "Same title", None).unwrap();
                match store.create(page, None, T0).await {
                    Ok(created) => return created.unwrap(),
                    Err(PageStoreError::Busy(_)) => continue,
                    Err(e) => panic!("{e}"),
                }
            }
            panic!("busy a hundred times in a row")
        }));
    }
    let mut created = Vec::new();
    for write in writes {
        created.push(write.await.unwrap());
    }
    let mut slugs: Vec<String> = created.iter().map(|c| c.slug.to_string()).collect();
    let mut ids: Vec<i64> = created.iter().map(|c| c.id).collect();
    slugs.sort();
    slugs.dedup();
    ids.sort();
    ids.dedup();
    assert_eq!((slugs.len(), ids.len()), (16, 16), "{slugs:?}");
    assert_eq!(f.store.count_all().await.unwrap(), 16);
    assert_eq!(candidate_slugs(&f.store).await.len(), 16);
}

pub async fn titles_and_bodies_come_back_exactly_as_written(f: &PagesFixture) {
    let store = &f.store;
    let text = "Zürich \u{1F600} — \"quoted\" 'single' \\ back; -- not SQL %_";
    let long_body = format!("line one\nline two\r\n\ttabbed {}", "é".repeat(5000));
    let page = NewPage::parse(Some("exact"), text, Some(long_body.clone())).unwrap();
    store.create(page, None, T0).await.unwrap().unwrap();
    let read = store.page("exact").await.unwrap().unwrap();
    assert_eq!(
        (read.title.as_str(), read.body.as_str()),
        (text, long_body.as_str())
    );
    let (_, candidates) = store.candidates().await.unwrap();
    assert_eq!(candidates[0].title, text);
    assert_eq!(store.ledger(0, 1).await.unwrap().rows[0].title, text);
}

pub async fn concurrent_updates_of_one_page_each_get_a_version_of_their_own(f: &PagesFixture) {
    let id = create(&f.store, Some("busy"), "Busy", T0).await.id;
    let other = f.another().await;
    let mut writes = Vec::new();
    for i in 0..12 {
        let store = if i % 2 == 0 {
            f.store.clone()
        } else {
            other.clone()
        };
        writes.push(tokio::spawn(async move {
            let body = PageBody::parse(format!("write {i}")).unwrap();
            store.update(id, None, Some(body), T0 + 1).await.unwrap()
        }));
    }
    let mut versions = Vec::new();
    for write in writes {
        versions.push(write.await.unwrap());
    }
    versions.sort();
    assert_eq!(
        versions,
        (2..=13).collect::<Vec<i64>>(),
        "none lost, none shared"
    );
    assert_eq!(f.store.page("busy").await.unwrap().unwrap().version, 13);
}

pub async fn an_import_upserts_by_slug_and_counts_what_it_did(f: &PagesFixture) {
    let store = &f.store;
    let page = |slug: &str, text: &str| ImportPage {
        slug: PageSlug::parse(slug).unwrap(),
        title: title(text),
        body: body(""),
        pin_hash: None,
    };
    let first = store
        .import(vec![page("a", "A"), page("b", "B")], T0)
        .await
        .unwrap();
    assert_eq!(
        first,
        ImportCounts {
            inserted: 2,
            updated: 0,
            unchanged: 0
        }
    );
    let again = store
        .import(
            vec![page("a", "A"), page("b", "B two"), page("c", "C")],
            T0 + 1,
        )
        .await
        .unwrap();
    assert_eq!(
        again,
        ImportCounts {
            inserted: 1,
            updated: 1,
            unchanged: 1
        }
    );
    assert_eq!(store.page("a").await.unwrap().unwrap().version, 1);
    let b = store.page("b").await.unwrap().unwrap();
    assert_eq!(
        (b.title.as_str(), b.version, b.updated_at),
        ("B two", 2, T0 + 1)
    );
    assert_eq!(candidate_slugs(store).await, ["a", "b", "c"]);
}

pub async fn a_fresh_store_is_ready(f: &PagesFixture) {
    assert_eq!(f.store.check_ready().await, Ok(()));
}

contract_suite!(PagesFixture; [sqlite, postgres]; [
    a_created_page_reads_back_at_version_1,
    a_page_without_a_pin_has_no_hash,
    a_given_slug_in_use_in_any_state_is_refused_and_nothing_is_written,
    derived_slugs_take_the_next_number_after_the_highest_in_use,
    ids_are_never_reused_and_grow,
    an_update_bumps_the_version_and_keeps_what_it_does_not_name,
    archive_happens_once_and_takes_the_page_out_of_reads,
    claim_happens_once_and_keeps_the_first_claimed_at,
    the_ledger_counts_candidates_and_pages_them_newest_first,
    the_snapshot_holds_every_candidate_by_id_at_the_generation_now,
    the_generation_moves_on_every_committed_change_and_only_then,
    changes_since_name_each_changed_page_once_with_its_row_now,
    a_compacted_change_log_asks_for_a_full_reload,
    another_handle_sees_every_committed_write_and_the_same_generation,
    concurrent_creates_on_two_handles_never_share_a_slug_or_an_id,
    titles_and_bodies_come_back_exactly_as_written,
    concurrent_updates_of_one_page_each_get_a_version_of_their_own,
    an_import_upserts_by_slug_and_counts_what_it_did,
    a_fresh_store_is_ready,
]);
