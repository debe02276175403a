//! Query word → lexicon words: which distinct corpus words a query word matches,
//! and how well (a quality in `0.0..=1.0`, 1.0 = the same word).
//!
//! Each query word is compared once with each plausible distinct word (never once
//! per title), using rapidfuzz's cached OSA comparator: OSA counts an adjacent
//! transposition (`mdoe` → `mode`) as one edit, where Levenshtein counts two, and
//! transpositions are the most common typo in short words.

use rapidfuzz::distance::osa;

use super::lexicon::{char_mask, Lexicon, HEAD_CHARS};

/// Edits allowed for a query word of `len` chars: none up to 2 chars (a one-edit
/// neighbourhood of `to` is half the dictionary), one up to 5, two beyond.
pub(super) fn typo_budget(len: usize) -> usize {
    match len {
        0..=2 => 0,
        3..=5 => 1,
        _ => 2,
    }
}

/// Edits allowed between an unfinished last word and the start of a longer word:
/// fewer than for a whole word, because a short head with one typo starts a large
/// share of all words (`for` would match every word starting `fo`, `or`, `fr`...),
/// which costs time and buries the whole-word matches. One edit from 5 chars, two
/// from 9 (the thresholds Meilisearch uses).
pub(super) fn prefix_typo_budget(len: usize) -> usize {
    match len {
        0..=4 => 0,
        5..=8 => 1,
        _ => 2,
    }
}

/// The last query word may be unfinished (search-as-you-type): it also matches
/// longer words it is a prefix of, but only from this many chars on, since a
/// one-char prefix matches a twenty-sixth of the corpus.
pub(super) const MIN_PREFIX_LEN: usize = 2;

/// Quality lost per edit, relative to word length: a word with `d` edits keeps
/// `1 - d / len` (the share of it typed right), so one typo in a 4-char word
/// costs 0.25, in a 10-char word 0.1; within the budget that is always better
/// than not matching at all. (Costs from 0.6 to 1.5 measured within 0.005 MRR.)
const TYPO_COST: f32 = 1.0;

/// A completed prefix is worth between this and 1.0 depending on how much of
/// the word was typed; it stays below an exact whole-word match.
const PREFIX_FLOOR: f32 = 0.9;

/// One query word, folded, with its matching rules.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct QueryWord {
    pub chars: Vec<char>,
    /// Whether a longer corpus word that starts with this one matches too.
    pub prefix: bool,
}

/// A lexicon word matched by a query word.
#[derive(Debug, Clone, Copy)]
pub(super) struct WordHit {
    pub word: u32,
    pub quality: f32,
    /// OSA edits of the rule that gave `quality` (whole word or prefix head).
    pub edits: u8,
}

fn full_quality(edits: usize, len: usize) -> f32 {
    1.0 - TYPO_COST * edits as f32 / len as f32
}

pub(super) fn prefix_quality(edits: usize, len: usize, word_len: usize) -> f32 {
    let typed = (len as f32 / word_len as f32).min(1.0);
    full_quality(edits, len) * (PREFIX_FLOOR + (1.0 - PREFIX_FLOOR) * typed)
}

