//! An independent reference of [`rank`](super::rank), for tests: the matching
//! rules of `rank`'s docs and the score of `score`'s docs applied to every
//! title, straight from their definitions.
//!
//! It shares with the ranking only the definitions (the edit budgets, the
//! quality, weight and coverage formulas and their constants, the title
//! tokenizer); none of what makes ranking fast: no lexicon scan (every distinct
//! corpus word is compared with every query word by a plain OSA distance), no
//! postings, no word sets, no upper bounds, no words left out of the
//! candidates, no selection, and the alignment of a title's matches is an
//! exhaustive search over every choice rather than `score::align`'s forward
//! pass. Slow on purpose: a few milliseconds a query over the demo corpus.

use std::collections::HashMap;

use super::compound::{join_quality, MIN_PART, SPLIT, SPLIT_EXTRA_TYPO_COST, SPLIT_TYPO_BUDGET};
use super::fold::fold;
use super::index::title_words;
use super::lookup::{
    full_quality, prefix_quality, prefix_typo_budget, typo_budget, MIN_PREFIX_LEN,
};
use super::score::{coverage, weight, ADJACENT, IN_ORDER, MATCH_WEIGHT, SWAPPED};
use super::MAX_QUERY_WORDS;

/// Raw scores this close count as equal: the reference adds the same terms in
/// another order, so the last bits of a sum differ.
pub(super) const EPSILON: f32 = 1e-4;

/// A corpus as the reference sees it: each title as distinct-word ids.
pub(super) struct Reference {
    titles: Vec<(i64, Vec<u32>)>,
    words: Vec<Vec<char>>,
}

/// One matching title, scored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct RefRow {
    pub page_id: i64,
    pub raw: f32,
    pub title_words: u32,
}

/// Every matching title in rank order, with each query word's document
/// frequency and weight.
#[derive(Debug, Default)]
pub(super) struct RefResult {
    pub rows: Vec<RefRow>,
    pub df: Vec<usize>,
    pub weights: Vec<f32>,
}

/// A query word read as two title words: query word `word` cut after `head`
/// chars.
struct Cut {
    word: usize,
    head: Vec<char>,
    tail: Vec<char>,
    /// Whether the tail may be unfinished (the cut word is the last one).
    prefix: bool,
}

/// One way a run of query words `start..end` matches in a title (see
/// `score::Unit`), with the quality of the match.
#[derive(Debug, Clone, Copy)]
struct Unit {
    start: usize,
    end: usize,
    first: u32,
    last: u32,
    quality: f32,
}

impl Unit {
    /// Its part of the score given the query words' `weights`: their weights
    /// times the quality, and a split's (two query words in one title word)
    /// built-in adjacency credit.
    fn gain(&self, weights: &[f32]) -> f32 {
        let split = if self.end - self.start == 2 {
            ADJACENT
        } else {
            0.0
        };
        MATCH_WEIGHT * weights[self.start..self.end].iter().sum::<f32>() * self.quality + split
    }
}

