//! The result cache's carry rule over each page store (issue 35, docs/spec.md "The
//! cache survives writes it cannot affect"): two replicas' corpora, each on its own
//! handle of the same pages, see every write, on either handle, as the same move
//! (same fingerprints, same changed pages), so their caches carry, patch or drop
//! the same entries, and every entry carried or patched equals a cold scoring of
//! the store as it is.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use agent_pages::domain::{NewPage, PageTitle};
use agent_pages::page_store::{PageStore, StateChange};
use agent_pages::search::cache::carry::{Probe, Verdict};
use agent_pages::search::corpus::{ChangedTitle, Corpus, Fingerprint, Move, Snapshot};
use agent_pages::search::normalize::normalize;
use agent_pages::search::rank::{self, SearchResult};

use crate::backends::PagesFixture;
use crate::helpers::T0;

const QUERIES: [&str; 7] = [
    "zephyr",
    "json parser",
    "http client",
    "react comp",
    "arcadegames",
    "data tool",
    "vim",
];

const WORDS: [&str; 16] = [
    "json",
    "parser",
    "http",
    "client",
    "react",
    "component",
    "arcade",
    "games",
    "data",
    "tool",
    "garden",
    "notes",
    "river",
    "stone",
    "cloud",
    "lamp",
];

/// One replica's corpus over `store`, with the moves it reports.
fn corpus(store: &PageStore) -> (Corpus, Arc<Mutex<Vec<Move>>>) {
    let counter = prometheus::IntCounter::new("fetches", "fetches").unwrap();
    let corpus = Corpus::new(store.clone(), counter);
    let moves = Arc::new(Mutex::new(Vec::new()));
    let seen = moves.clone();
    corpus.on_move(move |m| seen.lock().unwrap().push(m));
    (corpus, moves)
}

/// Rows a result keeps.
const LIMIT: usize = 50;

fn scored(s: &Snapshot, q: &str) -> SearchResult {
    rank::rank(&s.index, &normalize(q), LIMIT)
}

/// A move's fingerprints and changed pages (sorted), to compare replicas' moves.
fn seen(m: &Move) -> (Fingerprint, Fingerprint, usize, usize, Vec<ChangedTitle>) {
    let mut changed = m.changed.clone();
    changed.sort();
    (m.from, m.to, m.len_from, m.len_to, changed)
}

pub async fn a_write_on_either_replica_carries_or_drops_the_same_entries_on_both(f: &PagesFixture) {
    let other = f.another().await;
    let stores = [f.store.clone(), other.clone()];
    let mut ids = Vec::new();
    // 770 pages: a size class 16 titles wide, so some creates and archives move
    // it and some do not; 700 of them fillers, so that a word in at most 7
    // titles (`zephyr`, which each create below adds) weighs 1.0 and its
    // entry is patched, while the 16 words' weights move with their counts.
    for i in 0..700 {
        let page =
            NewPage::parse(Some(&format!("f{i}")), &format!("filler page {i}"), None).unwrap();
        f.store.create(page, None, T0).await.unwrap().unwrap();
    }
    for i in 0..70 {
        let title = format!(
            "{} {} {}",
            WORDS[i % 16],
            WORDS[(i * 7 + 3) % 16],
            WORDS[(i * 5 + 1) % 16]
        );
        let page = NewPage::parse(Some(&format!("p{i}")), &title, None).unwrap();
        ids.push(f.store.create(page, None, T0).await.unwrap().unwrap().id);
    }
    let (a, moves_a) = corpus(&stores[0]);
    let (b, moves_b) = corpus(&stores[1]);
    let start = a.warm().await.unwrap();
    assert_eq!(b.warm().await.unwrap().fingerprint, start.fingerprint);
    // Both replicas' caches: per query, the fingerprint and the result.
    let mut caches: [BTreeMap<&str, (Fingerprint, SearchResult)>; 2] = [0, 1].map(|_| {
        QUERIES
            .iter()
            .map(|q| (*q, (start.fingerprint, scored(&start, q))))
            .collect()
    });
    let (mut carried, mut patched, mut dropped) = (0, 0, 0);
    for step in 0..24usize {
        let writer = &stores[step % 2];
        let id = ids[(step * 11) % ids.len()];
        let now = T0 + 1 + step as i64;
        match step % 6 {
            0 | 3 => {
                let title = format!("{} notes {step} zephyr", WORDS[(step * 3) % 16]);
                let page = NewPage::parse(Some(&format!("new{step}")), &title, None).unwrap();
                ids.push(writer.create(page, None, now).await.unwrap().unwrap().id);
            }
            1 | 4 => {
                let title =
                    PageTitle::parse(&format!("{} river {step}", WORDS[step % 16])).unwrap();
                writer.update(id, Some(title), None, now).await.unwrap();
            }
            2 => {
                writer
                    .change_state(id, StateChange::Archive, now)
                    .await
                    .unwrap();
                ids.retain(|&i| i != id);
            }
            _ => {
                writer
                    .change_state(id, StateChange::Claim, now)
                    .await
                    .unwrap();
                ids.retain(|&i| i != id);
            }
        }
        let (generation, candidates) = f.store.candidates().await.unwrap();
        let cold = Snapshot::build(generation, candidates);
        let snapshots = [
            a.current(None).await.unwrap(),
            b.current(None).await.unwrap(),
        ];
        let moved = [&moves_a, &moves_b].map(|m| m.lock().unwrap().pop().expect("a move"));
        assert_eq!(
            seen(&moved[0]),
            seen(&moved[1]),
            "step {step}: the same move"
        );
        for (r, snapshot) in snapshots.iter().enumerate() {
            assert_eq!(snapshot.fingerprint, cold.fingerprint, "step {step}");
            assert_eq!(moved[r].to, cold.fingerprint, "step {step}");
        }
        let probes = moved.clone().map(|m| Probe::new(&m));
        for q in QUERIES {
            let mut verdicts = Vec::new();
            for (r, cache) in caches.iter_mut().enumerate() {
                let (fingerprint, result) = cache.get_mut(q).unwrap();
                assert_eq!(*fingerprint, moved[r].from, "step {step}: {q}");
                let verdict = probes[r].verdict(&normalize(q), result, LIMIT);
                match &verdict {
                    Verdict::Unaffected => {
                        assert_eq!(*result, scored(&cold, q), "step {step}: {q} carried");
                        carried += 1;
                    }
                    Verdict::Patched(new) => {
                        assert_eq!(*new, scored(&cold, q), "step {step}: {q} patched");
                        *result = new.clone();
                        patched += 1;
                    }
                    Verdict::Affected => {
                        *result = scored(&snapshots[r], q);
                        dropped += 1;
                    }
                }
                *fingerprint = cold.fingerprint;
                verdicts.push(verdict);
            }
            assert_eq!(verdicts[0], verdicts[1], "step {step}: {q}");
        }
    }
    assert!(
        carried > 20 && patched > 5 && dropped > 5,
        "carried {carried}, patched {patched}, dropped {dropped}"
    );
}

contract_suite!(PagesFixture; [sqlite, postgres]; [
    a_write_on_either_replica_carries_or_drops_the_same_entries_on_both,
]);
