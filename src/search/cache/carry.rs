//! The carry rule: which cached results stay exact when the corpus moves by a
//! known set of changed pages, so that the Cache actor moves them to the new
//! fingerprint instead of letting every write empty the cache for every query
//! (docs/spec.md, "The cache survives writes it cannot affect").
//!
//! A result of query `q` scored over snapshot `S` equals the scoring of `q` over
//! `S'` (= `S` with pages `P` changed) when
//!
//! 1. no title any page of `P` had in `S` or has in `S'` matches `q` (matching is
//!    a property of one title and the query alone: its words against the query
//!    words by the typo, prefix, split and join rules, never the rest of the
//!    corpus). Then every title that matches `q` in either snapshot is the same
//!    page at the same version with the same title in both, so the rows'
//!    candidates, the `total`, and each query word's document frequency (the
//!    titles it matched) are unchanged; and
//! 2. the corpus size class word rarity is measured against
//!    ([`rank::size_class`]) is the same in both. With the document frequencies,
//!    that fixes every query word's weight, hence the best reachable score that
//!    maps raw scores to 0–100, hence every row's score and the rank order
//!    (score, then the title's word count, then the page id: all per title).
//!
//! Both conditions are checked without the corpus: (2) from the two sizes, (1) by
//! ranking `q` over throwaway indexes of the changed titles alone ([`Probe`]),
//! which match exactly the titles the full index would match, since a title's
//! own words are in any lexicon holding it.
//!
//! An entry that fails them may still be *patched* ([`Verdict::Patched`],
//! [`rank::patch`]): when the changed titles' matches move no query word's
//! weight, its new result is its old rows without the changed pages plus their
//! new titles that match, scored with the same weights, when that is exact.
//!
//! The cost is therefore per write and per checked entry, not per corpus title:
//! microseconds for one entry and a write of one page (see [`CARRY_CHECKS`] for
//! the bound).

use crate::search::corpus::Move;
use crate::search::rank::{self, Changes, SearchResult};

/// Entries checked per move at most, most recently used first; the entries of
/// the old fingerprint past them are not carried (they can no longer be found,
/// and leave by the LRU order, as every entry did before carrying).
pub const CARRY_CHECKS: usize = 512;

/// Entries the actor looks at per move at most while it looks for the entries
/// of the old fingerprint (the others belong to older snapshots and wait for
/// eviction): a bound on the scan at the entry bound.
pub const CARRY_SCAN: usize = 4 * CARRY_CHECKS;

/// What the check of one move decided for one entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The result is exact over the new snapshot as it is: re-key it.
    Unaffected,
    /// The result over the new snapshot is this one (see [`rank::patch`]).
    Patched(SearchResult),
    /// Not shown exact either way: drop it (its next search scores again).
    Affected,
}

/// The check of one move, built once and asked for each entry.
pub struct Probe {
    /// Condition (2): the rarity size class did not move.
    same_class: bool,
    /// The changed pages' titles, before and after, as indexes of their own.
    changes: Changes,
    /// Candidates after the move.
    len_to: usize,
}

impl Probe {
    /// The check for `moved`: cost proportional to its titles' words.
    pub fn new(moved: &Move) -> Self {
        let changes = Changes::new(
            moved
                .changed
                .iter()
                .map(|c| (c.page_id, c.before.as_deref(), c.after.as_deref())),
        );
        Self {
            same_class: rank::size_class(moved.len_from) == rank::size_class(moved.len_to),
            changes,
            len_to: moved.len_to,
        }
    }

    /// Whether the result of `query` (a match copy) over the snapshot before the
    /// move is exactly its result over the snapshot after it (see the module
    /// docs); false when it cannot be shown.
    pub fn unaffected(&self, query: &str) -> bool {
        self.same_class && !self.changes.match_any(query)
    }

