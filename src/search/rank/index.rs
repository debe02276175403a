//! The per-corpus index: distinct words (the lexicon) and who uses them.
//!
//! Built once per candidate snapshot, then read concurrently by any number of
//! scorings (plain owned vectors, so `Send + Sync` for free). Sizes are for a
//! corpus of `N` titles with `W` word occurrences and `D` distinct words:
//! titles `17·N` bytes, title words `4·W`, postings at most `4·W`, lexicon about
//! `4·(chars of D) + 24·D`. For the 100,000 npm titles (W ≈ 850 k, D ≈ 35 k)
//! [`RankIndex::heap_bytes`] reports about 11 MB. A query additionally allocates
//! `4·D + 8·N` bytes of scratch (about 1 MB there), freed when it returns.

use std::collections::HashMap;

use super::fold::fold;
use crate::search::normalize::normalize;

/// One title as the scorer sees it: its page id and its words, in order, as
/// lexicon ids (a slice of `RankIndex::title_words`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Title {
    pub page_id: i64,
    pub words_start: u32,
    pub words_len: u32,
}

/// Distinct folded words of the corpus, sorted by (length in chars, chars), so
/// that a length range is a contiguous id range and, within one length, words
/// sharing a prefix are contiguous too.
#[derive(Debug, Default)]
pub(super) struct Lexicon {
    /// All words' chars back to back; word `w` is `chars[start[w]..start[w + 1]]`.
    chars: Vec<char>,
    start: Vec<u32>,
    /// Bag-of-chars signature of each word (see [`char_mask`]).
    pub masks: Vec<u64>,
    /// Signature of each word's first [`HEAD_CHARS`] chars, to filter prefix
    /// matches without touching the chars.
    pub head_masks: Vec<u64>,
    /// `by_len[l]` = first word id whose length is at least `l` (`len + 1` entries
    /// up to the longest word, then the end).
    by_len: Vec<u32>,
}

impl Lexicon {
    pub fn len(&self) -> usize {
        self.masks.len()
    }

    pub fn word(&self, id: u32) -> &[char] {
        let id = id as usize;
        &self.chars[self.start[id] as usize..self.start[id + 1] as usize]
    }

    /// Word ids whose length (chars) lies in `lo..=hi`.
    pub fn ids_with_len(&self, lo: usize, hi: usize) -> std::ops::Range<u32> {
        let at = |l: usize| self.by_len[l.min(self.by_len.len() - 1)];
        at(lo)..at(hi.saturating_add(1))
    }

    /// The id of exactly `word`, if the corpus has it.
    pub fn find(&self, word: &[char]) -> Option<u32> {
        let range = self.ids_with_len(word.len(), word.len());
        binary_search_by(range.start, range.end, |id| self.word(id).cmp(word))
    }

    /// Ids of words strictly longer than `prefix` that start with it.
    pub fn with_prefix(&self, prefix: &[char], out: &mut Vec<u32>) {
        let n = prefix.len();
        let longest = self.by_len.len().saturating_sub(2);
        for l in n + 1..=longest {
            let range = self.ids_with_len(l, l);
            let first = partition_point(range.start, range.end, |id| &self.word(id)[..n] < prefix);
            let mut id = first;
            while id < range.end && &self.word(id)[..n] == prefix {
                out.push(id);
                id += 1;
            }
        }
    }
}

