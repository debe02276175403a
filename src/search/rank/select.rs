//! Step 4 of a ranking: exact scores for as few titles as the top rows need.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::compound::PartPositions;
use super::gather::{accumulate, Restriction, Scratch, WordMatches, WordSets};
use super::index::RankIndex;
use super::score::{self, AlignScratch, Unit};

/// A scored title. Ordered so that *better* compares *less* (rank order: higher
/// raw score, then fewer title words, then lower page id).
#[derive(Debug, Clone, Copy)]
pub(super) struct Ranked {
    pub raw: f32,
    pub title_words: u32,
    pub page_id: i64,
}

impl Ranked {
    /// The row as a result shows it, for a query whose best reachable raw score
    /// is `max_raw`.
    pub fn shown(self, max_raw: f32) -> super::ScoredRow {
        super::ScoredRow {
            page_id: self.page_id,
            // Two decimals: float sums in another order would otherwise show a
            // perfect match as 99.99999. Rank order comes from the unrounded score.
            score: ((10_000.0 * self.raw / max_raw).round() / 100.0).clamp(0.0, 100.0),
            raw: self.raw,
            title_words: self.title_words,
        }
    }

    /// The rank order key of a row of a result.
    pub fn of(row: &super::ScoredRow) -> Self {
        Ranked {
            raw: row.raw,
            title_words: row.title_words,
            page_id: row.page_id,
        }
    }
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

/// The best `limit` titles in rank order: the same rows as scoring every title
/// that matches, for less.
///
/// Query words are taken heaviest (rarest) first. The titles of the first few,
/// enough to fill `limit` rows, are scored (see [`score_candidates`]); the
/// `limit`-th score so far is a floor of the final one. The lightest query
/// words whose best possible score together (every one of them found exactly,
/// side by side, nothing else in the title) stays below that floor cannot put
/// a title into the rows on their own, so only titles that match another word
/// are candidates: `for` (in 460,000 of a million titles) is then only looked
/// up in the candidates' word sets, not walked. Every title is scored when no
/// word can be left out that way (or `limit` is unbounded). Before any of
/// that, titles that lack a required word, or are too long to enter on the
/// words they reach (see [`restriction`]), are no candidates at all.
pub(super) fn top_rows(
    index: &RankIndex,
    matches: &WordMatches,
    sets: &WordSets,
    limit: usize,
    scratch: &mut Scratch,
) -> Vec<Ranked> {
    if limit == 0 {
        scratch.release();
        return Vec::new();
    }
    let m = matches.m;
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| sets.weights[b].total_cmp(&sets.weights[a]).then(a.cmp(&b)));
    let restriction = restriction(index, matches, sets, scratch, &order, limit);
    scratch.restrict_to(&restriction, index);
    let (mut first, mut reach) = (0, 0usize);
    while first < m && reach < limit {
        reach = reach.saturating_add(sets.df[order[first]]);
        first += 1;
    }
    accumulate(index, matches, sets, &order[..first], scratch);
    let top = score_candidates(index, matches, sets, scratch, limit);
    let floor = top.threshold();
    // The lightest words, as long as all of them together cannot reach the floor.
    let (mut left_out, mut weight_sum, mut bits) = (0, 0.0f32, 0u32);
    for &j in order[first..].iter().rev() {
        let (sum, with) = (weight_sum + sets.weights[j], bits | 1 << j);
        if score::upper_bound(sum, with, with.count_ones()) >= floor {
            break;
        }
        (left_out, weight_sum, bits) = (left_out + 1, sum, with);
    }
    let top = if first + left_out == m {
        top
    } else {
        scratch.clear_tallies();
        accumulate(index, matches, sets, &order[..m - left_out], scratch);
        score_candidates(index, matches, sets, scratch, limit)
    };
    scratch.release();
    top.heap.into_sorted_vec()
}