/// Appends to `out` every lexicon word that `query` matches, at most once each,
/// with its best quality (whole word within [`typo_budget`], or for a prefix
/// word, some head of the lexicon word within [`prefix_typo_budget`]).
pub(super) fn lookup(lexicon: &Lexicon, query: &QueryWord, out: &mut Vec<WordHit>) {
    let q = &query.chars[..];
    let len = q.len();
    if len == 0 {
        return;
    }
    let budget = typo_budget(len);
    let prefix = query.prefix && len >= MIN_PREFIX_LEN;

    if budget == 0 {
        // Exact only: binary searches, no scan.
        if let Some(word) = lexicon.find(q) {
            out.push(WordHit {
                word,
                quality: 1.0,
                edits: 0,
            });
        }
        if prefix {
            let from = out.len();
            let mut ids = Vec::new();
            lexicon.with_prefix(q, &mut ids);
            out.extend(ids.into_iter().map(|word| WordHit {
                word,
                quality: prefix_quality(0, len, lexicon.word(word).len()),
                edits: 0,
            }));
            debug_assert!(out[from..].iter().all(|h| h.quality < 1.0));
        }
        return;
    }

    let comparator = osa::BatchComparator::new(q.iter().copied());
    let args = osa::Args::default().score_cutoff(budget);
    let prefix_budget = prefix_typo_budget(len);
    let q_mask = char_mask(q);
    let lacks_at_most = |mask: u64, k: usize| at_most_bits(q_mask & !mask, k);
    // ... and each edit brings at most one char the query lacks into the word.
    let adds_at_most = |mask: u64, k: usize| at_most_bits(mask & !q_mask, k);
    let shortest_head = len.saturating_sub(prefix_budget).max(1);
    // A head must be typed exactly up to 4 chars: words longer than the whole
    // rule reaches are found by binary search, not compared one by one.
    let exact_heads = prefix && prefix_budget == 0;
    let longest = if prefix && !exact_heads {
        usize::MAX
    } else {
        len + budget
    };
    if exact_heads {
        let mut ids = Vec::new();
        lexicon.with_prefix_from(q, len + budget + 1, &mut ids);
        out.extend(ids.into_iter().map(|word| WordHit {
            word,
            quality: prefix_quality(0, len, lexicon.word(word).len()),
            edits: 0,
        }));
    }
    for (word_len, bucket) in lexicon.buckets(len - budget, longest) {
        let whole = word_len <= len + budget;
        let as_prefix = prefix && word_len > len;
        let head_max = if as_prefix {
            longest_head(len, prefix_budget, word_len)
        } else {
            0
        };
        for chunk in bucket.chunks() {
            for (k, &id) in chunk.ids.iter().enumerate() {
                let mut best: Option<(f32, usize)> = None;
                if whole
                    && lacks_at_most(chunk.masks[k], budget)
                    && adds_at_most(chunk.masks[k], budget)
                {
                    let word = chunk.word(k, word_len);
                    if let Some(d) = comparator.distance_with_args(word.iter().copied(), &args) {
                        best = Some((full_quality(d, len), d));
                    }
                }
                if as_prefix {
                    // The signature of the longest head tried must lack at most
                    // `prefix_budget` of the query's chars; the precomputed head
                    // signature is tried first.
                    let plausible = prefix_budget == 0
                        || if head_max <= HEAD_CHARS {
                            lacks_at_most(chunk.head_masks[k], prefix_budget)
                                && (head_max == HEAD_CHARS.min(word_len)
                                    || lacks_at_most(
                                        char_mask(&chunk.word(k, word_len)[..head_max]),
                                        prefix_budget,
                                    ))
                        } else {
                            lacks_at_most(
                                char_mask(&chunk.word(k, word_len)[..head_max]),
                                prefix_budget,
                            )
                        };
                    // Every head tried holds the shortest one's chars.
                    let plausible = plausible
                        && (prefix_budget == 0
                            || adds_at_most(
                                char_mask(&chunk.word(k, word_len)[..shortest_head]),
                                prefix_budget,
                            ));
                    let edits = plausible
                        .then(|| prefix_match(&comparator, q, chunk.word(k, word_len)))
                        .flatten();
                    if let Some((d, _)) = edits {
                        let p = prefix_quality(d, len, word_len);
                        if best.is_none_or(|(b, _)| p > b) {
                            best = Some((p, d));
                        }
                    }
                }
                if let Some((quality, edits)) = best {
                    out.push(WordHit {
                        word: id,
                        quality,
                        edits: edits as u8,
                    });
                }
            }
        }
    }
}

/// The prefix rule for one word longer than the query `q` (cached in
/// `comparator`): the fewest OSA edits, within [`prefix_typo_budget`], between `q`
/// and a head of `word` (a strict prefix of `len ± budget` chars), with the length
/// of that head in chars. On a tie the head whose length is nearest `q`'s wins,
/// then the shorter one. Used by [`lookup`] (edits) and by highlighting (head).
pub(super) fn prefix_match(
    comparator: &osa::BatchComparator<char>,
    q: &[char],
    word: &[char],
) -> Option<(usize, usize)> {
    let len = q.len();
    debug_assert!(word.len() > len);
    let budget = prefix_typo_budget(len);
    if budget == 0 {
        return (word[..len] == *q).then_some((0, len));
    }
    let head_max = longest_head(len, budget, word.len());
    prefix_edits(comparator, word, len, budget, head_max)
}

/// Longest head of a `word_len`-char word tried for a query of `len` chars.
fn longest_head(len: usize, budget: usize, word_len: usize) -> usize {
    (len + budget).min(word_len - 1)
}

/// Whether `bits` has at most `k` bits set. Clearing the lowest set bit `k` times
/// is cheaper than `count_ones` on the baseline x86-64 target, which has no
/// `popcnt` instruction and runs this once per lexicon word.
fn at_most_bits(mut bits: u64, k: usize) -> bool {
    for _ in 0..k {
        bits &= bits.wrapping_sub(1);
    }
    bits == 0
}

