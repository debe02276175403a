//! Scoring one title against the query, and the rank order.
//!
//! A title's raw score has three parts:
//!
//! * **match**: for each query word, the quality (`0..=1`) of the title word it is
//!   aligned with (0 when none matches), summed, times [`MATCH_WEIGHT`];
//! * **proximity**: for each pair of consecutive query words, [`ADJACENT`] when their
//!   title words are adjacent and in order, [`SWAPPED`] when adjacent but swapped,
//!   [`IN_ORDER`] when in order with words between — so the query's word order is
//!   rewarded but not required;
//! * **coverage**: `1 / (1 + title words left unmatched)`, times [`COVERAGE`], so an
//!   exact title outranks a longer one that merely contains the query.
//!
//! The weights keep the order "more query words found, then closer spelling, then
//! proximity, then coverage" for queries of up to four words: one matched word is
//! worth at least 0.6 (the worst quality within the typo budget), more than all
//! proximity and coverage credit together (0.12 per pair + 0.1). Beyond that a
//! title matching all words but scattered can lose to one that misses a word yet
//! has the others in order, which is what a searcher of a long phrase expects.
//! Relevance was flat (±0.005 MRR) for proximity and coverage weights from half to
//! double these, so they are round numbers rather than fitted ones.

/// Weight of one query word's match quality.
pub(super) const MATCH_WEIGHT: f32 = 1.0;
/// Proximity credit for a consecutive query-word pair found adjacent, in order.
pub(super) const ADJACENT: f32 = 0.12;
/// ... found adjacent but in swapped order.
pub(super) const SWAPPED: f32 = 0.06;
/// ... found in order with other words between.
pub(super) const IN_ORDER: f32 = 0.05;
/// Weight of title coverage.
pub(super) const COVERAGE: f32 = 0.1;

/// Coverage part for a title of `title_words` words of which `matched` query words
/// were found (an upper bound of how many title words are accounted for).
pub(super) fn coverage(title_words: u32, matched: u32) -> f32 {
    COVERAGE / (1 + title_words.saturating_sub(matched)) as f32
}

/// The highest raw score a query of `words` words can reach (used to map raw
/// scores to `0..=100`).
pub(super) fn max_raw(words: usize) -> f32 {
    MATCH_WEIGHT * words as f32 + ADJACENT * words.saturating_sub(1) as f32 + COVERAGE
}

/// Upper bound of the raw score of a title, from what the first pass knows:
/// the best quality per query word (`quality_sum`), how many matched, and the
/// title's length. The exact score differs only in proximity, which is at most
/// [`ADJACENT`] per pair of matched words.
pub(super) fn upper_bound(quality_sum: f32, matched: u32, title_words: u32) -> f32 {
    MATCH_WEIGHT * quality_sum
        + ADJACENT * matched.saturating_sub(1) as f32
        + coverage(title_words, matched)
}

/// Proximity credit for query word `i + 1` at title position `next` after query
/// word `i` at `prev`.
fn proximity(prev: u32, next: u32) -> f32 {
    if next == prev + 1 {
        ADJACENT
    } else if next + 1 == prev {
        SWAPPED
    } else if next > prev {
        IN_ORDER
    } else {
        0.0
    }
}

/// One place a query word matches in a title.
#[derive(Debug, Clone, Copy)]
pub(super) struct Occurrence {
    pub query_word: u32,
    pub position: u32,
    pub quality: f32,
}

/// Best match + proximity part of the raw score over all alignments of query
/// words to title positions. `occurrences` must be sorted by query word.
/// Dynamic programming along the query: the state is the position chosen for the
/// previous query word; a query word with no occurrence breaks the chain.
pub(super) fn align(
    occurrences: &[Occurrence],
    prev_states: &mut Vec<(u32, f32)>,
    states: &mut Vec<(u32, f32)>,
) -> f32 {
    prev_states.clear();
    let mut carried = 0.0f32; // best total when the chain was broken
    let mut last_word = None;
    let mut i = 0;
    while i < occurrences.len() {
        let word = occurrences[i].query_word;
        let end = i + occurrences[i..]
            .iter()
            .take_while(|o| o.query_word == word)
            .count();
        let chained = last_word.is_some_and(|w| w + 1 == word);
        if !chained {
            carried = prev_states.iter().map(|s| s.1).fold(carried, f32::max);
            prev_states.clear();
        }
        states.clear();
        for o in &occurrences[i..end] {
            let from_prev = prev_states
                .iter()
                .map(|&(p, s)| s + proximity(p, o.position))
                .fold(carried, f32::max);
            states.push((o.position, from_prev + MATCH_WEIGHT * o.quality));
        }
        std::mem::swap(prev_states, states);
        last_word = Some(word);
        i = end;
    }
    prev_states.iter().map(|s| s.1).fold(carried, f32::max)
}
