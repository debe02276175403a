//! Query word → lexicon words: which distinct corpus words a query word matches,
//! and how well (a quality in `0.0..=1.0`, 1.0 = the same word).
//!
//! Each query word is compared once with each plausible distinct word (never once
//! per title), using rapidfuzz's cached OSA comparator: OSA counts an adjacent
//! transposition (`mdoe` → `mode`) as one edit, where Levenshtein counts two, and
//! transpositions are the most common typo in short words.

use rapidfuzz::distance::osa;

use super::index::{char_mask, Lexicon};

/// Edits allowed for a query word of `len` chars: none up to 2 chars (a one-edit
/// neighbourhood of `to` is half the dictionary), one up to 5, two beyond.
pub(super) fn typo_budget(len: usize) -> usize {
    match len {
        0..=2 => 0,
        3..=5 => 1,
        _ => 2,
    }
}

/// The last query word may be unfinished (search-as-you-type): it also matches
/// longer words it is a prefix of, but only from this many chars on, since a
/// one-char prefix matches a twenty-sixth of the corpus.
const MIN_PREFIX_LEN: usize = 2;

/// Quality lost per edit, relative to word length: one typo in a 4-char word
/// costs 0.15, in a 10-char word 0.06 — always less than not matching at all.
const TYPO_COST: f32 = 0.6;

/// A completed prefix is worth between this and 1.0 depending on how much of
/// the word was typed; it stays below an exact whole-word match.
const PREFIX_FLOOR: f32 = 0.9;

/// One query word, folded, with its matching rules.
#[derive(Debug)]
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
}

fn full_quality(edits: usize, len: usize) -> f32 {
    1.0 - TYPO_COST * edits as f32 / len as f32
}

fn prefix_quality(edits: usize, len: usize, word_len: usize) -> f32 {
    let typed = (len as f32 / word_len as f32).min(1.0);
    full_quality(edits, len) * (PREFIX_FLOOR + (1.0 - PREFIX_FLOOR) * typed)
}

/// Appends to `out` every lexicon word that `query` matches, at most once each,
/// with its best quality (whole word within the typo budget, or for a prefix
/// word, some prefix of the lexicon word within the budget).
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
            out.push(WordHit { word, quality: 1.0 });
        }
        if prefix {
            let from = out.len();
            let mut ids = Vec::new();
            lexicon.with_prefix(q, &mut ids);
            out.extend(ids.into_iter().map(|word| WordHit {
                word,
                quality: prefix_quality(0, len, lexicon.word(word).len()),
            }));
            debug_assert!(out[from..].iter().all(|h| h.quality < 1.0));
        }
        return;
    }

    let comparator = osa::BatchComparator::new(q.iter().copied());
    let args = osa::Args::default().score_cutoff(budget);
    let q_mask = char_mask(q);
    let longest = if prefix { usize::MAX } else { len + budget };
    for id in lexicon.ids_with_len(len - budget, longest) {
        let word = lexicon.word(id);
        let mut best: Option<f32> = None;
        if word.len() <= len + budget
            && (q_mask & !lexicon.masks[id as usize]).count_ones() as usize <= budget
        {
            if let Some(d) = comparator.distance_with_args(word.iter().copied(), &args) {
                best = Some(full_quality(d, len));
            }
        }
        if prefix && word.len() > len {
            // Compare with the word's heads of len ± budget chars; the cheap
            // signature filter on the longest head comes first.
            let head_max = (len + budget).min(word.len() - 1);
            if (q_mask & !char_mask(&word[..head_max])).count_ones() as usize <= budget {
                let edits = (len.saturating_sub(budget).max(1)..=head_max)
                    .filter_map(|j| comparator.distance_with_args(word[..j].iter().copied(), &args))
                    .min();
                if let Some(d) = edits {
                    let p = prefix_quality(d, len, word.len());
                    best = Some(best.map_or(p, |b| b.max(p)));
                }
            }
        }
        if let Some(quality) = best {
            out.push(WordHit { word: id, quality });
        }
    }
}
