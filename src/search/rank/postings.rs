//! Each word's postings: the title slots using it, ascending, no repeats.
//!
//! Laid out like the [`chunked`](crate::search::chunked) arrays, so that a copy of the
//! index shares them and a page change copies little: words come in chunks of
//! [`WORDS_PER_CHUNK`], whose short lists (most words are in a few titles) are
//! stored back to back in one array. A list longer than [`BIG`] moves out into
//! blocks of its own, each behind an `Arc`, so that adding a title to a common
//! word (`for` is in 460,000 of a million titles) copies one block of at most
//! `2 × BLOCK` slots, never the whole list.
//!
//! A list of more than [`DENSE_FROM`] slots also keeps them as a bit set (a
//! [`DenseSet`]), in chunks behind `Arc`s likewise: a ranking then ORs a common
//! word's titles into a query word's set, rather than walking its postings one
//! by one (`for` at 1.1M: 17,000 u64s instead of 460,000 slots).

use std::sync::Arc;

use crate::search::chunked::{chunks_heap_bytes, ListChunk};

// Unit tests run with tiny chunks and blocks, so that small corpora split and
// merge them as a large one does.
const WORD_BITS: u32 = if cfg!(test) { 2 } else { 8 };
/// Words per chunk.
pub(super) const WORDS_PER_CHUNK: usize = 1 << WORD_BITS;
/// Longest list kept in its chunk's shared array.
const BIG: usize = if cfg!(test) { 6 } else { 512 };
/// Slots a block of a long list holds after a split (a block splits at twice this).
const BLOCK: usize = if cfg!(test) { 4 } else { 1024 };

/// Longest list kept without a [`DenseSet`] too (a set is dropped again when
/// its list falls to half this): at 1.1M titles, 11 words, whose sets take
/// 1.5 MB, a bit per slot where their postings take 32 bits per title.
const DENSE_FROM: usize = if cfg!(test) { 8 } else { 1 << 16 };
/// u64s per chunk of a [`DenseSet`] (256: 16,384 slots, 2 KB; a create
/// copies one per common word of its title while a snapshot shares it).
const DENSE_CHUNK: usize = if cfg!(test) { 2 } else { 256 };

/// The slots of a long list as a bit set: bit `t % 64` of u64 `t / 64` is set
/// for slot `t`. Chunked, so that a copy of the index shares it and a change
/// copies one chunk; slots past the last chunk are not in it.
#[derive(Debug, Clone, Default)]
pub(super) struct DenseSet {
    chunks: Vec<Arc<[u64]>>,
}

impl DenseSet {
    fn of<'a>(slots: impl Iterator<Item = &'a u32>) -> Self {
        let mut set = DenseSet::default();
        for &t in slots {
            set.insert(t);
        }
        set
    }

    fn insert(&mut self, t: u32) {
        let (c, k, bit) = Self::place(t);
        while self.chunks.len() <= c {
            self.chunks.push(Arc::from(vec![0u64; DENSE_CHUNK]));
        }
        Arc::make_mut(&mut self.chunks[c])[k] |= bit;
    }

    fn remove(&mut self, t: u32) {
        let (c, k, bit) = Self::place(t);
        if let Some(chunk) = self.chunks.get_mut(c) {
            Arc::make_mut(chunk)[k] &= !bit;
        }
    }

    /// Chunk, u64 within it, and bit of slot `t`.
    #[inline]
    fn place(t: u32) -> (usize, usize, u64) {
        let word = t as usize >> 6;
        (word / DENSE_CHUNK, word % DENSE_CHUNK, 1u64 << (t & 63))
    }

    /// Whether slot `t` is in the set.
    #[inline]
    pub fn contains(&self, t: u32) -> bool {
        let (c, k, bit) = Self::place(t);
        self.chunks.get(c).is_some_and(|chunk| chunk[k] & bit != 0)
    }

    /// The set's u64s in order, from the one of slots `0..64` (as long as its
    /// chunks reach; the slots after are not in it).
    pub fn words(&self) -> impl Iterator<Item = &u64> {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    fn heap_bytes(&self) -> usize {
        self.chunks.len() * (DENSE_CHUNK * 8 + 16)
    }
}

