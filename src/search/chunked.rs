//! Arrays whose copies share storage: the building blocks of a [`RankIndex`]
//! and of the corpus snapshot, which a write copies in microseconds and changes
//! one page at a time.
//!
//! Each structure is cut into chunks of a fixed number of elements, each chunk
//! behind an `Arc`. A clone copies the list of chunk pointers only (one pointer
//! and one reference count per chunk: about 10 µs for a million-title index);
//! a change copies the one chunk it touches when another copy still shares it
//! (`Arc::make_mut`), and changes it in place when none does. So a corpus
//! snapshot that a scoring still reads is never changed, and the next snapshot
//! costs only the chunks its pages touched.
//!
//! [`RankIndex`]: super::rank::RankIndex

use std::sync::Arc;

/// Asks the CPU to load the cache line holding `p` (x86-64's `prefetcht0`; a
/// no-op elsewhere). Scoring reads the titles of a list of candidates in an
/// order no hardware prefetcher can guess, two dependent cache misses each;
/// asked a few titles ahead, they overlap with the scoring of the ones before.
#[inline]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults and changes no memory,
    // whatever the address (every caller passes one inside or just past a live
    // allocation anyway).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Element `i`'s chunk and its place in that chunk, in chunks of `2^BITS`.
#[inline]
const fn locate<const BITS: u32>(i: usize) -> (usize, usize) {
    (i >> BITS, i & ((1 << BITS) - 1))
}

/// A vector of `T` in chunks of `2^BITS` elements (all full but the last).
#[derive(Debug, Clone, Default)]
pub(crate) struct ChunkedVec<T, const BITS: u32> {
    chunks: Vec<Arc<Vec<T>>>,
    len: usize,
}

impl<T: Clone, const BITS: u32> ChunkedVec<T, BITS> {
    const CHUNK: usize = 1 << BITS;