/// The titles that can still be among the top `limit` rows, as far as a
/// few passes over the query words' bit sets tell: which query words are
/// required, which are set aside, and how long a title may be.
///
/// Take heaviest first the query words that at least `limit` titles all
/// hold exactly (a word is skipped when too few titles hold it as well):
/// each such title scores at least those words' weights together
/// (proximity and coverage only add), so the `limit`-th row scores that
/// much too. Set aside some of the other words, the rarest: a title that
/// reaches none of them scores at most the rest of the query. A held word
/// is required when a title without it (and without the words set aside)
/// cannot reach that even with every other word found exactly, side by
/// side, and nothing else in the title ([`score::upper_bound`]). Of the ways
/// to set words aside (none, the rarest, the two rarest, ...), the one that
/// leaves the fewest candidates is taken. `for the …` at 1.1M titles: `for`
/// and `the` are both required, so the candidates are the titles holding
/// both rather than every title of `the` and its typos (148,000); with a
/// third word that matched two titles (`for the z10q`), that word is set
/// aside and its two titles are candidates too. Then [`length_cap`]. Costs
/// a pass over the query words' bit sets per word tried.
fn restriction(
    index: &RankIndex,
    matches: &WordMatches,
    sets: &WordSets,
    scratch: &Scratch,
    order: &[usize],
    limit: usize,
) -> Restriction {
    let weight = |words: u32| weight_of(sets, words);
    let live: Vec<usize> = order.iter().copied().filter(|&i| sets.df[i] > 0).collect();
    let held = scratch.held_words(&live, limit);
    if held == 0 {
        return Restriction::default();
    }
    // Coverage adds at least COVERAGE / 256 (lengths saturate at 255), far
    // more than the rounding of a sum in another order.
    let floor = score::MATCH_WEIGHT * weight(held);
    let all = live.iter().fold(0u32, |acc, &i| acc | 1 << i);
    let required = |aside: u32| {
        (0..matches.m)
            .filter(|&j| held >> j & 1 == 1)
            .filter(|j| {
                let without = all & !aside & !(1 << j);
                score::upper_bound(weight(without), without, without.count_ones()) < floor
            })
            .fold(0, |acc, j| acc | 1 << j)
    };
    let mut others: Vec<usize> = live
        .iter()
        .copied()
        .filter(|&i| held >> i & 1 == 0)
        .collect();
    others.sort_by_key(|&i| (sets.df[i], i));
    let (mut best, mut fewest) = (Restriction::default(), usize::MAX);
    let (mut aside, mut aside_titles) = (0u32, 0usize);
    for k in 0..=others.len() {
        if k > 0 {
            aside |= 1 << others[k - 1];
            aside_titles = aside_titles.saturating_add(sets.df[others[k - 1]]);
        }
        if aside_titles >= fewest {
            break;
        }
        let needed = required(aside);
        if needed == 0 {
            continue;
        }
        let candidates = scratch.in_all(needed).saturating_add(aside_titles);
        if candidates < fewest {
            best = Restriction {
                required: needed,
                reaching: all & !aside,
                aside,
                max_len: None,
            };
            fewest = candidates;
        }
    }
    if fewest == usize::MAX {
        // No word is required; a length cap still applies to the titles
        // that reach only held words.
        let aside = all & !held;
        best = Restriction {
            required: 0,
            reaching: held,
            aside,
            max_len: None,
        };
        fewest = sets.total;
    }
    if fewest > LENGTH_CAP_FROM.saturating_mul(limit) {
        best.max_len = length_cap(index, matches, sets, scratch, held, &best, limit);
    }
    best
}

/// The weights of the query words of `words` (a bit set) together.
fn weight_of(sets: &WordSets, words: u32) -> f32 {
    (0..sets.weights.len())
        .filter(|i| words >> i & 1 == 1)
        .map(|i| sets.weights[i])
        .sum()
}

