//! Fuzzy title ranking (SPEC §5 "Gate 5", §6 relevance bar): word-level typo
//! tolerant matching over a per-corpus index.
//!
//! Method, in the order a query flows:
//!
//! 1. The query's match copy and every title are accent-folded ([`fold`]: Latin and
//!    Greek marks dropped, other scripts' marks kept) and split into words.
//! 2. Each query word is compared once with each distinct corpus word of plausible
//!    length ([`lookup`]): OSA distance (a swap of two adjacent letters is one edit)
//!    within a budget that grows with word length (0 edits up to 2 chars, 1 up to 5,
//!    2 beyond); the last query word also matches words it is a prefix of.
//! 3. Titles are gathered from the postings of the matched words; a first pass
//!    records which query words each title matches and their best qualities, which
//!    bounds the title's final score from above.
//! 4. Titles are scored exactly in order of that bound ([`score`]: matched words
//!    and their similarity, then word proximity and order, then how much of the title
//!    the query covers) until no remaining bound can enter the top `limit`.
//!
//! Rank order (deterministic): higher score, then fewer title words, then lower
//! page id.

mod fold;
mod index;
mod lookup;
mod score;

use std::cmp::Ordering;
use std::collections::BinaryHeap;

pub use index::RankIndex;
use lookup::{lookup, QueryWord, WordHit};
use score::Occurrence;

/// One ranked row: page id and score in 0.0..=100.0 (higher is better).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoredRow {
    pub page_id: i64,
    pub score: f32,
}

/// Immutable ranking output (cached by the service): rows in rank order, at most
/// `limit`; `total` = number of titles that matched at all; `truncated` =
/// `total > rows.len()`.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    pub rows: Vec<ScoredRow>,
    pub total: usize,
    pub truncated: bool,
}

/// Query words beyond this many are ignored (a 64-char match copy has at most 32).
const MAX_QUERY_WORDS: usize = 32;