    /// The elements of `items`, in order.
    #[cfg(test)]
    pub fn from_vec(items: Vec<T>) -> Self {
        let len = items.len();
        let mut chunks = Vec::with_capacity(len.div_ceil(Self::CHUNK));
        let mut items = items.into_iter();
        loop {
            let chunk: Vec<T> = items.by_ref().take(Self::CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            chunks.push(Arc::new(chunk));
        }
        Self { chunks, len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Element `i`; panics past the end, like a slice.
    pub fn get(&self, i: usize) -> &T {
        let (c, k) = locate::<BITS>(i);
        &self.chunks[c][k]
    }

    /// Element `i`, for writing (its chunk copied first when shared).
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        let (c, k) = locate::<BITS>(i);
        &mut Arc::make_mut(&mut self.chunks[c])[k]
    }

    pub fn set(&mut self, i: usize, value: T) {
        *self.get_mut(i) = value;
    }

    pub fn push(&mut self, value: T) {
        if locate::<BITS>(self.len).1 == 0 {
            let mut chunk = Vec::with_capacity(Self::CHUNK);
            chunk.push(value);
            self.chunks.push(Arc::new(chunk));
        } else {
            let last = self.chunks.last_mut().expect("a partly filled chunk");
            Arc::make_mut(last).push(value);
        }
        self.len += 1;
    }

    pub fn pop(&mut self) -> Option<T> {
        let last = self.chunks.last_mut()?;
        let value = Arc::make_mut(last).pop();
        if last.is_empty() {
            self.chunks.pop();
        }
        self.len -= 1;
        value
    }

    /// Elements `start..start + n`, when they lie in one chunk and before the
    /// end.
    pub fn run(&self, start: usize, n: usize) -> Option<&[T]> {
        let (c, k) = locate::<BITS>(start);
        self.chunks.get(c)?.get(k..k + n)
    }

    /// Copies the elements from `start` on into `out`, as many as it holds
    /// and there are (a run that may cross chunks, copied chunk by chunk);
    /// returns how many.
    pub fn copy_run(&self, start: usize, out: &mut [T]) -> usize
    where
        T: Copy,
    {
        let n = out.len().min(self.len.saturating_sub(start));
        let mut done = 0;
        while done < n {
            let (c, k) = locate::<BITS>(start + done);
            let chunk = &self.chunks[c][k..];
            let take = chunk.len().min(n - done);
            out[done..done + take].copy_from_slice(&chunk[..take]);
            done += take;
        }
        n
    }

    /// The elements in order, chunk by chunk.
    #[cfg(test)]
    pub fn chunks(&self) -> impl Iterator<Item = &[T]> {
        self.chunks.iter().map(|c| c.as_slice())
    }

    /// Heap bytes of the chunks and the chunk list (each shared chunk counted
    /// once per copy that holds it).
    pub fn heap_bytes(&self) -> usize {
        chunks_heap_bytes(&self.chunks, |c| {
            c.capacity() * std::mem::size_of::<T>() + 2 * std::mem::size_of::<usize>()
        })
    }
}

/// Heap bytes of a list of shared chunks: the list, and `chunk_bytes` of each
/// chunk (each shared chunk counted once per copy that holds it).
pub(crate) fn chunks_heap_bytes<C>(
    chunks: &Vec<Arc<C>>,
    chunk_bytes: impl Fn(&C) -> usize,
) -> usize {
    chunks.capacity() * std::mem::size_of::<Arc<C>>()
        + chunks.iter().map(|c| chunk_bytes(c)).sum::<usize>()
}

/// Short lists of `T` stored back to back: list `k` is
/// `items[starts[k]..starts[k + 1]]`. One chunk of [`ChunkedLists`], and of the
/// rank index's postings.
#[derive(Debug, Clone)]
pub(crate) struct ListChunk<T> {
    starts: Vec<u32>,
    items: Vec<T>,
}

impl<T> Default for ListChunk<T> {
    fn default() -> Self {
        Self {
            starts: vec![0],
            items: Vec::new(),
        }
    }
}

impl<T: Copy> ListChunk<T> {
    /// List `k`; panics past the end.
    #[inline]
    pub fn get(&self, k: usize) -> &[T] {
        &self.items[self.starts[k] as usize..self.starts[k + 1] as usize]
    }

    /// Appends the concatenation of `parts` as the last list.
    pub fn push_concat(&mut self, parts: &[&[T]]) {
        for part in parts {
            self.items.extend_from_slice(part);
        }
        self.starts.push(self.items.len() as u32);
    }

    /// Appends `list`'s items to the last list.
    pub fn extend_last(&mut self, list: &[T]) {
        self.items.extend_from_slice(list);
        *self.starts.last_mut().expect("a start") = self.items.len() as u32;
    }

    /// Replaces list `k` with `list`. Cost: the lists after it shifted.
    pub fn set(&mut self, k: usize, list: &[T]) {
        let (start, end) = (self.starts[k] as usize, self.starts[k + 1] as usize);
        self.items.splice(start..end, list.iter().copied());
        let grown = list.len() as i64 - (end - start) as i64;
        if grown != 0 {
            for s in &mut self.starts[k + 1..] {
                *s = (i64::from(*s) + grown) as u32;
            }
        }
    }

    /// Applies `f` to every item of every list, in place.
    pub fn for_each_mut(&mut self, f: impl FnMut(&mut T)) {
        self.items.iter_mut().for_each(f);
    }

    /// Releases the items' growth slack (after a bulk build).
    pub fn shrink_items(&mut self) {
        self.items.shrink_to_fit();
    }

    /// Releases the growth slack of the items and of the list bounds.
    pub fn shrink_to_fit(&mut self) {
        self.items.shrink_to_fit();
        self.starts.shrink_to_fit();
    }

    /// Heap bytes of the lists and their bounds.
    pub fn heap_bytes(&self) -> usize {
        self.items.capacity() * std::mem::size_of::<T>() + self.starts.capacity() * 4
    }
}

/// A sequence of short lists of `T` (a title's words, a word's chars), indexed
/// from 0, in chunks of `2^BITS` lists stored back to back.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChunkedLists<T, const BITS: u32> {
    chunks: Vec<Arc<ListChunk<T>>>,
    len: usize,
}

impl<T: Copy, const BITS: u32> ChunkedLists<T, BITS> {
    pub fn len(&self) -> usize {
        self.len
    }

    /// List `i`; panics past the end.
    pub fn get(&self, i: usize) -> &[T] {
        let (c, k) = locate::<BITS>(i);
        self.chunks[c].get(k)
    }

