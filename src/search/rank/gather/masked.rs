//! The candidates of a ranking restricted to the titles holding every
//! required query word (see `select::required_words`): their tallies kept by
//! place among those titles, in a dense array, rather than by slot.

use super::super::compound::PartPositions;
use super::super::index::RankIndex;
use super::super::postings::DenseSet;
use super::{other_words, reach, Scratch, WordMatches, WordSets};

/// [`super::accumulate`] restricted to the masked titles, whose tallies are kept in
/// `scratch.masked` (the same tallies, by place rather than by slot).
pub(super) fn accumulate_masked(
    index: &RankIndex,
    matches: &WordMatches,
    sets: &WordSets,
    words: &[usize],
    scratch: &mut Scratch,
) {
    let mut parts = PartPositions::default();
    let Scratch {
        mask,
        mask_ranks,
        masked,
        masked_best,
        marks,
        joined,
        ..
    } = scratch;
    for &i in words {
        masked_best.clear();
        masked_best.resize(masked.len(), 0.0);
        // A common word's set is read at each masked title instead, when
        // there are fewer of those than titles it is in (`for the …` at
        // 1.1M: 77,000 masked titles, `the` in 142,000).
        let mut dense: Vec<(&DenseSet, f32)> = Vec::new();
        let fewer = masked.len();
        let take = |d, q, titles| {
            let taken = fewer < titles;
            if taken {
                dense.push((d, q));
            }
            taken
        };
        reach(
            index,
            matches,
            i,
            &mut parts,
            marks,
            joined,
            take,
            |t, q, _| {
                if let Some(k) = masked_place(mask, mask_ranks, t) {
                    let b = &mut masked_best[k];
                    *b = b.max(q);
                }
            },
        );
        for (d, q) in dense {
            for ((t, _), b) in masked.iter().zip(masked_best.iter_mut()) {
                if d.contains(*t) {
                    *b = b.max(q);
                }
            }
        }
        let (bit, w) = (1u32 << i, sets.weights[i]);
        for ((_, tally), &q) in masked.iter_mut().zip(masked_best.iter()) {
            if q > 0.0 {
                tally.matched |= bit;
                tally.quality_sum += w * q;
            }
        }
    }
    let others = other_words(matches, words);
    if others.is_empty() {
        return;
    }
    let mut masked = std::mem::take(&mut scratch.masked);
    for (t, tally) in masked.iter_mut().filter(|(_, tally)| tally.matched != 0) {
        scratch.add_other_words(*t, tally, &others, sets);
    }
    scratch.masked = masked;
}

/// The place of title `t` among the titles of `mask` (whose per-u64 ranks
/// are `ranks`), if it has `t`.
#[inline]
fn masked_place(mask: &[u64], ranks: &[u32], t: u32) -> Option<usize> {
    let (k, b) = (t as usize >> 6, t & 63);
    let word = mask[k];
    (word >> b & 1 == 1)
        .then(|| ranks[k] as usize + (word & ((1u64 << b) - 1)).count_ones() as usize)
}