impl Reference {
    /// The live titles of a corpus, as `(page id, raw title)`.
    pub fn new<'a>(titles: impl IntoIterator<Item = (i64, &'a str)>) -> Reference {
        let mut ids: HashMap<Vec<char>, u32> = HashMap::new();
        let mut words = Vec::new();
        let titles = titles
            .into_iter()
            .map(|(page, raw)| {
                let title = title_words(raw)
                    .into_iter()
                    .map(|w| {
                        *ids.entry(w.clone()).or_insert_with(|| {
                            words.push(w);
                            words.len() as u32 - 1
                        })
                    })
                    .collect();
                (page, title)
            })
            .filter(|(_, title): &(i64, Vec<u32>)| !title.is_empty())
            .collect();
        Reference { titles, words }
    }

    /// Every title matching `query` (a match copy), scored, in rank order.
    pub fn rank(&self, query: &str) -> RefResult {
        let folded = fold(query);
        let query: Vec<Vec<char>> = folded
            .split(' ')
            .filter(|w| !w.is_empty())
            .take(MAX_QUERY_WORDS)
            .map(|w| w.chars().collect())
            .collect();
        let m = query.len();
        if m == 0 || self.titles.is_empty() {
            return RefResult::default();
        }
        let cuts = cuts(&query);
        // Per distinct word: its quality for each query word, each pair of
        // adjacent query words joined, and each cut's head and tail.
        let joined: Vec<Vec<char>> = query.windows(2).map(|p| p.concat()).collect();
        let rows: Vec<Option<Row>> = self
            .words
            .iter()
            .map(|w| Row::of(w, &query, &joined, &cuts))
            .collect();

        // The matching titles: which query words reach each, and how (hence
        // the weights, which the matches' gains need).
        let matching: Vec<(i64, &[u32], u32, Vec<Unit>)> = self
            .titles
            .iter()
            .filter(|(_, t)| t.iter().any(|&w| rows[w as usize].is_some()))
            .map(|(page, t)| {
                let (bits, units) = units(t, &rows, &cuts);
                (*page, &t[..], bits, units)
            })
            .filter(|&(_, _, bits, _)| bits != 0)
            .collect();
        let df: Vec<usize> = (0..m)
            .map(|i| {
                matching
                    .iter()
                    .filter(|(_, _, bits, _)| bits >> i & 1 == 1)
                    .count()
            })
            .collect();
        let weights: Vec<f32> = df.iter().map(|&d| weight(d, self.titles.len())).collect();

        let mut out: Vec<RefRow> = matching
            .iter()
            .map(|(page, title, bits, units)| {
                let len = title.len().min(255) as u32;
                RefRow {
                    page_id: *page,
                    raw: best_chain(units, &weights) + coverage(len, bits.count_ones()),
                    title_words: title.len() as u32,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            b.raw
                .total_cmp(&a.raw)
                .then(a.title_words.cmp(&b.title_words))
                .then(a.page_id.cmp(&b.page_id))
        });
        RefResult {
            rows: out,
            df,
            weights,
        }
    }
}

/// Every cut of every query word of `2 * MIN_PART` chars or more into two
/// parts of at least `MIN_PART` chars. (`rank` keeps only cuts whose parts are
/// corpus words; a cut whose parts no title holds matches nothing either way.)
fn cuts(query: &[Vec<char>]) -> Vec<Cut> {
    let mut out = Vec::new();
    for (i, q) in query.iter().enumerate() {
        if q.len() < 2 * MIN_PART {
            continue;
        }
        for k in MIN_PART..=q.len() - MIN_PART {
            out.push(Cut {
                word: i,
                head: q[..k].to_vec(),
                tail: q[k..].to_vec(),
                prefix: i + 1 == query.len(),
            });
        }
    }
    out
}

/// A distinct corpus word's qualities (0 = no match).
struct Row {
    own: Vec<f32>,
    split: Vec<f32>,
    /// Per cut: as its head, as its tail.
    parts: Vec<(bool, f32)>,
}

impl Row {
    /// The qualities of `word` for the `query` words, each pair of them
    /// `joined`, and the `cuts`; `None` when all are 0.
    fn of(word: &[char], query: &[Vec<char>], joined: &[Vec<char>], cuts: &[Cut]) -> Option<Row> {
        let m = query.len();
        let own = (0..m)
            .map(|i| word_quality(&query[i], i + 1 == m, word))
            .collect();
        let split = (1..m)
            .map(|j| {
                let shorter = query[j - 1].len().min(query[j].len());
                split_quality(&joined[j - 1], shorter, j + 1 == m, word)
            })
            .collect();
        let parts = cuts
            .iter()
            .map(|c| {
                let tail = if word == c.tail {
                    1.0
                } else if c.prefix
                    && c.tail.len() >= MIN_PREFIX_LEN
                    && word.len() > c.tail.len()
                    && word.starts_with(&c.tail)
                {
                    prefix_quality(0, c.tail.len(), word.len())
                } else {
                    0.0
                };
                (word == c.head, tail)
            })
            .collect();
        let row = Row { own, split, parts };
        let any = row.own.iter().chain(&row.split).any(|&q| q > 0.0)
            || row.parts.iter().any(|&(head, tail)| head || tail > 0.0);
        any.then_some(row)
    }
}