    /// Asks the CPU to start loading where list `i` begins and ends, so that a
    /// [`prefetch_items`](Self::prefetch_items) and then a [`get`](Self::get) of it
    /// a little later find them in cache. A hint only: no effect but on time, and
    /// none at all past the end.
    #[inline]
    pub fn prefetch_bounds(&self, i: usize) {
        let (c, k) = locate::<BITS>(i);
        if let Some(chunk) = self.chunks.get(c) {
            prefetch(chunk.starts.as_ptr().wrapping_add(k));
        }
    }

    /// Asks the CPU to start loading list `i`'s items (reads its bounds, which
    /// should be in cache by now: see [`prefetch_bounds`](Self::prefetch_bounds)).
    #[inline]
    pub fn prefetch_items(&self, i: usize) {
        let (c, k) = locate::<BITS>(i);
        if let Some(chunk) = self.chunks.get(c) {
            if let Some(&start) = chunk.starts.get(k) {
                prefetch(chunk.items.as_ptr().wrapping_add(start as usize));
            }
        }
    }

    /// Appends `list` as the last list.
    pub fn push(&mut self, list: &[T]) {
        self.push_concat(&[list]);
    }

    /// Appends the concatenation of `parts` as the last list (no list of its own
    /// is made first).
    pub fn push_concat(&mut self, parts: &[&[T]]) {
        if locate::<BITS>(self.len).1 == 0 {
            self.chunks.push(Arc::new(ListChunk::default()));
        }
        Arc::make_mut(self.chunks.last_mut().expect("a chunk")).push_concat(parts);
        self.len += 1;
    }

    /// Applies `f` to every item of every list, in place (shared chunks are
    /// copied first).
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut T)) {
        for chunk in &mut self.chunks {
            Arc::make_mut(chunk).for_each_mut(&mut f);
        }
    }

    /// Replaces list `i` with `list`. Cost: the rest of its chunk shifted (and the
    /// chunk copied first when shared).
    pub fn set(&mut self, i: usize, list: &[T]) {
        let (c, k) = locate::<BITS>(i);
        Arc::make_mut(&mut self.chunks[c]).set(k, list);
    }

    /// Releases growth slack (after a bulk build).
    pub fn shrink_to_fit(&mut self) {
        for chunk in &mut self.chunks {
            if let Some(chunk) = Arc::get_mut(chunk) {
                chunk.shrink_to_fit();
            }
        }
    }

    /// Heap bytes, as for [`ChunkedVec::heap_bytes`].
    pub fn heap_bytes(&self) -> usize {
        chunks_heap_bytes(&self.chunks, |c| c.heap_bytes() + 64)
    }
}

/// Keys per [`IdMap`] chunk.
const ID_BITS: u32 = if cfg!(test) { 8 } else { 12 };
const IDS_PER_CHUNK: usize = 1 << ID_BITS;
/// The value an [`IdMap`] chunk holds for an absent key.
const ABSENT: u32 = u32::MAX;

/// `IDS_PER_CHUNK` consecutive keys' values.
#[derive(Debug, Clone)]
struct IdChunk {
    values: [u32; IDS_PER_CHUNK],
    present: u32,
}

/// A map from `i64` keys that come in runs (page ids: SQLite hands them out in
/// order) to `u32` values other than `u32::MAX`: chunks of `IDS_PER_CHUNK`
/// consecutive keys, sorted, each behind an `Arc` (4 bytes a key for dense
/// keys; a copy shares the chunks).
#[derive(Debug, Clone, Default)]
pub(crate) struct IdMap {
    /// (first key / IDS_PER_CHUNK, chunk), by that number.
    chunks: Vec<(i64, Arc<IdChunk>)>,
    len: usize,
}

impl IdMap {
    fn split(key: i64) -> (i64, usize) {
        (
            key.div_euclid(IDS_PER_CHUNK as i64),
            key.rem_euclid(IDS_PER_CHUNK as i64) as usize,
        )
    }