    /// What becomes of `result`, the result of `query` (a match copy) with at
    /// most `limit` rows over the snapshot before the move: unaffected, patched
    /// from the changed titles ([`rank::patch`]: their rows and counts moved,
    /// nothing else), or neither.
    pub fn verdict(&self, query: &str, result: &SearchResult, limit: usize) -> Verdict {
        if self.unaffected(query) {
            return Verdict::Unaffected;
        }
        match rank::patch(result, query, &self.changes, self.len_to, limit) {
            Some(patched) => Verdict::Patched(patched),
            None => Verdict::Affected,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page_store::Candidate;
    use crate::search::corpus::{Fingerprint, Snapshot};
    use crate::search::normalize::normalize;
    use crate::search::rank::SearchResult;
    use crate::search::testing::{page, Lcg, NEAR_QUERIES, NEAR_WORDS};
    use std::collections::{BTreeMap, HashMap};
    use std::sync::LazyLock;

    /// [`NEAR_WORDS`] and words that split, join and prefix each other.
    static VOCAB: LazyLock<Vec<&str>> = LazyLock::new(|| {
        [
            NEAR_WORDS,
            &[
                "arcade",
                "games",
                "arcadegames",
                "frame",
                "work",
                "framework",
                "react",
                "component",
                "kube",
                "vim",
            ],
        ]
        .concat()
    });

    static QUERIES: LazyLock<Vec<&str>> = LazyLock::new(|| {
        [
            NEAR_QUERIES,
            &[
                "arcadegames",
                "frame work",
                "react comp",
                "rest server",
                "kube",
                "vim improved",
                "games",
                "parser",
                "tools for",
            ],
        ]
        .concat()
    });

    fn title(rng: &mut Lcg) -> String {
        let n = 1 + rng.below(5);
        rng.words(&VOCAB, n)
    }

    fn scored(s: &Snapshot, q: &str) -> SearchResult {
        rank::rank(&s.index, &normalize(q), LIMIT)
    }

    /// What one write does to the candidates, as the page store's change log
    /// tells it: a create, a retitle, a body edit or a claim (a new version with
    /// the same title), or an archive (no longer a candidate).
    fn random_changes(
        rng: &mut Lcg,
        now: &BTreeMap<i64, Candidate>,
        next_id: &mut i64,
    ) -> Vec<(i64, Option<Candidate>)> {
        let ids: Vec<i64> = now.keys().copied().collect();
        let pick = |rng: &mut Lcg| *rng.pick(&ids);
        let writes = 1 + rng.below(3);
        let mut changes = Vec::new();
        for _ in 0..writes {
            match rng.below(10) {
                0..=2 => {
                    *next_id += 1;
                    changes.push((*next_id, Some(page(*next_id, 1, &title(rng)))));
                }
                3..=5 if !ids.is_empty() => {
                    let id = pick(rng);
                    let old = &now[&id];
                    changes.push((id, Some(page(id, old.version + 1, &title(rng)))));
                }
                6 | 7 if !ids.is_empty() => {
                    let id = pick(rng);
                    let old = &now[&id];
                    changes.push((id, Some(page(id, old.version + 1, &old.title))));
                }
                _ if !ids.is_empty() => changes.push((pick(rng), None)),
                _ => {}
            }
        }
        // The change log gives each page once, as it is now.
        let mut last: BTreeMap<i64, Option<Candidate>> = BTreeMap::new();
        for (id, row) in changes {
            last.insert(id, row);
        }
        last.into_iter().collect()
    }

    /// Rows the property's cache keeps per result (its `limit`).
    const LIMIT: usize = 30;

    /// The property: through random creates, retitles, claims and archives, a
    /// cache that carries and patches what the rule allows holds, for every
    /// query, either nothing for the current fingerprint or exactly a cold
    /// scoring over the current snapshot (rows with their raw scores, the total,
    /// every weight); and the rule does carry and patch (it is no rule that
    /// never does).
    #[test]
    fn every_carried_or_patched_result_equals_a_cold_scoring_of_the_same_snapshot() {
        let (mut carried, mut patched, mut dropped, mut checks) = (0usize, 0usize, 0usize, 0usize);
        for seed in 0..16u64 {
            let mut rng = Lcg(0x9e37_79b9 ^ seed);
            // Sizes on both sides of a size class boundary, inside wide classes,
            // and large enough that common words' document frequencies are
            // classed (64 and more) and results are cut to their limit.
            let start = [20, 63, 64, 100, 130, 300, 1_200, 2_500][seed as usize % 8];
            let steps = if start > 1_000 { 30 } else { 60 };
            let mut now: BTreeMap<i64, Candidate> = (1..=start)
                .map(|id| (id, page(id, 1, &title(&mut rng))))
                .collect();
            let mut next_id = start;
            let mut snapshot = Snapshot::build(1, now.values().cloned().collect());
            // The cache: per query, the fingerprint it is keyed by and the result.
            let mut cache: HashMap<&str, (Fingerprint, SearchResult)> = QUERIES
                .iter()
                .map(|q| (*q, (snapshot.fingerprint, scored(&snapshot, q))))
                .collect();
            for step in 0..steps {
                let changes = random_changes(&mut rng, &now, &mut next_id);
                let after = snapshot.apply(step + 2, &changes);
                let probe = Probe::new(&Move::of(&snapshot, &after, &changes));
                for (id, row) in &changes {
                    match row {
                        Some(row) => now.insert(*id, row.clone()),
                        None => now.remove(id),
                    };
                }
                let cold = Snapshot::build(step + 2, now.values().cloned().collect());
                assert_eq!(after.fingerprint, cold.fingerprint);
                for q in QUERIES.iter() {
                    let (fingerprint, result) = cache.get_mut(q).unwrap();
                    if *fingerprint != snapshot.fingerprint {
                        continue;
                    }
                    checks += 1;
                    let context = || format!("seed {seed} step {step}: {q:?} across {changes:?}");
                    match probe.verdict(&normalize(q), result, LIMIT) {
                        Verdict::Unaffected => {
                            carried += 1;
                            assert_eq!(*result, scored(&cold, q), "carried, {}", context());
                        }
                        Verdict::Patched(new) => {
                            patched += 1;
                            assert_eq!(new, scored(&cold, q), "patched, {}", context());
                            *result = new;
                        }
                        Verdict::Affected => {
                            dropped += 1;
                            continue;
                        }
                    }
                    *fingerprint = after.fingerprint;
                }
                // Dropped entries are scored again, as a miss would.
                for q in QUERIES.iter() {
                    let entry = cache.get_mut(q).unwrap();
                    if entry.0 != after.fingerprint {
                        *entry = (after.fingerprint, scored(&after, q));
                    }
                }
                snapshot = after;
            }
        }
        assert!(checks > 5_000, "{checks}");
        assert!(carried > checks / 4, "carried {carried} of {checks}");
        assert!(patched > checks / 20, "patched {patched} of {checks}");
        assert!(dropped > checks / 10, "dropped {dropped} of {checks}");
    }

    #[test]
    fn a_changed_title_that_matches_only_by_a_typo_a_prefix_or_a_join_drops_the_entry() {
        let before = Snapshot::build(
            1,
            vec![page(1, 1, "vim editor"), page(2, 1, "emacs editor")],
        );
        for (title, query) in [
            ("kubrenetes", "kubernetes"),
            ("kubernetes-operator", "kube"),
            ("arcade games", "arcadegames"),
            ("framework", "frame work"),
            ("vim editor", "vim"),
        ] {
            let changes = vec![(1, Some(page(1, 2, title)))];
            let after = before.apply(2, &changes);
            let probe = Probe::new(&Move::of(&before, &after, &changes));
            assert!(
                !probe.unaffected(&normalize(query)),
                "{title:?} / {query:?}"
            );
            assert!(
                probe.unaffected("gnu emacs"),
                "{title:?}: emacs is untouched"
            );
        }
    }

    #[test]
    fn a_move_to_another_size_class_drops_every_entry() {
        let pages: Vec<Candidate> = (1..=64).map(|id| page(id, 1, "vim editor")).collect();
        let before = Snapshot::build(1, pages);
        let same = vec![(65, Some(page(65, 1, "emacs")))];
        let after = before.apply(2, &same);
        assert_eq!(rank::size_class(64), rank::size_class(65));
        assert!(Probe::new(&Move::of(&before, &after, &same)).unaffected("kube"));
        let gone = vec![(3, None)];
        let after = before.apply(2, &gone);
        assert_ne!(rank::size_class(64), rank::size_class(63));
        assert!(!Probe::new(&Move::of(&before, &after, &gone)).unaffected("kube"));
    }
}
