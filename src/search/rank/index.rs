//! The per-corpus index: each title as a sequence of word ids, and the lexicon of
//! distinct words with the titles that use them (`lexicon`).
//!
//! Built once per candidate snapshot with [`RankIndex::build`], then either read
//! concurrently by any number of scorings (plain owned data, so `Send + Sync`)
//! or changed one page at a time with [`RankIndex::upsert`] and
//! [`RankIndex::remove`], which touch only the changed title's words. The ranking
//! of any query is the same after any sequence of changes as on a fresh build
//! over the same `(page id, title)` pairs: nothing corpus-wide is precomputed
//! (word rarity is counted from the postings at query time), and no result
//! depends on where a title is stored.
//!
//! Title storage is by **slot**: a removed page's slot is reused by the next new
//! page. Sizes, for `N` titles with `W` word occurrences and `D` distinct words:
//! titles `25·N + 4·W` bytes plus a page-id map (about `13·N` bytes with its
//! slack), words `40·D + 4·(chars of D) + 20·D`, postings at most `4·W`; see
//! [`RankIndex::heap_bytes`]. A query additionally allocates about
//! `4·D + 12·N` bytes of scratch, freed when it returns.

use std::collections::HashMap;

use super::fold::fold;
use super::lexicon::Lexicon;
use crate::search::normalize::normalize;

/// One title as the scorer sees it: its page id and its words, in order, as
/// lexicon ids. A free slot has no words.
#[derive(Debug, Clone, Default)]
pub(super) struct Title {
    pub page_id: i64,
    pub words: Box<[u32]>,
}

/// Per-corpus ranking index: titles as word-id sequences, the lexicon of distinct
/// folded words, and for each word the titles that contain it.
///
/// `Clone` copies everything (tens of ms at 100,000 titles: many small
/// allocations), so a shared index is better updated as one of two copies than
/// cloned per change (see `docs/search-quality.md`).
#[derive(Debug, Clone, Default)]
pub struct RankIndex {
    /// By slot (see the module docs).
    pub(super) titles: Vec<Title>,
    /// Words per title, saturated at 255: the copy the per-candidate score bound
    /// reads, small enough (1 byte a title) to stay in cache.
    title_lens: Vec<u8>,
    slot_of: HashMap<i64, u32>,
    free_slots: Vec<u32>,
    pub(super) lexicon: Lexicon,
}

/// The folded words of a raw title, in order (`normalize`, then accent folding).
fn title_words(raw: &str) -> Vec<Vec<char>> {
    fold(&normalize(raw))
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(|w| w.chars().collect())
        .collect()
}

