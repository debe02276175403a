//! Query word → lexicon words: which distinct corpus words a query word matches,
//! and how well (a quality in `0.0..=1.0`, 1.0 = the same word).
//!
//! Each query word is matched against the distinct words (never once per title)
//! by a char-signature scan of the lexicon's length buckets in reach
//! (`lexicon::neighbours`, `lexicon::scan`): a few instructions per word, and
//! only the few words it lets through are compared with the query. OSA
//! counts an adjacent transposition (`mdoe` → `mode`) as one edit, where
//! Levenshtein counts two, and transpositions are the most common typo in short
//! words. The highlighter's head lengths use rapidfuzz's cached OSA comparator.

use rapidfuzz::distance::osa;

use super::lexicon::neighbours::Neighbourhood;
use super::lexicon::Lexicon;

/// Edits allowed for a query word of `len` chars: none up to 2 chars (a one-edit
/// neighbourhood of `to` is half the dictionary), one up to 6, two beyond.
///
/// Why one at 6 chars: two edits rewrite a third of such a word, and on the six
/// relevance sets they found more wrong words than meant ones (a `noise_word`
/// query's common word two edits from many others): with one, hard-npm went
/// 0.978 → 0.980 and hard-million 0.961 → 0.963 MRR@50 (`noise_word` 0.930 →
/// 0.943 and 0.886 → 0.906), no kind of any set lower. Their lookup was also the
/// largest part of a 6-char word's lookup at 1.1M titles. Two edits only from
/// 8 or 9 chars (9 is Meilisearch's threshold) cost the `double_typo` queries
/// (hard-debian 1.000 → 0.977 and 0.883).
pub(super) fn typo_budget(len: usize) -> usize {
    match len {
        0..=2 => 0,
        3..=6 => 1,
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

pub(super) fn full_quality(edits: usize, len: usize) -> f32 {
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
    let len = query.chars.len();
    lookup_within(
        lexicon,
        query,
        typo_budget(len),
        prefix_typo_budget(len),
        out,
    );
}

/// [`lookup`] with other edit budgets: whole words within `budget` OSA edits,
/// heads (for a prefix word) within `head_budget`, which must not exceed `budget`.
pub(super) fn lookup_within(
    lexicon: &Lexicon,
    query: &QueryWord,
    budget: usize,
    head_budget: usize,
    out: &mut Vec<WordHit>,
) {
    let q = &query.chars[..];
    let len = q.len();
    if len == 0 {
        return;
    }
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

    let heads = prefix.then_some(head_budget.min(budget));
    let neighbourhood = Neighbourhood {
        query: q,
        whole: budget,
        heads,
    };
    lexicon.neighbours(&neighbourhood, |n| {
        let whole = n.whole.map(|d| (full_quality(d as usize, len), d));
        let head = n.head.map(|d| (prefix_quality(d as usize, len, n.len), d));
        let best = match (whole, head) {
            (Some(w), Some(h)) if h.0 > w.0 => Some(h),
            (Some(w), _) => Some(w),
            (None, h) => h,
        };
        if let Some((quality, edits)) = best {
            out.push(WordHit {
                word: n.id,
                quality,
                edits,
            });
        }
    });
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

/// Fewest OSA edits between the query (cached in `comparator`) and a head of
/// `word` of `len - budget ..= head_max` chars, if within `budget`, with that
/// head's length (the first found on a tie). Heads are tried from length `len`
/// outwards, shorter first, and only while their length difference (a lower
/// bound of their distance) can still beat the best found.
pub(super) fn prefix_edits(
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
    use crate::search::testing::{demo_titles, Lcg};

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

    /// [`lookup`]'s hits for the query word `chars` (`prefix`: the query's
    /// unfinished last word), sorted, as `(word, quality bits, edits)`, after
    /// asserting that they are [`every_word`]'s.
    fn checked_lookup(index: &RankIndex, chars: Vec<char>, prefix: bool) -> Vec<(u32, u32, u8)> {
        let query = QueryWord { chars, prefix };
        let mut got = Vec::new();
        lookup(&index.lexicon, &query, &mut got);
        let mut got: Vec<(u32, u32, u8)> = got
            .iter()
            .map(|h| (h.word, h.quality.to_bits(), h.edits))
            .collect();
        got.sort_unstable();
        let word: String = query.chars.iter().collect();
        assert_eq!(got, every_word(index, &query), "{word:?} prefix {prefix}");
        got
    }

    /// An index of the first 8,000 titles of the bundled demo corpus (Debian),
    /// as pages 0, 1, 2, …, and the titles.
    fn demo_index() -> (RankIndex, Vec<String>) {
        let titles = demo_titles(8_000);
        (
            RankIndex::numbered(titles.iter().map(String::as_str)),
            titles,
        )
    }

    /// A word of 1..=`max` chars over a small alphabet, so that words crowd
    /// each other's neighbourhoods (many near words, long shared prefixes,
    /// chunk edges everywhere).
    fn crowded_word(rng: &mut Lcg, max: usize) -> String {
        const ALPHABET: &[char] = &['a', 'b', 'c', 'd', 'e', 'é'];
        let n = 1 + rng.below(max);
        (0..n).map(|_| *rng.pick(ALPHABET)).collect()
    }

    fn crowded_titles(rng: &mut Lcg, n: usize) -> Vec<String> {
        (0..n)
            .map(|_| {
                (0..1 + rng.below(4))
                    .map(|_| crowded_word(rng, 12))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn the_lookup_finds_what_comparing_every_word_finds_on_random_words() {
        let mut rng = Lcg(0x7e57_0a1c);
        let word = crowded_word;
        let titles = crowded_titles(&mut rng, 4000);
        let index = RankIndex::numbered(titles.iter().map(String::as_str));
        let mut found = 0;
        for n in 0..800 {
            let chars: Vec<char> = word(&mut rng, 14).chars().collect();
            found += checked_lookup(&index, chars, n % 2 == 0).len();
        }
        assert!(found > 5_000, "{found}");
    }

    #[test]
    fn the_lookup_finds_what_comparing_every_word_finds_after_writes() {
        // The buckets' signatures are kept up by every write (words inserted,
        // removed, chunks split and emptied); the scans trust them.
        let mut rng = Lcg(0x00c0_ffee);
        let titles = crowded_titles(&mut rng, 3000);
        let mut index = RankIndex::build(std::iter::empty());
        for (n, title) in titles.iter().enumerate() {
            index.upsert(n as i64, title);
            if n % 3 == 2 {
                // Retitle or remove an earlier page.
                let page = rng.below(n) as i64;
                if rng.below(2) == 0 {
                    index.remove(page);
                } else {
                    index.upsert(page, &crowded_word(&mut rng, 12));
                }
            }
        }
        let mut found = 0;
        for n in 0..600 {
            let chars: Vec<char> = crowded_word(&mut rng, 14).chars().collect();
            found += checked_lookup(&index, chars, n % 2 == 0).len();
        }
        assert!(found > 3_000, "{found}");
    }

    #[test]
    fn the_lookup_finds_what_comparing_every_word_finds_on_real_words_with_typos() {
        // The first 8,000 titles of the bundled demo corpus; queries are its
        // words with one or two random edits, and random strings.
        let (index, _) = demo_index();
        let words: Vec<&[char]> = (0..index.lexicon.len() as u32)
            .map(|id| index.lexicon.word(id))
            .filter(|w| !w.is_empty())
            .collect();
        const NOISE: &[char] = &['a', 'e', 'o', 's', 't', 'r', 'z', 'q', '1', 'ü'];
        let mut rng = Lcg(0x5eed_1234);
        let mut matched = 0;
        for n in 0..1200 {
            let mut chars: Vec<char> = if n % 5 == 4 {
                (0..1 + rng.below(12)).map(|_| *rng.pick(NOISE)).collect()
            } else {
                rng.pick(&words).to_vec()
            };
            for _ in 0..rng.below(3) {
                let k = rng.below(chars.len() + 1);
                let c = *rng.pick(NOISE);
                match rng.below(4) {
                    0 if k < chars.len() => chars[k] = c,
                    1 if k < chars.len() && chars.len() > 1 => {
                        chars.remove(k);
                    }
                    2 if k + 1 < chars.len() => chars.swap(k, k + 1),
                    _ => chars.insert(k, c),
                }
            }
            let prefix = rng.below(2) == 0;
            matched += usize::from(!checked_lookup(&index, chars, prefix).is_empty());
        }
        assert!(matched > 500, "{matched}");
    }

    #[test]
    fn the_filters_let_every_match_through() {
        // Real titles: the first 8,000 of the bundled demo corpus (Debian).
        let (index, titles) = demo_index();
        let mut queries = 0;
        for (n, title) in titles.iter().enumerate().step_by(211) {
            let folded = super::super::fold::fold(&crate::search::normalize::normalize(title));
            for word in folded.split(' ').filter(|w| w.chars().count() >= 3) {
                let chars: Vec<char> = word.chars().collect();
                for typo in typos(&chars, n) {
                    for prefix in [false, true] {
                        checked_lookup(&index, typo.clone(), prefix);
                        queries += 1;
                    }
                }
            }
        }
        assert!(queries > 500, "{queries}");
    }
}
