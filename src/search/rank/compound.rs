//! Words written together on one side and apart on the other.
//!
//! * A **split**: two adjacent query words that the title writes as one word
//!   (`frame work` → `framework`, `code mirror` → `CodeMirror`). The two query
//!   words are joined and looked up as one word, with the typo budget of the
//!   joined length but at most [`SPLIT_TYPO_BUDGET`] edits (and, when the second
//!   is the last query word, the prefix rule without typos).
//! * A **join**: one query word that the title writes as two words
//!   (`arcadegames` → `arcade games`, `processpool` → `process pool`). The query
//!   word is cut at every point where the head is a corpus word and the tail is a
//!   corpus word too (or, for the last query word, the beginning of some); a
//!   title matches when it holds the head and the tail at two different
//!   positions, best side by side and in order.
//!
//! Both are looked up by the lookup of plain words (`lookup`), and the
//! highlighter reuses these functions, so it marks exactly what the ranking
//! counted.

use super::lexicon::Lexicon;
use super::lookup::{
    lookup_within, prefix_quality, typo_budget, QueryWord, WordHit, MIN_PREFIX_LEN,
};

/// Parts of a join are at least this many chars (a one-letter head would read
/// `ajson` as `a json` and most words as some letter plus a word).
pub(super) const MIN_PART: usize = 2;

/// A join's quality when head and tail are adjacent and in order, times the
/// parts' own quality: below 1.0 so a title that has the query word itself,
/// written as one, still ranks first.
pub(super) const JOIN_ADJACENT: f32 = 0.95;

/// ... when they are apart or swapped (`typegenerator` → `type predicate
/// generator`): the words are there but may mean something else.
pub(super) const JOIN_APART: f32 = 0.7;

/// A split's quality relative to the same words written apart: a title that
/// has the query's words as typed ranks first.
pub(super) const SPLIT: f32 = 0.97;

/// Extra quality lost per edit in a split, relative to the joined length: the
/// lookup charges an edit over the joined word's length, but the typo sits in
/// one of the shorter query words, where it costs more.
pub(super) const SPLIT_EXTRA_TYPO_COST: f32 = 1.0;

/// Most OSA edits between two query words joined (a split) and a whole lexicon
/// word; the unfinished last word's head rule allows none. The space typed
/// between them is already a reading of what was meant: with two edits over a
/// joined word of 9+ chars (`the mite` → `termite`, two edits from `themite`)
/// a split mostly found words no one meant, and that walk (with a head rule of
/// two edits) was a third of a slow miss's lexicon walk at 1.1M titles. On the
/// six relevance sets one query moved a rank (a `phonetic` one, 2nd → 3rd; its
/// new 2nd gained nothing from the split).
pub(super) const SPLIT_TYPO_BUDGET: usize = 1;

/// The lexicon words that two adjacent query words, `first` and `second`, match
/// when joined into one, within [`SPLIT_TYPO_BUDGET`] (whole word) or exactly
/// (as the head of a longer word, when `second` is unfinished). A hit whose
/// edits reach the length of the shorter part is left out: it would be the
/// longer part alone under a typo (`a json` → `ajson` is one edit from `json`),
/// which the plain lookup already counts.
pub(super) fn split_hits(lexicon: &Lexicon, first: &QueryWord, second: &QueryWord) -> Vec<WordHit> {
    let joined = QueryWord {
        chars: first.chars.iter().chain(&second.chars).copied().collect(),
        prefix: second.prefix,
    };
    let shorter = first.chars.len().min(second.chars.len());
    let n = joined.chars.len();
    let budget = typo_budget(n).min(SPLIT_TYPO_BUDGET);
    let mut hits = Vec::new();
    lookup_within(lexicon, &joined, budget, 0, &mut hits);
    hits.retain(|h| usize::from(h.edits) < shorter);
    for h in &mut hits {
        h.quality = (h.quality - SPLIT_EXTRA_TYPO_COST * f32::from(h.edits) / n as f32) * SPLIT;
    }
    hits
}