/// A long list: non-empty ascending blocks, each ascending; also a
/// [`DenseSet`] of them when longer than [`DENSE_FROM`].
#[derive(Debug, Clone, Default)]
struct BlockList {
    len: u32,
    blocks: Vec<Arc<[u32]>>,
    dense: Option<DenseSet>,
}

impl BlockList {
    fn from_slice(slots: &[u32]) -> Self {
        Self {
            len: slots.len() as u32,
            blocks: slots.chunks(BLOCK).map(Arc::from).collect(),
            dense: (slots.len() > DENSE_FROM).then(|| DenseSet::of(slots.iter())),
        }
    }

    /// The block that holds `t`, or where it would go.
    fn block_of(&self, t: u32) -> usize {
        self.blocks
            .partition_point(|b| *b.last().expect("blocks are not empty") < t)
            .min(self.blocks.len().saturating_sub(1))
    }

    fn insert(&mut self, t: u32) {
        let b = self.block_of(t);
        let block = &self.blocks[b];
        let Err(at) = block.binary_search(&t) else {
            return;
        };
        let grown = inserted(block, at, t);
        if grown.len() > 2 * BLOCK {
            let (a, b2) = grown.split_at(grown.len() / 2);
            self.blocks.splice(b..=b, [Arc::from(a), Arc::from(b2)]);
        } else {
            self.blocks[b] = Arc::from(grown);
        }
        self.len += 1;
        match &mut self.dense {
            Some(dense) => dense.insert(t),
            None if self.len as usize > DENSE_FROM => {
                self.dense = Some(DenseSet::of(self.blocks.iter().flat_map(|b| b.iter())));
            }
            None => {}
        }
    }

    fn remove(&mut self, t: u32) {
        let b = self.block_of(t);
        let block = &self.blocks[b];
        let Ok(at) = block.binary_search(&t) else {
            return;
        };
        if block.len() == 1 {
            self.blocks.remove(b);
        } else {
            self.blocks[b] = Arc::from(removed(block, at));
        }
        self.len -= 1;
        if (self.len as usize) < DENSE_FROM / 2 {
            self.dense = None;
        } else if let Some(dense) = &mut self.dense {
            dense.remove(t);
        }
    }
}

/// `list` with `t` inserted at `at`.
#[inline]
fn inserted(list: &[u32], at: usize, t: u32) -> Vec<u32> {
    let mut grown = Vec::with_capacity(list.len() + 1);
    grown.extend_from_slice(&list[..at]);
    grown.push(t);
    grown.extend_from_slice(&list[at..]);
    grown
}

/// `list` without its element at `at`.
#[inline]
fn removed(list: &[u32], at: usize) -> Vec<u32> {
    let mut left = Vec::with_capacity(list.len() - 1);
    left.extend_from_slice(&list[..at]);
    left.extend_from_slice(&list[at + 1..]);
    left
}

/// The postings of `WORDS_PER_CHUNK` consecutive word ids.
#[derive(Debug, Clone, Default)]
struct Chunk {
    /// Word `k`'s short list is `small.get(k)` (empty when its list is long).
    small: ListChunk<u32>,
    /// Long lists, by word `k`, sorted by `k`.
    big: Vec<(u16, BlockList)>,
}

impl Chunk {
    fn big_at(&self, k: usize) -> Result<usize, usize> {
        self.big.binary_search_by_key(&(k as u16), |(j, _)| *j)
    }
}

/// Word id → ascending title slots (see the module docs).
#[derive(Debug, Clone, Default)]
pub(super) struct Postings {
    chunks: Vec<Arc<Chunk>>,
    /// Number of word ids (the id space).
    len: usize,
}

/// The blocks of one word's postings, in order.
pub(super) enum Blocks<'a> {
    Small(Option<&'a [u32]>),
    Big(std::slice::Iter<'a, Arc<[u32]>>),
}

impl<'a> Iterator for Blocks<'a> {
    type Item = &'a [u32];

    fn next(&mut self) -> Option<&'a [u32]> {
        match self {
            Blocks::Small(s) => s.take(),
            Blocks::Big(blocks) => blocks.next().map(|b| &b[..]),
        }
    }
}