/// [`restriction`] caps titles' length only when it would leave more than
/// this many times `limit` candidates without: the cap costs a pass over the
/// held words' titles and exact scores for `limit` of them.
const LENGTH_CAP_FROM: usize = 8;

/// Longest seed [`length_cap`] scores: when `limit` titles holding the held
/// words take longer ones, the cap (at least about as long) would leave out
/// few titles, and scoring the seeds of a long query costs more than it saves
/// (a 32-word query at 1.1M titles: seeds of up to 61 words, 2.6 ms, no cap).
const MAX_SEED_LEN: usize = 16;

/// The most words a title that reaches no word of `r.aside` can have and
/// still enter the top `limit` rows; `None` when any length can.
///
/// Why a title's length decides: a title that reaches only the query words
/// `r.reaching` scores at most their weights, the proximity of their pairs
/// and a coverage that falls with its length. So the `limit` shortest titles
/// holding every `held` word exactly (the seeds) are scored; the `limit`-th
/// of their scores is a floor of the final rows', and a title whose bound at
/// its length is below it cannot enter. `a` at 1.1M titles is in 272,000;
/// with `ubiquely abbreviate a` the rows are the 49 titles of the rare words
/// and the shortest of `a`'s (3 words at most), not all of them.
fn length_cap(
    index: &RankIndex,
    matches: &WordMatches,
    sets: &WordSets,
    scratch: &Scratch,
    held: u32,
    r: &Restriction,
    limit: usize,
) -> Option<u32> {
    // Four histograms, by a slot's place mod 4, so that the counts of titles
    // side by side do not wait on each other's increment.
    let mut by_len = [[0u32; 256]; 4];
    let mut buffer = [0u8; 64];
    scratch.each_exact_in_all(held, |k, mut bits| {
        let lens = index.title_lens_64(k, &mut buffer);
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            by_len[b & 3][usize::from(lens[b])] += 1;
            bits &= bits - 1;
        }
    });
    let by_len: Vec<usize> = (0..256)
        .map(|l| by_len.iter().map(|h| h[l] as usize).sum())
        .collect();
    let (mut seed_len, mut shorter) = (0usize, 0usize);
    while shorter + by_len[seed_len] < limit {
        shorter += by_len[seed_len];
        seed_len += 1;
    }
    if seed_len > MAX_SEED_LEN {
        return None;
    }
    let (mut seeds, mut at_seed_len) = (Vec::with_capacity(limit), limit - shorter);
    let all = u32::MAX >> (32 - matches.m);
    scratch.each_exact_in_all(held, |k, mut bits| {
        let lens = index.title_lens_64(k, &mut buffer);
        while bits != 0 {
            let b = bits.trailing_zeros();
            bits &= bits - 1;
            let len = usize::from(lens[b as usize]);
            if len < seed_len || (len == seed_len && at_seed_len > 0) {
                at_seed_len -= usize::from(len == seed_len);
                let t = (k as u32) << 6 | b;
                seeds.push(Bounded {
                    bound: 0.0,
                    t,
                    len: len as u16,
                    matched: scratch.words_reached(all, t) as u16,
                });
            }
        }
    });
    let mut scorer = TitleScorer::new(index, matches, &sets.weights);
    let mut top = TopRows::new(limit);
    scorer.offer_all(&seeds, &mut top, |_, _| true);
    let floor = top.threshold();
    let weight = weight_of(sets, r.reaching);
    let bound = |len: u32| score::upper_bound(weight, r.reaching, len);
    if bound(u8::MAX.into()) >= floor {
        return None;
    }
    // No length at all when even an empty title's bound misses the floor
    // (the seeds' scores came from words set aside).
    Some(
        (0..u8::MAX.into())
            .take_while(|&len| bound(len) >= floor)
            .last()
            .unwrap_or(0),
    )
}