/// One way to read a query word as two title words.
#[derive(Debug, Clone)]
pub(super) struct JoinCut {
    pub head: QueryWord,
    /// The head's lexicon word (always an exact match, quality 1.0).
    pub head_word: u32,
    pub tail: QueryWord,
    /// Exact matches of the tail, or for a prefix word also the longer words it
    /// begins (quality below 1.0, see `lookup`).
    pub tail_hits: Vec<WordHit>,
}

/// Every cut of `word` into a head and a tail of at least [`MIN_PART`] chars
/// where the head is a corpus word and the tail is one (or begins one, when
/// `word` is the unfinished last word), shortest head first.
pub(super) fn join_cuts(lexicon: &Lexicon, word: &QueryWord) -> Vec<JoinCut> {
    let chars = &word.chars;
    let mut out = Vec::new();
    if chars.len() < 2 * MIN_PART {
        return out;
    }
    for k in MIN_PART..=chars.len() - MIN_PART {
        let Some(head_word) = lexicon.find(&chars[..k]) else {
            continue;
        };
        let tail = &chars[k..];
        let mut tail_hits = Vec::new();
        if let Some(w) = lexicon.find(tail) {
            tail_hits.push(WordHit {
                word: w,
                quality: 1.0,
                edits: 0,
            });
        }
        if word.prefix && tail.len() >= MIN_PREFIX_LEN {
            let mut ids = Vec::new();
            lexicon.with_prefix(tail, &mut ids);
            tail_hits.extend(ids.into_iter().map(|w| WordHit {
                word: w,
                quality: prefix_quality(0, tail.len(), lexicon.word(w).len()),
                edits: 0,
            }));
        }
        if tail_hits.is_empty() {
            continue;
        }
        out.push(JoinCut {
            head: QueryWord {
                chars: chars[..k].to_vec(),
                prefix: false,
            },
            head_word,
            tail: QueryWord {
                chars: tail.to_vec(),
                prefix: word.prefix,
            },
            tail_hits,
        });
    }
    out
}

/// Quality of a join whose tail matched with `tail_quality`: the parts'
/// qualities weighted by their lengths, times [`JOIN_ADJACENT`] or
/// [`JOIN_APART`].
pub(super) fn join_quality(
    head_len: usize,
    tail_len: usize,
    tail_quality: f32,
    adjacent: bool,
) -> f32 {
    let parts = (head_len as f32 + tail_len as f32 * tail_quality) / (head_len + tail_len) as f32;
    parts * if adjacent { JOIN_ADJACENT } else { JOIN_APART }
}

/// Head and tail positions found in one title, in title order (reused buffers).
#[derive(Debug, Default)]
pub(super) struct PartPositions {
    pub heads: Vec<u32>,
    /// `(position, tail quality)`.
    pub tails: Vec<(u32, f32)>,
}

impl PartPositions {
    pub fn clear(&mut self) {
        self.heads.clear();
        self.tails.clear();
    }

    /// Notes the title word at `position`, whose qualities are `row`, as a
    /// head and/or a tail of `join`.
    #[inline]
    pub fn push(&mut self, position: u32, row: &[f32], join: &super::gather::Join) {
        if row[join.head_col] > 0.0 {
            self.heads.push(position);
        }
        if row[join.tail_col] > 0.0 {
            self.tails.push((position, row[join.tail_col]));
        }
    }

    /// For each head position, the tail position (another one) giving the best
    /// [`join_quality`], first found on a tie: `visit(head, tail, quality)`.
    /// Nothing when the title lacks either part.
    pub fn best_pairs(
        &self,
        head_len: usize,
        tail_len: usize,
        mut visit: impl FnMut(u32, u32, f32),
    ) {
        for &h in &self.heads {
            let mut best: Option<(u32, f32)> = None;
            for &(t, q) in &self.tails {
                if t == h {
                    continue;
                }
                let jq = join_quality(head_len, tail_len, q, t == h + 1);
                if best.is_none_or(|(_, b)| jq > b) {
                    best = Some((t, jq));
                }
            }
            if let Some((t, q)) = best {
                visit(h, t, q);
            }
        }
    }
}