impl RankIndex {
    /// Builds the index from `(page_id, raw display title)` pairs. Titles are
    /// normalized here (`normalize`, then accent folding); a title that normalizes
    /// to nothing is kept (it counts in `len`) but can never match. A page id
    /// given twice keeps its last title, as two [`RankIndex::upsert`]s would.
    pub fn build<'a>(titles: impl IntoIterator<Item = (i64, &'a str)>) -> RankIndex {
        let input: Vec<(i64, &str)> = titles.into_iter().collect();
        let mut last: HashMap<i64, usize> = HashMap::with_capacity(input.len());
        for (i, &(page_id, _)) in input.iter().enumerate() {
            last.insert(page_id, i);
        }

        // Words get temporary ids in order of first use, then the lexicon's.
        let mut temp_ids: HashMap<Vec<char>, u32> = HashMap::new();
        let mut distinct: Vec<Vec<char>> = Vec::new();
        let mut titles: Vec<Title> = Vec::with_capacity(last.len());
        let mut slot_of: HashMap<i64, u32> = HashMap::with_capacity(last.len());
        for (i, &(page_id, raw)) in input.iter().enumerate() {
            if last[&page_id] != i {
                continue;
            }
            let words: Vec<u32> = title_words(raw)
                .into_iter()
                .map(|w| {
                    let next = distinct.len() as u32;
                    *temp_ids.entry(w).or_insert_with_key(|w| {
                        distinct.push(w.clone());
                        next
                    })
                })
                .collect();
            slot_of.insert(page_id, titles.len() as u32);
            titles.push(Title {
                page_id,
                words: words.into_boxed_slice(),
            });
        }
        drop(temp_ids);

        let (mut lexicon, renumber) = Lexicon::from_words(&distinct);
        drop(distinct);
        let mut seen = vec![u32::MAX; renumber.len()];
        for (t, title) in titles.iter_mut().enumerate() {
            for w in title.words.iter_mut() {
                *w = renumber[*w as usize];
                if seen[*w as usize] != t as u32 {
                    seen[*w as usize] = t as u32;
                    lexicon.push_posting(*w, t as u32);
                }
            }
        }
        lexicon.shrink_to_fit();
        RankIndex {
            title_lens: titles
                .iter()
                .map(|t| t.words.len().min(255) as u8)
                .collect(),
            titles,
            slot_of,
            free_slots: Vec::new(),
            lexicon,
        }
    }

    /// Sets the title of page `page_id` (a raw display title, normalized as in
    /// [`RankIndex::build`]), adding the page when new. Cost: proportional to the
    /// old and new title's words (a binary search and an insertion or removal in
    /// each word's postings and, for a word new to or leaving the corpus, in the
    /// sorted list of words of its length), independent of the number of titles
    /// otherwise. A title whose words did not change costs only its
    /// normalization.
    pub fn upsert(&mut self, page_id: i64, title: &str) {
        let words = title_words(title);
        let t = match self.slot_of.get(&page_id) {
            Some(&t) => {
                let old = &self.titles[t as usize].words;
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
                    self.titles.push(Title::default());
                    self.title_lens.push(0);
                    self.titles.len() as u32 - 1
                });
                self.slot_of.insert(page_id, t);
                t
            }
        };
        let ids: Vec<u32> = words
            .iter()
            .map(|w| self.lexicon.add_posting(w, t))
            .collect();
        self.title_lens[t as usize] = ids.len().min(255) as u8;
        self.titles[t as usize] = Title {
            page_id,
            words: ids.into_boxed_slice(),
        };
    }

    /// Removes page `page_id`; returns whether it was there. Cost: proportional
    /// to its title's words, as for [`RankIndex::upsert`].
    pub fn remove(&mut self, page_id: i64) -> bool {
        let Some(t) = self.slot_of.remove(&page_id) else {
            return false;
        };
        self.clear_slot(t);
        self.titles[t as usize] = Title::default();
        self.free_slots.push(t);
        true
    }

    /// Takes slot `t`'s words out of the postings (and out of the lexicon, for
    /// words no other title uses).
    fn clear_slot(&mut self, t: u32) {
        let mut ids = std::mem::take(&mut self.titles[t as usize].words).into_vec();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            self.lexicon.remove_posting(id, t);
        }
        self.title_lens[t as usize] = 0;
    }

    /// Number of titles (pages) in the index, including ones that can never match.
    pub fn len(&self) -> usize {
        self.slot_of.len()
    }

    /// Whether the index holds no titles.
    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty()
    }

    /// Number of titles that count for word rarity: all of them.
    pub(super) fn live_len(&self) -> usize {
        self.slot_of.len()
    }

    /// Number of title slots (live and free): the length of any array indexed by
    /// slot.
    pub(super) fn slot_count(&self) -> usize {
        self.titles.len()
    }

    /// Title slots that contain lexicon word `w`.
    pub(super) fn postings(&self, w: u32) -> &[u32] {
        self.lexicon.postings(w)
    }

    /// Number of words of the title in slot `t` (saturated at 255).
    pub(super) fn title_len(&self, t: u32) -> u32 {
        u32::from(self.title_lens[t as usize])
    }

    /// Word ids of the title in slot `t`, in title order.
    pub(super) fn words(&self, t: u32) -> &[u32] {
        &self.titles[t as usize].words
    }

    /// Approximate heap size of the index in bytes (for capacity planning;
    /// without allocator overhead).
    pub fn heap_bytes(&self) -> usize {
        let title_words: usize = self.titles.iter().map(|t| t.words.len() * 4).sum();
        // hashbrown: one control byte per bucket plus the entries.
        let map = self.slot_of.capacity() * (std::mem::size_of::<(i64, u32)>() + 1);
        self.titles.capacity() * std::mem::size_of::<Title>()
            + title_words
            + self.title_lens.capacity()
            + map
            + self.free_slots.capacity() * 4
            + self.lexicon.heap_bytes()
    }
}

#[cfg(test)]
mod tests;