/// Quality of `word` for query word `q` (`last`: it may be unfinished): the
/// whole word within `typo_budget`, or a head of it within
/// `prefix_typo_budget`, whichever is better.
fn word_quality(q: &[char], last: bool, word: &[char]) -> f32 {
    let len = q.len();
    let budget = typo_budget(len);
    let heads = last && len >= MIN_PREFIX_LEN && word.len() > len;
    if !heads && word.len().abs_diff(len) > budget {
        return 0.0; // a distance is at least the difference in length
    }
    // distances[j] = OSA distance between `q` and the first `j` chars of
    // `word`, as far as a head or the whole word can be within budget.
    let head = &word[..word.len().min(len + budget.max(prefix_typo_budget(len)))];
    let distances = osa_row(q, head);
    let whole = match distances.get(word.len()) {
        Some(&d) if d <= budget => full_quality(d, len),
        _ => 0.0,
    };
    let head = if heads {
        let budget = prefix_typo_budget(len);
        let shortest = len.saturating_sub(budget).max(1);
        let longest = (len + budget).min(word.len() - 1);
        let d = distances[shortest..=longest].iter().copied().min().unwrap();
        if d <= budget {
            prefix_quality(d, len, word.len())
        } else {
            0.0
        }
    } else {
        0.0
    };
    whole.max(head)
}

/// Quality of `word` for two adjacent query words `joined` into one (the
/// shorter of them `shorter` chars; `last`: the second may be unfinished):
/// the joined word within `SPLIT_TYPO_BUDGET` (and its length's budget), with
/// fewer edits than `shorter`, or (unfinished) exactly the head of a longer
/// word.
fn split_quality(joined: &[char], shorter: usize, last: bool, word: &[char]) -> f32 {
    let n = joined.len();
    let budget = typo_budget(n).min(SPLIT_TYPO_BUDGET);
    let d = if word.len().abs_diff(n) <= budget {
        osa_row(joined, word)[word.len()]
    } else {
        usize::MAX
    };
    let whole = (d <= budget && d < shorter)
        .then(|| (full_quality(d, n) - SPLIT_EXTRA_TYPO_COST * d as f32 / n as f32) * SPLIT);
    let head = (last && n >= MIN_PREFIX_LEN && word.len() > n && word.starts_with(joined))
        .then(|| prefix_quality(0, n, word.len()) * SPLIT);
    whole.unwrap_or(0.0).max(head.unwrap_or(0.0))
}

/// The bits of the query words that reach `title` (its word ids), and every
/// unit of it, sorted by start.
fn units(title: &[u32], rows: &[Option<Row>], cuts: &[Cut]) -> (u32, Vec<Unit>) {
    let mut bits = 0u32;
    let mut units = Vec::new();
    for (p, &id) in title.iter().enumerate() {
        let Some(row) = &rows[id as usize] else {
            continue;
        };
        let p = p as u32;
        for (i, &q) in row.own.iter().enumerate() {
            if q > 0.0 {
                bits |= 1 << i;
                units.push(unit(i, i + 1, p, p, q));
            }
        }
        for (i, &q) in row.split.iter().enumerate() {
            if q > 0.0 {
                bits |= 0b11 << i;
                units.push(unit(i, i + 2, p, p, q));
            }
        }
    }
    for (c, cut) in cuts.iter().enumerate() {
        let part = |p: usize| {
            rows[title[p] as usize]
                .as_ref()
                .map_or((false, 0.0), |r| r.parts[c])
        };
        for h in (0..title.len()).filter(|&h| part(h).0) {
            // The best tail elsewhere in the title, the first one on a tie.
            let mut best: Option<(usize, f32)> = None;
            for t in (0..title.len()).filter(|&t| t != h && part(t).1 > 0.0) {
                let q = join_quality(cut.head.len(), cut.tail.len(), part(t).1, t == h + 1);
                if best.is_none_or(|(_, b)| q > b) {
                    best = Some((t, q));
                }
            }
            if let Some((t, q)) = best {
                bits |= 1 << cut.word;
                units.push(unit(cut.word, cut.word + 1, h as u32, t as u32, q));
            }
        }
    }
    units.sort_by_key(|u| u.start);
    (bits, units)
}