impl Postings {
    /// The postings of `lists.len()` word ids, list `w` being word `w`'s
    /// (ascending, no repeats).
    pub fn from_lists<'a>(lists: impl ExactSizeIterator<Item = &'a [u32]>) -> Self {
        let mut postings = Postings::default();
        for list in lists {
            postings.push_word();
            let w = postings.len - 1;
            let chunk = Arc::get_mut(postings.chunks.last_mut().expect("a chunk"))
                .expect("a chunk being built is not shared");
            let k = w & (WORDS_PER_CHUNK - 1);
            if list.len() > BIG {
                chunk.big.push((k as u16, BlockList::from_slice(list)));
            } else {
                chunk.small.extend_last(list);
            }
        }
        for chunk in &mut postings.chunks {
            if let Some(chunk) = Arc::get_mut(chunk) {
                chunk.small.shrink_items();
            }
        }
        postings
    }

    /// Number of word ids.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Adds word id `len()`, with no postings.
    pub fn push_word(&mut self) {
        if self.len & (WORDS_PER_CHUNK - 1) == 0 {
            self.chunks.push(Arc::new(Chunk::default()));
        }
        let chunk = Arc::make_mut(self.chunks.last_mut().expect("a chunk"));
        chunk.small.push_concat(&[]);
        self.len += 1;
    }

    fn chunk(&self, w: u32) -> (&Chunk, usize) {
        let w = w as usize;
        (&self.chunks[w >> WORD_BITS], w & (WORDS_PER_CHUNK - 1))
    }

    /// Word `w`'s postings, block by block.
    pub fn blocks(&self, w: u32) -> Blocks<'_> {
        let (chunk, k) = self.chunk(w);
        match chunk.big_at(k) {
            Ok(b) => Blocks::Big(chunk.big[b].1.blocks.iter()),
            Err(_) => Blocks::Small(Some(chunk.small.get(k))),
        }
    }

    /// Word `w`'s postings as a bit set, when its list is long enough to keep
    /// one (see [`DENSE_FROM`]).
    pub fn dense(&self, w: u32) -> Option<&DenseSet> {
        let (chunk, k) = self.chunk(w);
        let b = chunk.big_at(k).ok()?;
        chunk.big[b].1.dense.as_ref()
    }

    /// Number of titles using word `w`.
    pub fn count(&self, w: u32) -> usize {
        let (chunk, k) = self.chunk(w);
        match chunk.big_at(k) {
            Ok(b) => chunk.big[b].1.len as usize,
            Err(_) => chunk.small.get(k).len(),
        }
    }

    /// Adds slot `t` to word `w`'s postings (nothing when it is there).
    pub fn insert(&mut self, w: u32, t: u32) {
        let w = w as usize;
        let chunk = Arc::make_mut(&mut self.chunks[w >> WORD_BITS]);
        let k = w & (WORDS_PER_CHUNK - 1);
        match chunk.big_at(k) {
            Ok(b) => chunk.big[b].1.insert(t),
            Err(b) => {
                let list = chunk.small.get(k);
                let Err(at) = list.binary_search(&t) else {
                    return;
                };
                let grown = inserted(list, at, t);
                if grown.len() > BIG {
                    chunk.small.set(k, &[]);
                    chunk
                        .big
                        .insert(b, (k as u16, BlockList::from_slice(&grown)));
                } else {
                    chunk.small.set(k, &grown);
                }
            }
        }
    }

    /// Takes slot `t` out of word `w`'s postings (nothing when it is not there).
    pub fn remove(&mut self, w: u32, t: u32) {
        let w = w as usize;
        let chunk = Arc::make_mut(&mut self.chunks[w >> WORD_BITS]);
        let k = w & (WORDS_PER_CHUNK - 1);
        match chunk.big_at(k) {
            Ok(b) => {
                let list = &mut chunk.big[b].1;
                list.remove(t);
                if list.len == 0 {
                    chunk.big.remove(b);
                }
            }
            Err(_) => {
                let list = chunk.small.get(k);
                if let Ok(at) = list.binary_search(&t) {
                    let left = removed(list, at);
                    chunk.small.set(k, &left);
                }
            }
        }
    }

    /// Approximate heap bytes (shared blocks counted in every copy).
    pub fn heap_bytes(&self) -> usize {
        chunks_heap_bytes(&self.chunks, |c| {
            let big: usize = c
                .big
                .iter()
                .map(|(_, l)| {
                    l.blocks.len() * 32
                        + l.len as usize * 4
                        + l.dense.as_ref().map_or(0, DenseSet::heap_bytes)
                })
                .sum();
            c.small.heap_bytes() + big + 64
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(p: &Postings, w: u32) -> Vec<u32> {
        p.blocks(w).flatten().copied().collect()
    }

    #[test]
    fn lists_grow_into_blocks_and_shrink_back_to_nothing() {
        let mut p = Postings::from_lists([&[1u32, 5][..], &[][..]].into_iter());
        let copy = p.clone();
        let mut want: Vec<u32> = vec![1, 5];
        // Distinct slots in a scrambled order, enough to split blocks several times.
        for i in 0..5000u32 {
            let x = i * 7919 % 100_000;
            p.insert(0, x);
            if let Err(at) = want.binary_search(&x) {
                want.insert(at, x);
            }
        }
        assert_eq!(list(&p, 0), want);
        assert_eq!(p.count(0), want.len());
        assert!(p.blocks(0).count() > 2);
        assert!(p.blocks(0).all(|b| !b.is_empty() && b.len() <= 2 * BLOCK));
        for t in want.clone().into_iter().step_by(2) {
            p.remove(0, t);
        }
        let left: Vec<u32> = want.iter().copied().skip(1).step_by(2).collect();
        assert_eq!(list(&p, 0), left);
        for t in left {
            p.remove(0, t);
        }
        assert_eq!(p.count(0), 0);
        assert!(list(&p, 0).is_empty());
        assert_eq!(list(&copy, 0), [1, 5]);
        p.insert(1, 3);
        p.insert(1, 3);
        assert_eq!(list(&p, 1), [3]);
        assert!(list(&copy, 1).is_empty());
    }

    /// The slots a dense set holds, below `below`.
    fn dense_slots(p: &Postings, w: u32, below: u32) -> Option<Vec<u32>> {
        let dense = p.dense(w)?;
        let from_words: Vec<u32> = dense
            .words()
            .enumerate()
            .flat_map(|(k, &word)| {
                (0..64)
                    .filter(move |b| word >> b & 1 == 1)
                    .map(move |b| (k * 64 + b) as u32)
            })
            .collect();
        let from_contains: Vec<u32> = (0..below).filter(|&t| dense.contains(t)).collect();
        assert_eq!(from_words, from_contains);
        Some(from_contains)
    }

    #[test]
    fn a_long_enough_list_keeps_its_slots_as_a_bit_set_too_until_it_shrinks() {
        let built: Vec<u32> = (0..=DENSE_FROM as u32).map(|t| t * 3).collect();
        let mut p = Postings::from_lists([&built[..], &[1][..]].into_iter());
        assert_eq!(dense_slots(&p, 0, 1000), Some(built.clone()));
        assert_eq!(dense_slots(&p, 1, 1000), None);
        let copy = p.clone();
        // Grown past the bar by inserts, far past the first chunk.
        for t in [500u32, 2, 7, 40] {
            p.insert(1, t);
        }
        assert_eq!(dense_slots(&p, 1, 1000), None);
        let mut want: Vec<u32> = vec![1, 2, 7, 40, 500];
        for t in 100..(100 + DENSE_FROM as u32) {
            p.insert(1, t);
            want.push(t);
            want.sort_unstable();
            want.dedup();
            let dense = dense_slots(&p, 1, 1000);
            assert_eq!(dense.is_some(), want.len() > DENSE_FROM);
            if let Some(dense) = dense {
                assert_eq!(dense, want);
            }
        }
        assert!(p.dense(1).is_some());
        p.insert(0, 1);
        p.remove(0, 3);
        let mut changed = built.clone();
        changed.insert(1, 1);
        changed.retain(|&t| t != 3);
        assert_eq!(dense_slots(&p, 0, 1000), Some(changed.clone()));
        assert_eq!(dense_slots(&copy, 0, 1000), Some(built));
        assert_eq!(dense_slots(&copy, 1, 1000), None);
        // Shrunk to below half the bar: no set.
        for t in changed {
            p.remove(0, t);
            let left = list(&p, 0);
            match dense_slots(&p, 0, 1000) {
                Some(dense) => assert_eq!(dense, left),
                None => assert!(left.len() < DENSE_FROM / 2),
            }
        }
        assert!(p.dense(0).is_none());
    }
}
