//! Steps 2 and 3 of a ranking: which lexicon words each query word matches
//! (alone, joined with its neighbour, or cut in two), then which titles contain
//! them, with each query word's rarity weight and an upper bound of each title's
//! score.

use super::compound::{join_cuts, split_hits, PartPositions};
use super::index::RankIndex;
use super::lookup::{lookup, QueryWord, WordHit};
use super::score::weight;

/// One looked-up word: a query word, two adjacent query words joined (a split),
/// or one part of a query word cut in two (a join).
pub(super) struct Column {
    pub word: QueryWord,
    pub hits: Vec<WordHit>,
}

/// A query word read as two title words (see `compound`): the columns holding
/// its head's and its tail's hits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Join {
    pub query_word: usize,
    pub head_col: usize,
    pub tail_col: usize,
    pub head_len: usize,
    pub tail_len: usize,
}

/// What the query words matched in the lexicon.
pub(super) struct WordMatches {
    /// Number of query words.
    pub m: usize,
    /// `columns[i]` for query word `i < m`; `columns[m + i]` for query words `i`
    /// and `i + 1` joined (`i < m - 1`); then a head and a tail column per join.
    pub columns: Vec<Column>,
    pub joins: Vec<Join>,
    /// Lexicon word → row of `qualities`, or `u32::MAX` when no column matched it
    /// (dense over the lexicon: one array read per title word when scoring).
    slot: Vec<u32>,
    /// `columns.len()` qualities per matched lexicon word (0 = no match).
    qualities: Vec<f32>,
}

impl WordMatches {
    /// Qualities of lexicon word `w` for each column, if any matched it.
    pub fn row(&self, w: u32) -> Option<&[f32]> {
        let s = self.slot[w as usize];
        let width = self.columns.len();
        (s != u32::MAX).then(|| &self.qualities[s as usize * width..][..width])
    }

    /// Column of query words `i` and `i + 1` joined.
    pub fn split_col(&self, i: usize) -> usize {
        self.m + i
    }

    /// Head and tail positions of `join` in a title's `words`, into `parts`.
    pub fn find_parts(&self, words: &[u32], join: &Join, parts: &mut PartPositions) {
        parts.clear();
        for (p, &w) in words.iter().enumerate() {
            if let Some(row) = self.row(w) {
                if row[join.head_col] > 0.0 {
                    parts.heads.push(p as u32);
                }
                if row[join.tail_col] > 0.0 {
                    parts.tails.push((p as u32, row[join.tail_col]));
                }
            }
        }
    }
}

/// Looks every query word up in the lexicon (a repeated word only once), then
/// every adjacent pair joined, then every way to cut a word in two.
pub(super) fn match_words(index: &RankIndex, words: &[QueryWord]) -> WordMatches {
    let m = words.len();
    let lexicon = &index.lexicon;
    let mut columns: Vec<Column> = Vec::with_capacity(2 * m);
    for (i, word) in words.iter().enumerate() {
        let hits = match words[..i].iter().position(|w| w == word) {
            Some(e) => columns[e].hits.clone(),
            None => {
                let mut hits = Vec::new();
                lookup(lexicon, word, &mut hits);
                hits
            }
        };
        columns.push(Column {
            word: word.clone(),
            hits,
        });
    }
    for pair in words.windows(2) {
        let hits = split_hits(lexicon, &pair[0], &pair[1]);
        let mut joined = pair[0].clone();
        joined.chars.extend_from_slice(&pair[1].chars);
        joined.prefix = pair[1].prefix;
        columns.push(Column { word: joined, hits });
    }
    let mut joins = Vec::new();
    for (i, word) in words.iter().enumerate() {
        for cut in join_cuts(lexicon, word) {
            joins.push(Join {
                query_word: i,
                head_col: columns.len(),
                tail_col: columns.len() + 1,
                head_len: cut.head.chars.len(),
                tail_len: cut.tail.chars.len(),
            });
            columns.push(Column {
                word: cut.head,
                hits: vec![WordHit {
                    word: cut.head_word,
                    quality: 1.0,
                    edits: 0,
                }],
            });
            columns.push(Column {
                word: cut.tail,
                hits: cut.tail_hits,
            });
        }
    }

    let width = columns.len();
    let mut slot = vec![u32::MAX; lexicon.len()];
    let mut qualities: Vec<f32> = Vec::new();
    for (c, column) in columns.iter().enumerate() {
        for h in &column.hits {
            let s = &mut slot[h.word as usize];
            if *s == u32::MAX {
                *s = (qualities.len() / width) as u32;
                qualities.resize(qualities.len() + width, 0.0);
            }
            let q = &mut qualities[*s as usize * width + c];
            *q = q.max(h.quality);
        }
    }
    WordMatches {
        m,
        columns,
        joins,
        slot,
        qualities,
    }
}

