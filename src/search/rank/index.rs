//! The per-corpus index: each title as a sequence of word ids, and the lexicon of
//! distinct words with the titles that use them (`lexicon`).
//!
//! Built once with [`RankIndex::build`], then either read concurrently by any
//! number of scorings (plain owned data, so `Send + Sync`) or changed one page
//! at a time with [`RankIndex::upsert`] and [`RankIndex::remove`], which touch
//! only the changed title's words. The ranking of any query is the same after
//! any sequence of changes as on a fresh build over the same `(page id, title)`
//! pairs: nothing corpus-wide is precomputed (word rarity is counted from the
//! postings at query time), and no result depends on where a title is stored.
//!
//! **Copies share storage.** Every array is cut into chunks behind `Arc`s (see
//! `chunked`): [`Clone`] copies chunk pointers only (about 10,000 of them for a
//! million titles: tens of microseconds), and a change copies just the chunks it
//! touches while another copy still holds them. So the corpus snapshot keeps its
//! published index immutable for the scorings that read it and makes the next
//! one as a clone with the changed pages applied: a write costs its own pages,
//! whoever is reading.
//!
//! Title storage is by **slot**: a removed page's slot is reused by the next new
//! page. Sizes, for `N` titles with `W` word occurrences and `D` distinct words
//! of `C` chars in all: titles `13·N + 4·W` bytes, the page-id map `4` bytes a
//! page id (for ids that come in runs), words `8·C` (chars per id, and again in
//! the sorted buckets) `+ 24·D`, postings `4·W` at most, plus `N / 8` for
//! each word in more than 65,536 titles (its bit set; 11 words, 1.5 MB at
//! 1.1M titles); see
//! [`RankIndex::heap_bytes`]. A query additionally allocates about `4·D + 12·N`
//! bytes of scratch, freed when it returns.

use std::collections::HashMap;

use super::fold::fold;
use super::lexicon::Lexicon;
use super::postings::{Blocks, DenseSet};
use crate::search::chunked::{ChunkedLists, ChunkedVec, IdMap};
use crate::search::normalize::normalize;

/// How many titles ahead of the one being read [`RankIndex::prefetch_words_ahead`]
/// asks for: scoring a title takes about as long as a cache miss, and each
/// title's words are two dependent misses (where they are, then them).
pub(super) const PREFETCH_AHEAD: usize = 8;

/// Per-corpus ranking index: titles as word-id sequences, the lexicon of distinct
/// folded words, and for each word the titles that contain it.
///
/// `Clone` is cheap and shares storage (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct RankIndex {
    /// Page id of each slot (meaningless for a free slot).
    page_ids: ChunkedVec<i64, SLOT_BITS>,
    /// Words per title, saturated at 255: the copy the per-candidate score bound
    /// reads, small enough (1 byte a title) to stay in cache.
    title_lens: ChunkedVec<u8, SLOT_BITS>,
    /// Word ids of each slot's title, in title order; none for a free slot.
    words: ChunkedLists<u32, TITLE_BITS>,
    slot_of: IdMap,
    free_slots: ChunkedVec<u32, SLOT_BITS>,
    pub(super) lexicon: Lexicon,
}

// Chunk sizes as powers of two: 4,096 slots of the fixed-size arrays, 1,024
// titles' words (about 9,000 word ids). Tiny in unit tests, so that small
// corpora cross chunk boundaries as a large one does.
const SLOT_BITS: u32 = if cfg!(test) { 3 } else { 12 };
const TITLE_BITS: u32 = if cfg!(test) { 2 } else { 10 };

/// The folded words of a raw title, in order (`normalize`, then accent folding).
pub(super) fn title_words(raw: &str) -> Vec<Vec<char>> {
    fold(&normalize(raw))
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(|w| w.chars().collect())
        .collect()
}