fn partition_point(mut lo: u32, mut hi: u32, before: impl Fn(u32) -> bool) -> u32 {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

fn binary_search_by(lo: u32, hi: u32, cmp: impl Fn(u32) -> std::cmp::Ordering) -> Option<u32> {
    let at = partition_point(lo, hi, |id| cmp(id) == std::cmp::Ordering::Less);
    (at < hi && cmp(at) == std::cmp::Ordering::Equal).then_some(at)
}

/// Length of the word heads summarized in `Lexicon::head_masks`: covers a
/// prefix query word of up to 6 chars with its 2-edit slack.
pub(super) const HEAD_CHARS: usize = 8;

/// A 64-bit bag-of-chars signature: bit `b(c)` is set for every char `c` of the
/// word. An edit removes at most one distinct char of the query from view, so a
/// word that lacks more than `k` of the query's bits is more than `k` edits away
/// (hash collisions only ever make this filter let more through, never fewer).
pub(super) fn char_mask(word: &[char]) -> u64 {
    word.iter().fold(0u64, |m, &c| m | 1u64 << char_bit(c))
}

fn char_bit(c: char) -> u32 {
    match c {
        'a'..='z' => c as u32 - 'a' as u32,
        '0'..='9' => 26 + c as u32 - '0' as u32,
        _ => 36 + (c as u32 % 28),
    }
}

/// Per-corpus ranking index: titles as word-id sequences, the lexicon of distinct
/// folded words, and for each word the titles that contain it.
#[derive(Debug, Default)]
pub struct RankIndex {
    pub(super) titles: Vec<Title>,
    /// Words per title, saturated at 255: the copy the per-candidate score bound
    /// reads, small enough (1 byte a title) to stay in cache.
    title_lens: Vec<u8>,
    /// Every title's word ids back to back (see [`Title`]).
    pub(super) title_words: Vec<u32>,
    pub(super) lexicon: Lexicon,
    /// Postings: titles (indexes into `titles`, ascending, no repeats) containing
    /// word `w` are `postings[posting_start[w]..posting_start[w + 1]]`.
    postings: Vec<u32>,
    posting_start: Vec<u32>,
}

impl RankIndex {
    /// Builds the index from `(page_id, raw display title)` pairs. Titles are
    /// normalized here (`normalize`, then accent folding); a title that normalizes
    /// to nothing is kept (it counts in `len`) but can never match.
    pub fn build<'a>(titles: impl IntoIterator<Item = (i64, &'a str)>) -> RankIndex {
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut words_of_titles: Vec<u32> = Vec::new();
        let mut out_titles = Vec::new();
        for (page_id, raw) in titles {
            let folded = fold(&normalize(raw));
            let words_start = words_of_titles.len() as u32;
            for word in folded.split(' ').filter(|w| !w.is_empty()) {
                let next = ids.len() as u32;
                let id = *ids.entry(word.to_owned()).or_insert(next);
                words_of_titles.push(id);
            }
            out_titles.push(Title {
                page_id,
                words_start,
                words_len: words_of_titles.len() as u32 - words_start,
            });
        }

        // Renumber words in (length, chars) order; see `Lexicon`.
        let mut distinct: Vec<(Vec<char>, u32)> = ids
            .into_iter()
            .map(|(w, id)| (w.chars().collect(), id))
            .collect();
        distinct.sort_unstable_by(|a, b| a.0.len().cmp(&b.0.len()).then_with(|| a.0.cmp(&b.0)));
        let mut renumber = vec![0u32; distinct.len()];
        let mut lexicon = Lexicon::default();
        for (new_id, (chars, old_id)) in distinct.iter().enumerate() {
            renumber[*old_id as usize] = new_id as u32;
            lexicon.start.push(lexicon.chars.len() as u32);
            lexicon.chars.extend_from_slice(chars);
            lexicon.masks.push(char_mask(chars));
            lexicon
                .head_masks
                .push(char_mask(&chars[..chars.len().min(HEAD_CHARS)]));
            while lexicon.by_len.len() <= chars.len() {
                lexicon.by_len.push(new_id as u32);
            }
        }
        lexicon.start.push(lexicon.chars.len() as u32);
        lexicon.by_len.push(distinct.len() as u32);
        for id in &mut words_of_titles {
            *id = renumber[*id as usize];
        }

        // Postings by counting sort: count, prefix-sum, fill in title order.
        let mut counts = vec![0u32; distinct.len() + 1];
        let mut seen = vec![u32::MAX; distinct.len()];
        for (t, title) in out_titles.iter().enumerate() {
            for &w in &words_of_titles[title.words_start as usize..][..title.words_len as usize] {
                if seen[w as usize] != t as u32 {
                    seen[w as usize] = t as u32;
                    counts[w as usize + 1] += 1;
                }
            }
        }
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        let posting_start = counts.clone();
        let mut fill = counts;
        let mut postings = vec![0u32; *posting_start.last().unwrap_or(&0) as usize];
        seen.fill(u32::MAX);
        for (t, title) in out_titles.iter().enumerate() {
            for &w in &words_of_titles[title.words_start as usize..][..title.words_len as usize] {
                if seen[w as usize] != t as u32 {
                    seen[w as usize] = t as u32;
                    postings[fill[w as usize] as usize] = t as u32;
                    fill[w as usize] += 1;
                }
            }
        }

        // The index lives as long as its snapshot: drop the growth slack.
        words_of_titles.shrink_to_fit();
        out_titles.shrink_to_fit();
        lexicon.chars.shrink_to_fit();
        RankIndex {
            title_lens: out_titles
                .iter()
                .map(|t| t.words_len.min(255) as u8)
                .collect(),
            titles: out_titles,
            title_words: words_of_titles,
            lexicon,
            postings,
            posting_start,
        }
    }

    /// Number of titles given to `build` (including ones that can never match).
    pub fn len(&self) -> usize {
        self.titles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.titles.is_empty()
    }

    /// Number of titles that count for word rarity (all of them, for now).
    pub(super) fn live_len(&self) -> usize {
        self.titles.len()
    }

    /// Titles (indexes into `titles`) that contain lexicon word `w`.
    pub(super) fn postings(&self, w: u32) -> &[u32] {
        let w = w as usize;
        &self.postings[self.posting_start[w] as usize..self.posting_start[w + 1] as usize]
    }

    /// Number of words of title `t` (saturated at 255).
    pub(super) fn title_len(&self, t: u32) -> u32 {
        u32::from(self.title_lens[t as usize])
    }

    /// Word ids of title `t`, in title order.
    pub(super) fn words(&self, t: u32) -> &[u32] {
        let title = &self.titles[t as usize];
        &self.title_words[title.words_start as usize..][..title.words_len as usize]
    }

    /// Approximate heap size of the index in bytes (for capacity planning).
    pub fn heap_bytes(&self) -> usize {
        self.titles.capacity() * std::mem::size_of::<Title>()
            + self.title_lens.capacity()
            + self.title_words.capacity() * 4
            + self.postings.capacity() * 4
            + self.posting_start.capacity() * 4
            + self.lexicon.chars.capacity() * 4
            + self.lexicon.start.capacity() * 4
            + self.lexicon.masks.capacity() * 8
            + self.lexicon.head_masks.capacity() * 8
            + self.lexicon.by_len.capacity() * 4
    }
}