/// Ranks the titles of `index` for `query`, a match copy (already `normalize()`d;
/// the service guarantees 2..=64 chars, but any string is accepted). Pure and
/// deterministic: the same index and query always give the same result.
///
/// A title **matches** when at least one of its words matches at least one query
/// word: the same word after folding, a word within the query word's typo budget
/// (OSA edits: 0 for words of 1–2 chars, 1 for 3–5, 2 for longer), or, for the
/// last query word (2 chars or more), a longer word whose beginning is within that
/// budget. `total` counts matching titles; titles that match nothing never appear.
/// Scores are the raw score over the best raw score the query could reach, × 100,
/// rounded to two decimals (an exact title scores 100.0).
pub fn rank(index: &RankIndex, query: &str, limit: usize) -> SearchResult {
    let folded = fold::fold(query);
    let mut words: Vec<QueryWord> = folded
        .split(' ')
        .filter(|w| !w.is_empty())
        .take(MAX_QUERY_WORDS)
        .map(|w| QueryWord {
            chars: w.chars().collect(),
            prefix: false,
        })
        .collect();
    if let Some(last) = words.last_mut() {
        last.prefix = true;
    }
    let m = words.len();
    if m == 0 || index.is_empty() {
        return SearchResult {
            rows: Vec::new(),
            total: 0,
            truncated: false,
        };
    }

    // Step 2: per query word, the lexicon words it matches. `slot[w]` indexes a
    // row of `qualities` (one quality per query word, 0 = no match) for each
    // lexicon word `w` that any query word matched.
    let lexicon = &index.lexicon;
    let mut slot = vec![u32::MAX; lexicon.len()];
    let mut qualities: Vec<f32> = Vec::new();
    let mut hits_per_word: Vec<Vec<WordHit>> = Vec::with_capacity(m);
    for (i, word) in words.iter().enumerate() {
        let mut hits = Vec::new();
        lookup(lexicon, word, &mut hits);
        for h in &hits {
            let s = &mut slot[h.word as usize];
            if *s == u32::MAX {
                *s = (qualities.len() / m) as u32;
                qualities.resize(qualities.len() + m, 0.0);
            }
            qualities[*s as usize * m + i] = h.quality;
        }
        // Best first, so the first time a title is reached for word `i` is its
        // best quality for that word.
        hits.sort_unstable_by(|a, b| b.quality.total_cmp(&a.quality).then(a.word.cmp(&b.word)));
        hits_per_word.push(hits);
    }

    // Step 3: first pass over postings.
    let mut matched = vec![0u32; index.len()];
    let mut quality_sum = vec![0f32; index.len()];
    let mut touched: Vec<u32> = Vec::new();
    for (i, hits) in hits_per_word.iter().enumerate() {
        let bit = 1u32 << i;
        for h in hits {
            for &t in index.postings(h.word) {
                let t = t as usize;
                if matched[t] & bit == 0 {
                    if matched[t] == 0 {
                        touched.push(t as u32);
                    }
                    matched[t] |= bit;
                    quality_sum[t] += h.quality;
                }
            }
        }
    }
    let total = touched.len();

    // Step 4: exact scores in order of the upper bound, until none can enter.
    let mut bounded: Vec<(f32, u32)> = touched
        .iter()
        .map(|&t| {
            let title_words = index.titles[t as usize].words_len;
            let ub = score::upper_bound(
                quality_sum[t as usize],
                matched[t as usize].count_ones(),
                title_words,
            );
            (ub, t)
        })
        .collect();
    bounded.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));

    let max_raw = score::max_raw(m);
    let mut top: BinaryHeap<Ranked> = BinaryHeap::with_capacity(limit + 1);
    let mut occurrences: Vec<Occurrence> = Vec::new();
    let (mut prev_states, mut states) = (Vec::new(), Vec::new());
    for &(ub, t) in &bounded {
        if limit == 0 {
            break;
        }
        if top.len() == limit && top.peek().is_some_and(|worst| ub < worst.raw) {
            break;
        }
        occurrences.clear();
        for (position, &w) in index.words(t).iter().enumerate() {
            let s = slot[w as usize];
            if s == u32::MAX {
                continue;
            }
            for (i, &quality) in qualities[s as usize * m..][..m].iter().enumerate() {
                if quality > 0.0 {
                    occurrences.push(Occurrence {
                        query_word: i as u32,
                        position: position as u32,
                        quality,
                    });
                }
            }
        }
        occurrences.sort_unstable_by_key(|o| (o.query_word, o.position));
        let title = &index.titles[t as usize];
        let raw = score::align(&occurrences, &mut prev_states, &mut states)
            + score::coverage(title.words_len, matched[t as usize].count_ones());
        let ranked = Ranked {
            raw,
            title_words: title.words_len,
            page_id: title.page_id,
        };
        if top.len() < limit {
            top.push(ranked);
        } else if top.peek().is_some_and(|worst| ranked < *worst) {
            top.pop();
            top.push(ranked);
        }
    }

    let rows: Vec<ScoredRow> = top
        .into_sorted_vec()
        .into_iter()
        .map(|r| ScoredRow {
            page_id: r.page_id,
            // Two decimals: float sums in a different order would otherwise show a
            // perfect match as 99.99999. Rank order comes from the unrounded score.
            score: ((10_000.0 * r.raw / max_raw).round() / 100.0).clamp(0.0, 100.0),
        })
        .collect();
    let truncated = total > rows.len();
    SearchResult {
        rows,
        total,
        truncated,
    }
}

/// A scored title; ordered so that *better* compares *less* (rank order), which
/// makes the `BinaryHeap` a max-heap of the worst kept row.
#[derive(Debug, Clone, Copy)]
struct Ranked {
    raw: f32,
    title_words: u32,
    page_id: i64,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .raw
            .total_cmp(&self.raw)
            .then(self.title_words.cmp(&other.title_words))
            .then(self.page_id.cmp(&other.page_id))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::normalize::normalize;

    fn corpus(titles: &[&str]) -> RankIndex {
        RankIndex::build(titles.iter().enumerate().map(|(i, t)| (i as i64 + 1, *t)))
    }

    fn ids(index: &RankIndex, query: &str) -> Vec<i64> {
        rank(index, &normalize(query), 50)
            .rows
            .iter()
            .map(|r| r.page_id)
            .collect()
    }

    const TITLES: &[&str] = &[
        "Kubernetes deployment guide",   // 1
        "Kubernetes operators in depth", // 2
        "Deploying a static site",       // 3
        "X cursor management library",   // 4
        "Tool to query DNSBL servers",   // 5
        "Rest API client for NodeJS",    // 6
        "Video mode extension library",  // 7
        "Café crème recipes",            // 8
        "हिन्दी व्याकरण",                  // 9
        "Guide to cooking",              // 10
    ];