impl RankIndex {
    /// [`RankIndex::build`] of `titles` as pages 0, 1, 2, … in their order: the
    /// index of a few titles of their own that a check or a highlight makes.
    pub fn numbered<'a>(titles: impl IntoIterator<Item = &'a str>) -> RankIndex {
        Self::build(titles.into_iter().enumerate().map(|(i, t)| (i as i64, t)))
    }

    /// Builds the index from `(page_id, raw display title)` pairs. Titles are
    /// normalized here (`normalize`, then accent folding); a title that normalizes
    /// to nothing is kept (it counts in `len`) but can never match. A page id
    /// given twice keeps its last title, as two [`RankIndex::upsert`]s would.
    pub fn build<'a>(titles: impl IntoIterator<Item = (i64, &'a str)>) -> RankIndex {
        let input: Vec<(i64, &str)> = titles.into_iter().collect();
        let mut builder = IndexBuilder::default();
        // Ids in increasing order (as a snapshot gives them) cannot repeat.
        if input.windows(2).all(|w| w[0].0 < w[1].0) {
            for (page_id, raw) in input {
                builder.push(page_id, raw);
            }
        } else {
            let last: HashMap<i64, usize, foldhash::fast::RandomState> = input
                .iter()
                .enumerate()
                .map(|(i, &(page_id, _))| (page_id, i))
                .collect();
            for (i, &(page_id, raw)) in input.iter().enumerate() {
                if last[&page_id] == i {
                    builder.push(page_id, raw);
                }
            }
        }
        builder.finish()
    }

    /// Sets the title of page `page_id` (a raw display title, normalized as in
    /// [`RankIndex::build`]), adding the page when new. Cost: proportional to the
    /// old and new title's words (a binary search and an insertion or removal in
    /// each word's postings and, for a word new to or leaving the corpus, in the
    /// sorted list of words of its length), plus one chunk of each array it
    /// touches when a copy of this index shares it; independent of the number
    /// of titles otherwise. A title whose words did not change costs only its
    /// normalization.
    pub fn upsert(&mut self, page_id: i64, title: &str) {
        let words = title_words(title);
        let t = match self.slot_of.get(page_id) {
            Some(t) => {
                let old = self.words(t);
                let unchanged = old.len() == words.len()
                    && old
                        .iter()
                        .zip(&words)
                        .all(|(&id, w)| self.lexicon.word(id) == &w[..]);
                if unchanged {
                    return;
                }
                self.clear_slot(t);
                t
            }
            None => {
                let t = self.free_slots.pop().unwrap_or_else(|| {
                    self.page_ids.push(page_id);
                    self.title_lens.push(0);
                    self.words.push(&[]);
                    self.page_ids.len() as u32 - 1
                });
                self.slot_of.insert(page_id, t);
                self.page_ids.set(t as usize, page_id);
                t
            }
        };
        let ids: Vec<u32> = words
            .iter()
            .map(|w| self.lexicon.add_posting(w, t))
            .collect();
        self.title_lens.set(t as usize, ids.len().min(255) as u8);
        self.words.set(t as usize, &ids);
    }

    /// Removes page `page_id`; returns whether it was there. Cost: proportional
    /// to its title's words, as for [`RankIndex::upsert`].
    pub fn remove(&mut self, page_id: i64) -> bool {
        let Some(t) = self.slot_of.remove(page_id) else {
            return false;
        };
        self.clear_slot(t);
        self.free_slots.push(t);
        true
    }

    /// Takes slot `t`'s words out of the postings (and out of the lexicon, for
    /// words no other title uses).
    fn clear_slot(&mut self, t: u32) {
        let mut ids = self.words(t).to_vec();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            self.lexicon.remove_posting(id, t);
        }
        self.words.set(t as usize, &[]);
        self.title_lens.set(t as usize, 0);
    }

    /// Number of titles (pages) in the index, including ones that can never match.
    pub fn len(&self) -> usize {
        self.slot_of.len()
    }

    /// Whether the index holds no titles.
    pub fn is_empty(&self) -> bool {
        self.slot_of.len() == 0
    }

    /// The slot of page `page_id`, if the index holds it: a number below
    /// [`RankIndex::slot_count`] that no other page has while this one is here
    /// (a caller may keep data of its own by slot).
    pub fn slot(&self, page_id: i64) -> Option<u32> {
        self.slot_of.get(page_id)
    }

    /// Number of titles that count for word rarity: all of them.
    pub(super) fn live_len(&self) -> usize {
        self.slot_of.len()
    }

    /// Number of title slots (live and free): the length of any array indexed by
    /// slot.
    pub fn slot_count(&self) -> usize {
        self.page_ids.len()
    }

    /// Title slots that contain lexicon word `w`, ascending, block by block.
    pub(super) fn postings(&self, w: u32) -> Blocks<'_> {
        self.lexicon.postings(w)
    }

    /// Title slots that contain lexicon word `w` as a bit set, for a word in
    /// so many titles that its list keeps one (see [`postings`](super::postings)).
    pub(super) fn dense(&self, w: u32) -> Option<&DenseSet> {
        self.lexicon.dense(w)
    }

    /// Number of titles that contain lexicon word `w`.
    pub(super) fn titles_with(&self, w: u32) -> usize {
        self.lexicon.titles_with(w)
    }

    /// Number of words of the title in slot `t` (saturated at 255).
    pub(super) fn title_len(&self, t: u32) -> u32 {
        u32::from(*self.title_lens.get(t as usize))
    }

    /// The word counts (as [`RankIndex::title_len`]) of the titles in slots
    /// `64 k .. 64 k + 64`, the slots of the `k`-th u64 of a slot bit set (0
    /// past the last slot): read in place when they lie in one chunk (always,
    /// outside unit tests), else copied into `buffer`.
    pub(super) fn title_lens_64<'a>(&'a self, k: usize, buffer: &'a mut [u8; 64]) -> &'a [u8; 64] {
        if let Some(run) = self.title_lens.run(k * 64, 64) {
            return run.try_into().expect("64 lengths");
        }
        let n = self.title_lens.copy_run(k * 64, buffer);
        buffer[n..].fill(0);
        buffer
    }

    /// Word ids of the title in slot `t`, in title order.
    pub(super) fn words(&self, t: u32) -> &[u32] {
        self.words.get(t as usize)
    }

    /// Before the `k`-th of `list` (titles read in this order, `slot` giving
    /// each one's slot) is read: asks the memory for where the words are of the
    /// title [`PREFETCH_AHEAD`] places on (at `k = 0` for the first ones too),
    /// and for the words of the title half as far on, so that both are in
    /// cache when their turn comes. A hint: no effect on any result.
    #[inline]
    pub(super) fn prefetch_words_ahead<T>(&self, list: &[T], k: usize, slot: impl Fn(&T) -> u32) {
        if k == 0 {
            for item in list.iter().take(PREFETCH_AHEAD) {
                self.words.prefetch_bounds(slot(item) as usize);
            }
        }
        if let Some(far) = list.get(k + PREFETCH_AHEAD) {
            self.words.prefetch_bounds(slot(far) as usize);
        }
        if let Some(near) = list.get(k + PREFETCH_AHEAD / 2) {
            self.words.prefetch_items(slot(near) as usize);
        }
    }

    /// Page id of the title in slot `t`.
    pub(super) fn page_id(&self, t: u32) -> i64 {
        *self.page_ids.get(t as usize)
    }

    /// Approximate heap size of the index in bytes (for capacity planning;
    /// without allocator overhead; storage shared with other copies counted
    /// as this copy's).
    pub fn heap_bytes(&self) -> usize {
        self.page_ids.heap_bytes()
            + self.title_lens.heap_bytes()
            + self.words.heap_bytes()
            + self.slot_of.heap_bytes()
            + self.free_slots.heap_bytes()
            + self.lexicon.heap_bytes()
    }
}