/// The best `limit` of the candidates in `scratch` (every title with a tally),
/// scored exactly best upper bound first until no remaining bound can reach the
/// current top.
fn score_candidates(
    index: &RankIndex,
    matches: &WordMatches,
    sets: &WordSets,
    scratch: &Scratch,
    limit: usize,
) -> TopRows {
    let mut bounded: Vec<Bounded> = Vec::with_capacity(scratch.candidates_at_most());
    scratch.for_each_candidate(|t, tally| {
        let len = index.title_len(t);
        bounded.push(Bounded {
            bound: score::upper_bound(tally.quality_sum, tally.matched, len),
            t,
            // Both fit: a title length is saturated at 255, a query has
            // at most 32 words.
            len: len as u16,
            matched: tally.matched.count_ones() as u16,
        });
    });
    let by_bound = |a: &Bounded, b: &Bounded| b.bound.total_cmp(&a.bound).then(a.t.cmp(&b.t));
    let mut scorer = TitleScorer::new(index, matches, &sets.weights);
    let mut top = TopRows::new(limit);

    // Sorting every bound costs more than the scoring when a common word matched
    // half the corpus, so first score the `limit` best bounds (found in linear
    // time): their worst score is a threshold most other bounds already miss.
    let seed = limit.min(bounded.len());
    if seed < bounded.len() {
        bounded.select_nth_unstable_by(seed, by_bound);
    }
    scorer.offer_all(&bounded[..seed], &mut top, |_, _| true);
    // Then the rest best bound first, until a bound misses the threshold. Rather
    // than sorting all of them (76,000 for `for the …` at 1.1M, of which 1,000
    // are scored), the best `RUN` are taken (linear time), sorted and scored, and
    // the others filtered by the threshold they left: the titles scored, and
    // their order, are those of one sort, whatever the runs' lengths. Each run
    // is twice as long as the one before: when the threshold prunes little
    // (`and tool z11q` at 1.1M: all 22,000 titles holding both words are
    // scored, as a proximity the bound counts is rarely there), equal runs
    // would take, sort out and move what is left once per `RUN` scored.
    let threshold = top.threshold();
    let mut rest: Vec<Bounded> = bounded[seed..]
        .iter()
        .copied()
        .filter(|c| c.bound >= threshold)
        .collect();
    let mut run_len = RUN;
    while !rest.is_empty() {
        let run = run_len.min(rest.len());
        if run < rest.len() {
            rest.select_nth_unstable_by(run, by_bound);
        }
        rest[..run].sort_unstable_by(by_bound);
        if !scorer.offer_all(&rest[..run], &mut top, |c, top| c.bound >= top.threshold()) {
            return top;
        }
        let threshold = top.threshold();
        rest.drain(..run);
        rest.retain(|c| c.bound >= threshold);
        run_len = run_len.saturating_mul(2);
    }
    top
}

/// Candidates [`score_candidates`] sorts and scores in its first run once its
/// seed rows are scored; each later run is twice as long (unit tests run with
/// short runs, so that small corpora take several).
const RUN: usize = if cfg!(test) { 4 } else { 1024 };

/// A candidate title with what scoring it needs from its tally: 12 bytes, as
/// there can be a million of them.
#[derive(Debug, Clone, Copy)]
struct Bounded {
    bound: f32,
    t: u32,
    /// Its words.
    len: u16,
    /// The query words it matched.
    matched: u16,
}

/// Exact scoring of single titles, with buffers reused across titles.
struct TitleScorer<'a> {
    index: &'a RankIndex,
    matches: &'a WordMatches,
    weights: &'a [f32],
    units: Vec<Unit>,
    /// The title's words some column matched: position and row.
    found: Vec<(u32, &'a [f32])>,
    parts: PartPositions,
    scratch: AlignScratch,
}

impl<'a> TitleScorer<'a> {
    fn new(index: &'a RankIndex, matches: &'a WordMatches, weights: &'a [f32]) -> Self {
        TitleScorer {
            index,
            matches,
            weights,
            units: Vec::new(),
            found: Vec::new(),
            parts: PartPositions::default(),
            scratch: AlignScratch::default(),
        }
    }