/// What the first pass learnt about one title.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Tally {
    /// Bit set of the query words the title matches.
    pub matched: u32,
    /// Sum over matched query words of their weight times their best quality in
    /// this title.
    pub quality_sum: f32,
}

/// Titles reached through the postings of matched words.
pub(super) struct Candidates {
    /// Per title (dense, indexed like `RankIndex::titles`); one struct so that a
    /// candidate costs one cache line, not two.
    pub tallies: Vec<Tally>,
    /// Titles with at least one match, in the order first reached.
    pub touched: Vec<u32>,
    /// Per query word, its rarity weight (see `score::weight`).
    pub weights: Vec<f32>,
}

/// One pass over the postings of every hit: cost proportional to the number of
/// (title, matched word) pairs, plus the words of the titles holding a join's
/// rarer part. A query word's weight comes from how many titles it matched.
pub(super) fn first_pass(index: &RankIndex, matches: &WordMatches) -> Candidates {
    let m = matches.m;
    let mut best = vec![0.0f32; index.slot_count()];
    let mut parts = PartPositions::default();
    let mut per_word: Vec<Vec<(u32, f32)>> = Vec::with_capacity(m);
    for i in 0..m {
        let mut reached: Vec<u32> = Vec::new();
        let mut offer = |t: u32, q: f32, best: &mut [f32]| {
            let b = &mut best[t as usize];
            if *b < q {
                if *b == 0.0 {
                    reached.push(t);
                }
                *b = q;
            }
        };
        let cols = [
            Some(i),
            i.checked_sub(1).map(|j| matches.split_col(j)),
            (i + 1 < m).then(|| matches.split_col(i)),
        ];
        for c in cols.into_iter().flatten() {
            for h in &matches.columns[c].hits {
                for block in index.postings(h.word) {
                    for &t in block {
                        offer(t, h.quality, &mut best);
                    }
                }
            }
        }
        for join in matches.joins.iter().filter(|j| j.query_word == i) {
            // Visit the titles of the rarer part; each is checked for both.
            let head = &matches.columns[join.head_col].hits;
            let tail = &matches.columns[join.tail_col].hits;
            let postings_of = |hits: &[WordHit]| -> usize {
                hits.iter().map(|h| index.titles_with(h.word)).sum()
            };
            let side = if postings_of(head) <= postings_of(tail) {
                head
            } else {
                tail
            };
            for h in side {
                for &t in index.postings(h.word).flatten() {
                    matches.find_parts(index.words(t), join, &mut parts);
                    let mut top = 0.0f32;
                    parts.best_pairs(join.head_len, join.tail_len, |_, _, q| top = top.max(q));
                    if top > 0.0 {
                        offer(t, top, &mut best);
                    }
                }
            }
        }
        per_word.push(
            reached
                .into_iter()
                .map(|t| (t, std::mem::take(&mut best[t as usize])))
                .collect(),
        );
    }

    let live = index.live_len();
    let weights: Vec<f32> = per_word.iter().map(|e| weight(e.len(), live)).collect();
    drop(best);
    let mut tallies = vec![Tally::default(); index.slot_count()];
    let mut touched = Vec::new();
    for (i, entries) in per_word.iter().enumerate() {
        let bit = 1u32 << i;
        for &(t, q) in entries {
            let tally = &mut tallies[t as usize];
            if tally.matched == 0 {
                touched.push(t);
            }
            tally.matched |= bit;
            tally.quality_sum += weights[i] * q;
        }
    }
    Candidates {
        tallies,
        touched,
        weights,
    }
}
