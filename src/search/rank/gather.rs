//! Steps 2 and 3 of a ranking: which lexicon words each query word matches, then
//! which titles contain them, with an upper bound of each title's score.

use super::index::RankIndex;
use super::lookup::{lookup, QueryWord, WordHit};

/// What the query words matched in the lexicon.
pub(super) struct WordMatches {
    /// Number of query words.
    pub m: usize,
    /// Lexicon word → row of `qualities`, or `u32::MAX` when no query word matched
    /// it (dense over the lexicon: one array read per title word when scoring).
    pub slot: Vec<u32>,
    /// `m` qualities per matched lexicon word, one per query word (0 = no match).
    pub qualities: Vec<f32>,
    /// Per query word, its hits, best quality first.
    pub hits: Vec<Vec<WordHit>>,
}

impl WordMatches {
    /// Qualities of lexicon word `w` for each query word, if any matched it.
    pub fn of(&self, w: u32) -> Option<&[f32]> {
        let s = self.slot[w as usize];
        (s != u32::MAX).then(|| &self.qualities[s as usize * self.m..][..self.m])
    }
}

/// Looks every query word up in the lexicon (a repeated word only once).
pub(super) fn match_words(index: &RankIndex, words: &[QueryWord]) -> WordMatches {
    let m = words.len();
    let lexicon = &index.lexicon;
    let mut out = WordMatches {
        m,
        slot: vec![u32::MAX; lexicon.len()],
        qualities: Vec::new(),
        hits: Vec::with_capacity(m),
    };
    for (i, word) in words.iter().enumerate() {
        let earlier = words[..i]
            .iter()
            .position(|w| w.chars == word.chars && w.prefix == word.prefix);
        let mut hits = match earlier {
            Some(e) => out.hits[e].clone(),
            None => {
                let mut hits = Vec::new();
                lookup(lexicon, word, &mut hits);
                hits
            }
        };
        for h in &hits {
            let s = &mut out.slot[h.word as usize];
            if *s == u32::MAX {
                *s = (out.qualities.len() / m) as u32;
                out.qualities.resize(out.qualities.len() + m, 0.0);
            }
            out.qualities[*s as usize * m + i] = h.quality;
        }
        // Best first, so that the first pass meets each title's best quality for
        // this word first and can ignore the rest.
        hits.sort_unstable_by(|a, b| b.quality.total_cmp(&a.quality).then(a.word.cmp(&b.word)));
        out.hits.push(hits);
    }
    out
}

/// What the first pass learnt about one title.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Tally {
    /// Bit set of the query words the title matches.
    pub matched: u32,
    /// Sum over matched query words of their best quality in this title.
    pub quality_sum: f32,
}

/// Titles reached through the postings of matched words.
pub(super) struct Candidates {
    /// Per title (dense, indexed like `RankIndex::titles`); one struct so that a
    /// candidate costs one cache line, not two.
    pub tallies: Vec<Tally>,
    /// Titles with at least one match, in the order first reached.
    pub touched: Vec<u32>,
}

/// One pass over the postings of every hit: cost proportional to the number of
/// (title, matched word) pairs, independent of title lengths.
pub(super) fn first_pass(index: &RankIndex, matches: &WordMatches) -> Candidates {
    let mut out = Candidates {
        tallies: vec![Tally::default(); index.len()],
        touched: Vec::new(),
    };
    for (i, hits) in matches.hits.iter().enumerate() {
        let bit = 1u32 << i;
        for h in hits {
            for &t in index.postings(h.word) {
                let tally = &mut out.tallies[t as usize];
                if tally.matched & bit == 0 {
                    if tally.matched == 0 {
                        out.touched.push(t);
                    }
                    tally.matched |= bit;
                    tally.quality_sum += h.quality;
                }
            }
        }
    }
    out
}