    /// The raw score of `c`, and its title's word count.
    fn score(&mut self, c: &Bounded) -> (f32, u32) {
        let t = c.t;
        let m = self.matches.m;
        let weights = self.weights;
        let matches: &WordMatches = self.matches;
        let words = self.index.words(t);
        self.units.clear();
        self.found.clear();
        for (position, &w) in words.iter().enumerate() {
            let Some(row) = matches.row(w) else {
                continue;
            };
            let position = position as u32;
            self.found.push((position, row));
            for (i, &quality) in row[..m].iter().enumerate() {
                if quality > 0.0 {
                    let gain = score::MATCH_WEIGHT * weights[i] * quality;
                    self.units.push(Unit::within(i..i + 1, position, gain));
                }
            }
            for i in 0..m.saturating_sub(1) {
                let quality = row[self.matches.split_col(i)];
                if quality > 0.0 {
                    let gain = score::MATCH_WEIGHT * (weights[i] + weights[i + 1]) * quality
                        + score::ADJACENT;
                    self.units.push(Unit::within(i..i + 2, position, gain));
                }
            }
        }
        for join in &matches.joins {
            matches.find_parts(&self.found, join, &mut self.parts);
            let i = join.query_word;
            let units = &mut self.units;
            self.parts
                .best_pairs(join.head_len, join.tail_len, |head, tail, quality| {
                    units.push(Unit {
                        start: i as u32,
                        end: i as u32 + 1,
                        first: head,
                        last: tail,
                        gain: score::MATCH_WEIGHT * weights[i] * quality,
                    })
                });
        }
        self.units.sort_unstable_by_key(|u| u.start);
        let raw = score::align(&self.units, m, &mut self.scratch)
            + score::coverage(c.len.into(), c.matched.into());
        (raw, words.len() as u32)
    }

    /// Scores and offers `candidates` to `top` in order while `go` allows (given
    /// the next one and `top`); false when it stopped one. Each title's words
    /// are asked of the memory a few titles before they are read.
    fn offer_all(
        &mut self,
        candidates: &[Bounded],
        top: &mut TopRows,
        go: impl Fn(&Bounded, &TopRows) -> bool,
    ) -> bool {
        for (i, c) in candidates.iter().enumerate() {
            self.index.prefetch_words_ahead(candidates, i, |c| c.t);
            if !go(c, top) {
                return false;
            }
            self.offer(c, top);
        }
        true
    }

    /// Scores `c` and offers it to `top`. Its page id (a cache miss) is read only
    /// when its score can still enter.
    fn offer(&mut self, c: &Bounded, top: &mut TopRows) {
        let (raw, title_words) = self.score(c);
        if raw < top.threshold() {
            return;
        }
        top.offer(Ranked {
            raw,
            title_words,
            page_id: self.index.page_id(c.t),
        });
    }
}

/// The best `limit` titles seen so far.
struct TopRows {
    limit: usize,
    /// Max-heap under `Ranked`'s order, i.e. the worst kept row on top.
    heap: BinaryHeap<Ranked>,
}

impl TopRows {
    fn new(limit: usize) -> Self {
        TopRows {
            limit,
            heap: BinaryHeap::with_capacity(limit.saturating_add(1).min(1024)),
        }
    }

    fn offer(&mut self, row: Ranked) {
        if self.heap.len() < self.limit {
            self.heap.push(row);
        } else if self.heap.peek().is_some_and(|worst| row < *worst) {
            self.heap.pop();
            self.heap.push(row);
        }
    }

    /// The raw score a title must reach to still enter (a tie can enter on the
    /// tie rule, so a bound equal to it is still scored).
    fn threshold(&self) -> f32 {
        match self.heap.peek() {
            Some(worst) if self.heap.len() == self.limit => worst.raw,
            _ => f32::NEG_INFINITY,
        }
    }
}