    #[test]
    fn a_misspelled_word_finds_the_intended_title_first() {
        let index = corpus(TITLES);
        assert_eq!(ids(&index, "kubrenetes")[..2], [1, 2]);
        assert_eq!(ids(&index, "kubrenetes deploymnet")[0], 1);
        assert_eq!(ids(&index, "query dnsbl sdervers")[0], 5);
    }

    #[test]
    fn a_swap_of_two_adjacent_letters_costs_one_edit() {
        let index = corpus(TITLES);
        // "mdoe" is two Levenshtein edits from "mode" but one OSA edit, within the
        // budget of a four-letter word.
        assert_eq!(ids(&index, "vdieo mdoe"), [7]);
    }

    #[test]
    fn the_last_word_matches_as_a_prefix() {
        let index = corpus(TITLES);
        assert_eq!(ids(&index, "cursor managem")[0], 4);
        assert_eq!(ids(&index, "kubernetes dep")[0], 1);
        // Only the last word is a prefix: in front, "managem" is a typo budget
        // away from nothing, so only "cursor" counts.
        let front = rank(&index, "managem cursor", 50);
        let back = rank(&index, "cursor managem", 50);
        assert_eq!(front.rows[0].page_id, 4);
        assert!(front.rows[0].score < back.rows[0].score);
    }

    #[test]
    fn word_order_is_not_required_but_rewarded() {
        let index = corpus(&["client for the rest api", "api rest client"]);
        let result = rank(&index, "rest api client", 50);
        assert_eq!(result.total, 2);
        assert_eq!(result.rows[0].page_id, 2);
    }

    #[test]
    fn ties_go_to_the_shorter_title_then_the_lower_page_id() {
        let index = RankIndex::build([
            (7, "alpha beta"),
            (5, "alpha gamma"),
            (3, "alpha gamma delta"),
        ]);
        let result = rank(&index, "alpha", 50);
        assert_eq!(
            result.rows.iter().map(|r| r.page_id).collect::<Vec<_>>(),
            [5, 7, 3]
        );
        assert_eq!(result.rows[0].score, result.rows[1].score);
    }

    #[test]
    fn case_and_accents_are_folded() {
        let index = corpus(TITLES);
        assert_eq!(ids(&index, "CAFE CREME"), [8]);
        assert_eq!(ids(&index, "café crème"), [8]);
        let index = corpus(&["cafe au lait"]);
        assert_eq!(ids(&index, "Café"), [1]);
    }

    #[test]
    fn a_devanagari_title_still_matches() {
        let index = corpus(TITLES);
        assert_eq!(ids(&index, "हिन्दी"), [9]);
        assert_eq!(ids(&index, "व्याकरण हिन्दी"), [9]);
    }

    #[test]
    fn an_empty_or_unmatched_query_gives_total_zero() {
        let index = corpus(TITLES);
        for q in ["", "zzqxj wvvq", "!!"] {
            let result = rank(&index, &normalize(q), 50);
            assert_eq!(
                result,
                SearchResult {
                    rows: vec![],
                    total: 0,
                    truncated: false
                }
            );
        }
        let empty = RankIndex::build(std::iter::empty());
        assert!(empty.is_empty());
        assert_eq!(rank(&empty, "kubernetes", 50).total, 0);
    }

    #[test]
    fn limit_truncates_rows_but_not_total() {
        let index = corpus(TITLES);
        let result = rank(&index, "library", 1);
        assert_eq!(result.total, 2);
        assert_eq!(result.rows.len(), 1);
        assert!(result.truncated);
        let none = rank(&index, "library", 0);
        assert_eq!((none.rows.len(), none.total, none.truncated), (0, 2, true));
    }

    #[test]
    fn exact_title_scores_100_and_ranks_first() {
        let index = corpus(TITLES);
        let result = rank(&index, &normalize("Guide to cooking"), 50);
        assert_eq!(result.rows[0].page_id, 10);
        assert_eq!(result.rows[0].score, 100.0);
        assert!(result.rows[1..].iter().all(|r| r.score < 100.0));
    }

    #[test]
    fn index_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<RankIndex>();
    }
}