/// Builds a [`RankIndex`] one title at a time (a corpus read row by row is
/// indexed as it arrives); the postings and the lexicon's order are made in
/// [`IndexBuilder::finish`]. Titles get slots in the order they are pushed.
///
/// Each title's words go straight into the index's own chunked arrays (with
/// temporary word ids, renumbered in place by `finish`): no array is grown by
/// reallocation and copied, which at a million titles was a good part of the
/// start-up time (fresh pages faulted in twice over).
#[derive(Debug, Default)]
pub struct IndexBuilder {
    /// Words get temporary ids in order of first use, then the lexicon's.
    temp_ids: HashMap<Box<str>, u32, foldhash::fast::RandomState>,
    /// Every title's temporary word ids, by slot.
    words: ChunkedLists<u32, TITLE_BITS>,
    title_lens: ChunkedVec<u8, SLOT_BITS>,
    page_ids: ChunkedVec<i64, SLOT_BITS>,
    slot_of: IdMap,
    /// The title being pushed: its ids, and its current word (ASCII path).
    ids: Vec<u32>,
    word: String,
}

impl IndexBuilder {
    /// The temporary id of folded word `w`.
    fn temp_id(&mut self, w: &str) -> u32 {
        if let Some(&id) = self.temp_ids.get(w) {
            return id;
        }
        let id = self.temp_ids.len() as u32;
        self.temp_ids.insert(w.into(), id);
        id
    }