    fn find(&self, high: i64) -> Result<usize, usize> {
        self.chunks.binary_search_by_key(&high, |(h, _)| *h)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn get(&self, key: i64) -> Option<u32> {
        let (high, low) = Self::split(key);
        let c = self.find(high).ok()?;
        let v = self.chunks[c].1.values[low];
        (v != ABSENT).then_some(v)
    }

    /// Sets `key`'s value; returns the value it had.
    pub fn insert(&mut self, key: i64, value: u32) -> Option<u32> {
        debug_assert_ne!(value, ABSENT);
        let (high, low) = Self::split(key);
        let c = match self.find(high) {
            Ok(c) => c,
            Err(c) => {
                let empty = IdChunk {
                    values: [ABSENT; IDS_PER_CHUNK],
                    present: 0,
                };
                self.chunks.insert(c, (high, Arc::new(empty)));
                c
            }
        };
        let chunk = Arc::make_mut(&mut self.chunks[c].1);
        let old = std::mem::replace(&mut chunk.values[low], value);
        if old == ABSENT {
            chunk.present += 1;
            self.len += 1;
            None
        } else {
            Some(old)
        }
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: i64) -> Option<u32> {
        let (high, low) = Self::split(key);
        let c = self.find(high).ok()?;
        if self.chunks[c].1.values[low] == ABSENT {
            return None;
        }
        let chunk = Arc::make_mut(&mut self.chunks[c].1);
        let old = std::mem::replace(&mut chunk.values[low], ABSENT);
        chunk.present -= 1;
        if chunk.present == 0 {
            self.chunks.remove(c);
        }
        self.len -= 1;
        Some(old)
    }

    pub fn heap_bytes(&self) -> usize {
        self.chunks.capacity() * 16 + self.chunks.len() * (IDS_PER_CHUNK * 4 + 24)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_is_unchanged_by_writes_to_the_original() {
        let mut v: ChunkedVec<u32, 2> = ChunkedVec::from_vec((0..10).collect());
        let copy = v.clone();
        v.set(5, 50);
        v.push(10);
        assert_eq!(v.pop(), Some(10));
        assert_eq!(v.pop(), Some(9));
        assert_eq!(*v.get(5), 50);
        assert_eq!(*copy.get(5), 5);
        assert_eq!(copy.len(), 10);
        assert_eq!(v.len(), 9);
        assert_eq!(
            copy.chunks().flatten().copied().collect::<Vec<_>>(),
            (0..10).collect::<Vec<_>>()
        );
        // Untouched chunks stay shared.
        assert!(Arc::ptr_eq(&v.chunks[0], &copy.chunks[0]));
        assert!(!Arc::ptr_eq(&v.chunks[1], &copy.chunks[1]));
        while v.pop().is_some() {}
        assert_eq!(v.len(), 0);
        assert!(v.chunks.is_empty());
    }

    #[test]
    fn lists_are_replaced_in_place_and_clones_keep_theirs() {
        let mut lists: ChunkedLists<u8, 1> = ChunkedLists::default();
        for list in [&b"ab"[..], b"", b"cde", b"f", b"gh"] {
            lists.push(list);
        }
        let copy = lists.clone();
        lists.set(2, b"xyzzy");
        lists.set(0, b"");
        lists.set(3, b"ff");
        let got: Vec<&[u8]> = (0..lists.len()).map(|i| lists.get(i)).collect();
        assert_eq!(got, [&b""[..], b"", b"xyzzy", b"ff", b"gh"]);
        let kept: Vec<&[u8]> = (0..copy.len()).map(|i| copy.get(i)).collect();
        assert_eq!(kept, [&b"ab"[..], b"", b"cde", b"f", b"gh"]);
        assert!(Arc::ptr_eq(&lists.chunks[2], &copy.chunks[2]));
    }

    #[test]
    fn an_id_map_holds_negative_sparse_and_dense_keys() {
        let mut map = IdMap::default();
        let keys = [-300i64, -1, 0, 5, 255, 256, 1 << 40, 7];
        for (v, &k) in keys.iter().enumerate() {
            assert_eq!(map.insert(k, v as u32), None);
        }
        let copy = map.clone();
        assert_eq!(map.insert(5, 50), Some(3));
        for (v, &k) in keys.iter().enumerate() {
            assert_eq!(copy.get(k), Some(v as u32));
        }
        assert_eq!(map.get(5), Some(50));
        assert_eq!(map.get(6), None);
        assert_eq!(map.len(), keys.len());
        for &k in &keys {
            assert!(map.remove(k).is_some());
            assert_eq!(map.remove(k), None);
        }
        assert_eq!(map.len(), 0);
        assert!(map.chunks.is_empty());
        assert_eq!(copy.len(), keys.len());
    }
}