/// Fewest OSA edits between the query (cached in `comparator`) and a head of
/// `word` of `len - budget ..= head_max` chars, if within `budget`, with that
/// head's length (the first found on a tie). Heads are tried from length `len`
/// outwards, shorter first, and only while their length difference (a lower
/// bound of their distance) can still beat the best found.
fn prefix_edits(
    comparator: &osa::BatchComparator<char>,
    word: &[char],
    len: usize,
    budget: usize,
    head_max: usize,
) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    for offset in 0..=budget {
        if best.is_some_and(|(b, _)| b <= offset) {
            break;
        }
        let cutoff = best.map_or(budget, |(b, _)| b - 1);
        let args = osa::Args::default().score_cutoff(cutoff);
        let shorter = len.checked_sub(offset).filter(|&j| j >= 1);
        let longer = Some(len + offset).filter(|&j| offset > 0 && j <= head_max);
        for j in [shorter, longer].into_iter().flatten() {
            if let Some(d) = comparator.distance_with_args(word[..j].iter().copied(), &args) {
                if best.is_none_or(|(b, _)| d < b) {
                    best = Some((d, j));
                }
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::rank::RankIndex;
    use std::io::Read;

    /// [`lookup`]'s hits by comparing the query with every word of the
    /// lexicon, no filter: the reference.
    fn every_word(index: &RankIndex, query: &QueryWord) -> Vec<(u32, u32, u8)> {
        let q = &query.chars[..];
        let len = q.len();
        let budget = typo_budget(len);
        let prefix = query.prefix && len >= MIN_PREFIX_LEN;
        let comparator = osa::BatchComparator::new(q.iter().copied());
        let mut hits = Vec::new();
        for id in 0..index.lexicon.len() as u32 {
            let word = index.lexicon.word(id);
            if word.is_empty() {
                continue;
            }
            let mut best: Option<(f32, usize)> = None;
            if word.len().abs_diff(len) <= budget {
                let d = osa::distance(q.iter().copied(), word.iter().copied());
                if d <= budget {
                    best = Some((full_quality(d, len), d));
                }
            }
            if prefix && word.len() > len {
                if let Some((d, _)) = prefix_match(&comparator, q, word) {
                    let p = prefix_quality(d, len, word.len());
                    if best.is_none_or(|(b, _)| p > b) {
                        best = Some((p, d));
                    }
                }
            }
            if let Some((quality, edits)) = best {
                hits.push((id, quality.to_bits(), edits as u8));
            }
        }
        hits
    }

    /// Typos of `word`: a char dropped, doubled and replaced, two swapped.
    fn typos(word: &[char], seed: usize) -> Vec<Vec<char>> {
        let n = word.len();
        let k = seed % n;
        let mut out = vec![word.to_vec()];
        let mut w = word.to_vec();
        w.remove(k);
        out.push(w);
        let mut w = word.to_vec();
        w.insert(k, word[k]);
        out.push(w);
        let mut w = word.to_vec();
        w[k] = ['e', 'x', 'q', 'é'][seed % 4];
        out.push(w);
        if k + 1 < n {
            let mut w = word.to_vec();
            w.swap(k, k + 1);
            out.push(w);
        }
        out.retain(|w| !w.is_empty());
        out
    }

    #[test]
    fn the_filters_let_every_match_through() {
        // Real titles: the first 8,000 of the bundled demo corpus (Debian).
        let mut text = String::new();
        flate2::read::GzDecoder::new(crate::import::DEMO_CORPUS_GZ)
            .read_to_string(&mut text)
            .unwrap();
        let titles: Vec<String> = text
            .lines()
            .take(8_000)
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| Some(v.get("title")?.as_str()?.to_owned()))
            .collect();
        let index = RankIndex::build(
            titles
                .iter()
                .enumerate()
                .map(|(i, t)| (i as i64, t.as_str())),
        );
        let mut queries = 0;
        for (n, title) in titles.iter().enumerate().step_by(211) {
            let folded = super::super::fold::fold(&crate::search::normalize::normalize(title));
            for word in folded.split(' ').filter(|w| w.chars().count() >= 3) {
                let chars: Vec<char> = word.chars().collect();
                for typo in typos(&chars, n) {
                    for prefix in [false, true] {
                        let query = QueryWord {
                            chars: typo.clone(),
                            prefix,
                        };
                        let mut got = Vec::new();
                        lookup(&index.lexicon, &query, &mut got);
                        let mut got: Vec<(u32, u32, u8)> = got
                            .iter()
                            .map(|h| (h.word, h.quality.to_bits(), h.edits))
                            .collect();
                        got.sort_unstable();
                        let word: String = typo.iter().collect();
                        assert_eq!(got, every_word(&index, &query), "{word:?} prefix {prefix}");
                        queries += 1;
                    }
                }
            }
        }
        assert!(queries > 500, "{queries}");
    }
}