fn unit(start: usize, end: usize, first: u32, last: u32, quality: f32) -> Unit {
    Unit {
        start,
        end,
        first,
        last,
        quality,
    }
}

/// The best total over every choice of non-overlapping units taken left to
/// right along the query (each query word skipped or covered by one unit
/// starting there), a unit that starts where the previous one ended earning
/// the proximity credit of their title positions; a query word per weight.
fn best_chain(units: &[Unit], weights: &[f32]) -> f32 {
    let mut memo = HashMap::new();
    best_from(units, weights, 0, None, &mut memo)
}

fn best_from(
    units: &[Unit],
    weights: &[f32],
    b: usize,
    prev: Option<usize>,
    memo: &mut HashMap<(usize, Option<usize>), f32>,
) -> f32 {
    if b >= weights.len() {
        return 0.0;
    }
    if let Some(&v) = memo.get(&(b, prev)) {
        return v;
    }
    let mut best = best_from(units, weights, b + 1, None, memo);
    for (k, u) in units.iter().enumerate().filter(|(_, u)| u.start == b) {
        let credit = prev.map_or(0.0, |p| {
            let (prev, next) = (units[p].last, u.first);
            if next == prev + 1 {
                ADJACENT
            } else if next + 1 == prev {
                SWAPPED
            } else if next > prev {
                IN_ORDER
            } else {
                0.0
            }
        });
        let total = credit + u.gain(weights) + best_from(units, weights, u.end, Some(k), memo);
        best = best.max(total);
    }
    memo.insert((b, prev), best);
    best
}

/// Optimal string alignment distances (an adjacent transposition is one edit)
/// between `a` and each head of `b`: element `j` is the distance to the first
/// `j` chars. The textbook dynamic programme, keeping its last row.
fn osa_row(a: &[char], b: &[char]) -> Vec<usize> {
    let w = b.len() + 1;
    // Rows i - 2, i - 1 and i of the table, at (i % 3) * w.
    let mut d = vec![0usize; 3 * w];
    for (j, cell) in d[..w].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        let (row, above, before) = ((i % 3) * w, ((i - 1) % 3) * w, ((i + 1) % 3) * w);
        d[row] = i;
        for j in 1..w {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[above + j] + 1)
                .min(d[row + j - 1] + 1)
                .min(d[above + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[before + j - 2] + 1);
            }
            d[row + j] = v;
        }
    }
    let last = (a.len() % 3) * w;
    d[last..last + w].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osa_counts_an_adjacent_swap_as_one_edit() {
        let c = |s: &str| s.chars().collect::<Vec<_>>();
        let osa = |a: &str, b: &str| *osa_row(&c(a), &c(b)).last().unwrap();
        assert_eq!(osa("mdoe", "mode"), 1);
        assert_eq!(osa("ca", "abc"), 3);
        assert_eq!(osa("", "abc"), 3);
        assert_eq!(osa("kitten", "sitting"), 3);
        // Each head's distance: `tset` is 1 from `test`, 2 from `tes`.
        assert_eq!(osa_row(&c("tset"), &c("tests")), vec![4, 3, 2, 2, 1, 2]);
    }
}
