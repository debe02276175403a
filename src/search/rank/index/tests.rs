//! Incremental changes (`upsert`, `remove`) against fresh builds.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use super::RankIndex;
use crate::search::rank::{rank, SearchResult};
use crate::search::testing::{Lcg, NEAR_QUERIES, NEAR_WORDS};

/// [`NEAR_WORDS`] and words that split, join and prefix each other, and ones
/// that match only after folding.
static VOCAB: LazyLock<Vec<&str>> = LazyLock::new(|| {
    [
        NEAR_WORDS,
        &[
            "database",
            "base",
            "jsonlint",
            "lint",
            "frame",
            "work",
            "framework",
            "Café",
            "cafe",
            "数据",
            "ß",
            "strasse",
        ],
    ]
    .concat()
});

static QUERIES: LazyLock<Vec<&str>> = LazyLock::new(|| {
    [
        NEAR_QUERIES,
        &[
            "database",
            "frame work",
            "jsonlint",
            "cafe",
            "strasse",
            "数据",
            "restclient",
            "framewo",
        ],
    ]
    .concat()
});

/// A title of 0 to 6 words (0 words: a title that never matches).
fn title(rng: &mut Lcg) -> String {
    let n = rng.below(7);
    rng.words(&VOCAB, n)
}

fn fresh(pages: &BTreeMap<i64, String>) -> RankIndex {
    RankIndex::build(pages.iter().map(|(id, t)| (*id, t.as_str())))
}

fn results(index: &RankIndex) -> Vec<SearchResult> {
    QUERIES
        .iter()
        .flat_map(|q| [rank(index, q, 5), rank(index, q, usize::MAX)])
        .collect()
}

/// Asserts that both indexes rank every query alike, naming the first query
/// and row that differ.
fn assert_same_rankings(index: &RankIndex, expected: &RankIndex, context: &str) {
    for q in QUERIES.iter() {
        for limit in [5, usize::MAX] {
            let (got, want) = (rank(index, q, limit), rank(expected, q, limit));
            assert_eq!(
                (got.total, got.truncated, got.rows.len()),
                (want.total, want.truncated, want.rows.len()),
                "{context}: {q:?} limit {limit}"
            );
            for (g, w) in got.rows.iter().zip(&want.rows) {
                assert_eq!(g, w, "{context}: {q:?} limit {limit}");
            }
        }
    }
}

#[test]
fn a_sequence_of_upserts_and_removes_ranks_like_a_fresh_build() {
    for seed in [0x5eed_1234, 0xdead_beef] {
        changes_rank_like_a_fresh_build(seed);
    }
}

fn changes_rank_like_a_fresh_build(seed: u64) {
    let mut random = Lcg(seed);
    let mut pages: BTreeMap<i64, String> = BTreeMap::new();
    for id in 0..300 {
        pages.insert(id, title(&mut random));
    }
    let mut index = fresh(&pages);
    for step in 0..1500 {
        let id = random.below(400) as i64;
        match random.below(4) {
            0 => {
                let removed = index.remove(id);
                assert_eq!(removed, pages.remove(&id).is_some());
            }
            1 if pages.contains_key(&id) => {
                // The same title again changes nothing.
                index.upsert(id, &pages[&id]);
            }
            _ => {
                let title = title(&mut random);
                index.upsert(id, &title);
                pages.insert(id, title);
            }
        }
        if step % 100 == 99 {
            let expected = fresh(&pages);
            assert_eq!(index.len(), expected.len());
            assert_same_rankings(&index, &expected, &format!("seed {seed:x} step {step}"));
        }
    }
    // Everything removed: an empty index, whose words are all gone too.
    for id in pages.keys() {
        assert!(index.remove(*id));
    }
    assert!(index.is_empty());
    assert_eq!(results(&index), results(&RankIndex::default()));
    assert_eq!(index.lexicon.live_words(), 0);
}

#[test]
fn a_word_leaves_the_lexicon_with_its_last_title_and_its_id_is_reused() {
    let mut index = RankIndex::build([(1, "kubernetes guide"), (2, "cooking guide")]);
    index.remove(1);
    assert_eq!(rank(&index, "kubernetes", 10).total, 0);
    assert!(index
        .lexicon
        .find(&"kubernetes".chars().collect::<Vec<_>>())
        .is_none());
    let ids_before = index.lexicon.len();
    index.upsert(3, "baking bread");
    // "baking" took the freed id; only "bread" needed a new one.
    assert_eq!(index.lexicon.len(), ids_before + 1);
    assert_eq!(rank(&index, "bakign", 10).rows[0].page_id, 3);
}

#[test]
fn changing_a_title_moves_the_page_to_its_new_words() {
    let mut index = RankIndex::build([(1, "kubernetes guide"), (2, "cooking guide")]);
    index.upsert(1, "baking bread");
    assert_eq!(rank(&index, "kubernetes", 10).total, 0);
    assert_eq!(rank(&index, "guide", 10).total, 1);
    assert_eq!(rank(&index, "bread", 10).rows[0].page_id, 1);
    assert_eq!(index.len(), 2);
}

#[test]
fn removing_an_unknown_page_changes_nothing() {
    let mut index = RankIndex::build([(1, "kubernetes guide")]);
    assert!(!index.remove(7));
    assert_eq!(index.len(), 1);
    assert_eq!(rank(&index, "guide", 10).total, 1);
}

#[test]
fn a_page_id_given_twice_to_build_keeps_its_last_title() {
    let index = RankIndex::build([(1, "kubernetes guide"), (2, "x"), (1, "cooking")]);
    assert_eq!(index.len(), 2);
    assert_eq!(rank(&index, "kubernetes", 10).total, 0);
    assert_eq!(rank(&index, "cooking", 10).rows[0].page_id, 1);
}

#[test]
fn a_clone_is_independent_of_the_original() {
    let original = RankIndex::build([(1, "kubernetes guide")]);
    let mut copy = original.clone();
    copy.upsert(2, "kubernetes operators");
    assert_eq!(rank(&original, "kubernetes", 10).total, 1);
    assert_eq!(rank(&copy, "kubernetes", 10).total, 2);
}