    /// Adds page `page_id` with its raw display title. Page ids must not repeat.
    pub fn push(&mut self, page_id: i64, raw: &str) {
        let mut ids = std::mem::take(&mut self.ids);
        ids.clear();
        if raw.is_ascii() {
            // `fold(&normalize(raw))` for ASCII, without its two strings: runs
            // of ASCII letters and digits, lowercased (see `normalize_ascii`).
            let mut word = std::mem::take(&mut self.word);
            for w in raw
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| !w.is_empty())
            {
                word.clear();
                word.extend(w.chars().map(|c| c.to_ascii_lowercase()));
                ids.push(self.temp_id(&word));
            }
            self.word = word;
        } else {
            for w in fold(&normalize(raw)).split(' ').filter(|w| !w.is_empty()) {
                ids.push(self.temp_id(w));
            }
        }
        let slot = self.page_ids.len() as u32;
        let before = self.slot_of.insert(page_id, slot);
        debug_assert!(before.is_none(), "page id {page_id} pushed twice");
        self.words.push(&ids);
        self.title_lens.push(ids.len().min(255) as u8);
        self.page_ids.push(page_id);
        self.ids = ids;
    }

    /// Number of titles pushed.
    pub fn len(&self) -> usize {
        self.page_ids.len()
    }

    /// Whether no title was pushed.
    pub fn is_empty(&self) -> bool {
        self.page_ids.len() == 0
    }

    /// The index of every title pushed.
    pub fn finish(self) -> RankIndex {
        let IndexBuilder {
            temp_ids,
            mut words,
            title_lens,
            page_ids,
            slot_of,
            ..
        } = self;
        // Lexicon ids in (length in chars, chars) order; for UTF-8 the byte order
        // is the order of the chars.
        let mut distinct: Vec<(usize, Box<str>, u32)> = temp_ids
            .into_iter()
            .map(|(w, id)| (w.chars().count(), w, id))
            .collect();
        distinct.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        let mut renumber = vec![0u32; distinct.len()];
        let mut chars: Vec<char> = Vec::new();
        let mut char_ends: Vec<usize> = Vec::with_capacity(distinct.len());
        for (new, (_, w, old)) in distinct.iter().enumerate() {
            renumber[*old as usize] = new as u32;
            chars.extend(w.chars());
            char_ends.push(chars.len());
        }
        drop(distinct);
        words.for_each_mut(|w| *w = renumber[*w as usize]);
        drop(renumber);

        // Postings: each title once per word, in slot order (so ascending).
        let lexicon_words = char_ends.len();
        let titles = words.len();
        let mut counts = vec![0u32; lexicon_words + 1];
        let mut seen = vec![u32::MAX; lexicon_words];
        for t in 0..titles {
            for &w in words.get(t) {
                if seen[w as usize] != t as u32 {
                    seen[w as usize] = t as u32;
                    counts[w as usize + 1] += 1;
                }
            }
        }
        for w in 0..lexicon_words {
            counts[w + 1] += counts[w];
        }
        let mut fill: Vec<u32> = counts[..lexicon_words].to_vec();
        let mut postings = vec![0u32; counts[lexicon_words] as usize];
        seen.fill(u32::MAX);
        for t in 0..titles {
            for &w in words.get(t) {
                if seen[w as usize] != t as u32 {
                    seen[w as usize] = t as u32;
                    postings[fill[w as usize] as usize] = t as u32;
                    fill[w as usize] += 1;
                }
            }
        }
        drop((seen, fill));
        let word_chars = (0..lexicon_words).map(|w| {
            let start = if w == 0 { 0 } else { char_ends[w - 1] };
            &chars[start..char_ends[w]]
        });
        let word_postings =
            (0..lexicon_words).map(|w| &postings[counts[w] as usize..counts[w + 1] as usize]);
        let lexicon = Lexicon::build(word_chars, word_postings);
        drop(postings);

        words.shrink_to_fit();
        RankIndex {
            page_ids,
            title_lens,
            words,
            slot_of,
            free_slots: ChunkedVec::default(),
            lexicon,
        }
    }
}

#[cfg(test)]
mod tests;
