//! The distinct folded words of a corpus, each with the titles that use it, kept
//! ready for the two ways a query reads them: a scan of the words near a query
//! word by their char signatures (typo matching, `neighbours` and `scan`) and a
//! binary search by chars (exact and prefix).
//!
//! Words have stable ids (reused after a word leaves the corpus), so that titles
//! can store word ids and an update touches only the words of the changed title.
//! Next to that, `buckets[l]` lists the live words of `l` chars sorted by chars
//! (so the words of a prefix are contiguous), in chunks of at most
//! [`BUCKET_CHUNK`] words, so that a scan reads contiguous arrays and a new word
//! shifts (and, when a snapshot shares it, copies) one chunk. Every part is
//! chunked (see [`crate::search::chunked`]): a copy of the lexicon shares its storage.

use std::sync::Arc;

pub(super) mod neighbours;
mod scan;

use super::postings::{Blocks, DenseSet, Postings};
use crate::search::chunked::{ChunkedLists, ChunkedVec};

/// Most words in one chunk of a bucket (a full chunk splits in two; tiny in
/// unit tests, so that small corpora split chunks too).
const BUCKET_CHUNK: usize = if cfg!(test) { 4 } else { 512 };

/// Up to [`BUCKET_CHUNK`] words of one length `l`, sorted by chars (parallel
/// arrays).
#[derive(Debug, Clone, Default)]
pub(super) struct BucketChunk {
    pub ids: Vec<u32>,
    /// The words' chars back to back, `l` per word.
    chars: Vec<char>,
    /// `sigs[k]`: word `k`'s char signature ([`scan::signature`]), which the
    /// whole-word lookup tests before comparing any chars.
    sigs: Vec<u64>,
    /// `head_sigs[k]`: the signature of word `k`'s first
    /// [`scan::HEAD_SIG_CHARS`] chars, for the head rule.
    head_sigs: Vec<u64>,
}

impl BucketChunk {
    /// The chars of the `k`-th word; `l` is the bucket's word length.
    pub fn word(&self, k: usize, l: usize) -> &[char] {
        &self.chars[k * l..][..l]
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    fn push(&mut self, id: u32, chars: &[char]) {
        self.chars.extend_from_slice(chars);
        self.ids.push(id);
        self.sigs.push(scan::signature(chars));
        self.head_sigs.push(scan::head_signature(chars));
    }

    fn insert(&mut self, at: usize, id: u32, chars: &[char]) {
        let l = chars.len();
        self.chars.splice(at * l..at * l, chars.iter().copied());
        self.ids.insert(at, id);
        self.sigs.insert(at, scan::signature(chars));
        self.head_sigs.insert(at, scan::head_signature(chars));
    }

    fn remove(&mut self, at: usize, l: usize) {
        self.chars.drain(at * l..(at + 1) * l);
        self.ids.remove(at);
        self.sigs.remove(at);
        self.head_sigs.remove(at);
    }

    /// Moves the second half of this chunk into a new one.
    fn split_off(&mut self, l: usize) -> BucketChunk {
        let at = self.len() / 2;
        BucketChunk {
            ids: self.ids.split_off(at),
            chars: self.chars.split_off(at * l),
            sigs: self.sigs.split_off(at),
            head_sigs: self.head_sigs.split_off(at),
        }
    }

    fn heap_bytes(&self) -> usize {
        self.ids.capacity() * 4
            + self.chars.capacity() * 4
            + self.sigs.capacity() * 8
            + self.head_sigs.capacity() * 8
    }
}

/// The live words of one length, sorted by chars, in chunks.
#[derive(Debug, Clone, Default)]
pub(super) struct Bucket {
    chunks: Vec<Arc<BucketChunk>>,
    len: usize,
}

/// A word's place in a bucket: chunk and index in it.
type At = (usize, usize);

impl Bucket {
    /// The chunks, in order.
    pub fn chunks(&self) -> impl Iterator<Item = &BucketChunk> {
        self.chunks.iter().map(|c| &**c)
    }

    /// Number of words.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Where the first word whose first `head.len()` chars are not below
    /// `head` is (`l`: this bucket's length, at least `head.len()`).
    fn lower_bound(&self, head: &[char], l: usize) -> At {
        let n = head.len();
        // The first chunk whose last word is not below `head`.
        let c = self.chunks.partition_point(|chunk| {
            let last = chunk.len() - 1;
            &chunk.word(last, l)[..n] < head
        });
        if c == self.chunks.len() {
            return (c, 0);
        }
        let chunk = &self.chunks[c];
        let k = partition_point(chunk.len(), |k| &chunk.word(k, l)[..n] < head);
        (c, k)
    }

    /// Calls `f` with the id of every word of this bucket (of `l` chars, more
    /// than `head` has) that starts with `head`, in sorted order.
    fn each_starting_with(&self, head: &[char], l: usize, mut f: impl FnMut(u32)) {
        let n = head.len();
        let (first_chunk, mut k) = self.lower_bound(head, l);
        for chunk in self.chunks.iter().skip(first_chunk) {
            while k < chunk.len() {
                if &chunk.word(k, l)[..n] != head {
                    return;
                }
                f(chunk.ids[k]);
                k += 1;
            }
            k = 0;
        }
    }

    /// Where `word` is (`Ok`) or would go (`Err`).
    fn position(&self, word: &[char]) -> Result<At, At> {
        let l = word.len();
        let (c, k) = self.lower_bound(word, l);
        match self.chunks.get(c) {
            Some(chunk) if chunk.word(k, l) == word => Ok((c, k)),
            Some(_) => Err((c, k)),
            // Past every word: at the end of the last chunk.
            None if c > 0 => Err((c - 1, self.chunks[c - 1].len())),
            None => Err((0, 0)),
        }
    }

    fn insert(&mut self, (c, k): At, id: u32, chars: &[char]) {
        if self.chunks.is_empty() {
            self.chunks.push(Arc::new(BucketChunk::default()));
        }
        let chunk = Arc::make_mut(&mut self.chunks[c]);
        chunk.insert(k, id, chars);
        if chunk.len() > BUCKET_CHUNK {
            let second = chunk.split_off(chars.len());
            self.chunks.insert(c + 1, Arc::new(second));
        }
        self.len += 1;
    }

    fn remove(&mut self, (c, k): At, l: usize) {
        let chunk = Arc::make_mut(&mut self.chunks[c]);
        chunk.remove(k, l);
        if chunk.len() == 0 {
            self.chunks.remove(c);
        }
        self.len -= 1;
    }
}

/// Distinct folded words, their postings, and the per-length sorted buckets.
#[derive(Debug, Clone, Default)]
pub(super) struct Lexicon {
    /// Chars of each word id; a free id has none.
    chars: ChunkedLists<char, WORD_CHUNK_BITS>,
    postings: Postings,
    /// `buckets[l]` holds the words of `l` chars (`buckets[0]` stays empty).
    buckets: Vec<Bucket>,
    /// Ids of words that left the corpus, for reuse.
    free: ChunkedVec<u32, WORD_CHUNK_BITS>,
}

/// Word ids per chunk of the per-id arrays, as a power of two.
const WORD_CHUNK_BITS: u32 = if cfg!(test) { 2 } else { 10 };

impl Lexicon {
    /// The lexicon of `words`, which must be distinct and sorted by (length,
    /// chars), word `i` getting id `i` and the postings `postings(i)`
    /// (ascending title slots, at least one).
    pub fn build<'a>(
        words: impl ExactSizeIterator<Item = &'a [char]>,
        postings: impl ExactSizeIterator<Item = &'a [u32]>,
    ) -> Lexicon {
        let mut lexicon = Lexicon {
            postings: Postings::from_lists(postings),
            ..Lexicon::default()
        };
        for (id, word) in words.enumerate() {
            lexicon.chars.push(word);
            let bucket = lexicon.bucket_mut(word.len());
            let last_full = bucket.chunks.last().is_none_or(|c| c.len() >= BUCKET_CHUNK);
            if last_full {
                bucket.chunks.push(Arc::new(BucketChunk::default()));
            }
            let chunk = Arc::get_mut(bucket.chunks.last_mut().expect("a chunk"))
                .expect("a chunk being built is not shared");
            debug_assert!(chunk.len() == 0 || chunk.word(chunk.len() - 1, word.len()) < word);
            chunk.push(id as u32, word);
            bucket.len += 1;
        }
        debug_assert_eq!(lexicon.chars.len(), lexicon.postings.len());
        lexicon.chars.shrink_to_fit();
        lexicon
    }

    /// Size of the id space (live and free ids): the length of any array
    /// indexed by word id.
    pub fn len(&self) -> usize {
        self.chars.len()
    }

    /// Number of live words.
    #[cfg(test)]
    pub fn live_words(&self) -> usize {
        self.buckets.iter().map(Bucket::len).sum()
    }

    pub fn word(&self, id: u32) -> &[char] {
        self.chars.get(id as usize)
    }

    /// Title slots using word `id`, ascending, block by block.
    pub fn postings(&self, id: u32) -> Blocks<'_> {
        self.postings.blocks(id)
    }

    /// Title slots using word `id` as a bit set, when its list keeps one.
    pub fn dense(&self, id: u32) -> Option<&DenseSet> {
        self.postings.dense(id)
    }

    /// Number of titles using word `id`.
    pub fn titles_with(&self, id: u32) -> usize {
        self.postings.count(id)
    }

    /// The buckets of words whose length (chars) lies in `lo..=hi`, with that
    /// length, shortest first.
    pub fn buckets(&self, lo: usize, hi: usize) -> impl Iterator<Item = (usize, &Bucket)> {
        let end = hi.saturating_add(1).min(self.buckets.len());
        let start = lo.max(1).min(end);
        (start..end).map(move |l| (l, &self.buckets[l]))
    }

    /// The id of exactly `word`, if the corpus has it.
    pub fn find(&self, word: &[char]) -> Option<u32> {
        let bucket = self.buckets.get(word.len())?;
        let (c, k) = bucket.position(word).ok()?;
        Some(bucket.chunks[c].ids[k])
    }

    /// Ids of words strictly longer than `prefix` that start with it.
    pub fn with_prefix(&self, prefix: &[char], out: &mut Vec<u32>) {
        self.with_prefix_from(prefix, prefix.len() + 1, out);
    }

    /// Ids of words of at least `shortest` chars (more than `prefix` has)
    /// that start with `prefix`, shortest first.
    pub fn with_prefix_from(&self, prefix: &[char], shortest: usize, out: &mut Vec<u32>) {
        for (l, bucket) in self.buckets(shortest.max(prefix.len() + 1), usize::MAX) {
            bucket.each_starting_with(prefix, l, |id| out.push(id));
        }
    }

    /// Adds title slot `t` to the postings of `word`, adding the word when new;
    /// returns its id. Cost: binary searches in the word's bucket and postings,
    /// plus shifting the rest of one chunk of each.
    pub fn add_posting(&mut self, word: &[char], t: u32) -> u32 {
        let len = word.len();
        let found = self
            .buckets
            .get(len)
            .map_or(Err((0, 0)), |bucket| bucket.position(word));
        let id = match found {
            Ok((c, k)) => self.buckets[len].chunks[c].ids[k],
            Err(at) => {
                let id = match self.free.pop() {
                    Some(id) => id,
                    None => {
                        self.chars.push(&[]);
                        self.postings.push_word();
                        self.chars.len() as u32 - 1
                    }
                };
                self.chars.set(id as usize, word);
                self.bucket_mut(len).insert(at, id, word);
                id
            }
        };
        self.postings.insert(id, t);
        id
    }

    /// Removes title slot `t` from the postings of word `id`; a word left with
    /// no postings leaves the lexicon (its id is freed).
    pub fn remove_posting(&mut self, id: u32, t: u32) {
        let len = self.word(id).len();
        if len == 0 {
            return; // a free id
        }
        self.postings.remove(id, t);
        if self.postings.count(id) > 0 {
            return;
        }
        let bucket = &mut self.buckets[len];
        if let Ok(at) = bucket.position(self.chars.get(id as usize)) {
            bucket.remove(at, len);
        }
        self.chars.set(id as usize, &[]);
        self.free.push(id);
    }

    /// Approximate heap size in bytes (without allocator overhead).
    pub fn heap_bytes(&self) -> usize {
        let buckets: usize = self
            .buckets
            .iter()
            .map(|b| {
                b.chunks.capacity() * 8 + b.chunks().map(BucketChunk::heap_bytes).sum::<usize>()
            })
            .sum();
        self.chars.heap_bytes()
            + self.postings.heap_bytes()
            + self.buckets.capacity() * std::mem::size_of::<Bucket>()
            + buckets
            + self.free.heap_bytes()
    }

    /// Panics unless every chunk's signatures are those of its words.
    #[cfg(test)]
    fn assert_signatures(&self) {
        for (l, bucket) in self.buckets.iter().enumerate() {
            for chunk in bucket.chunks() {
                for k in 0..chunk.len() {
                    assert_eq!(chunk.sigs[k], scan::signature(chunk.word(k, l)));
                    assert_eq!(chunk.head_sigs[k], scan::head_signature(chunk.word(k, l)));
                }
            }
        }
    }

    fn bucket_mut(&mut self, len: usize) -> &mut Bucket {
        if self.buckets.len() <= len {
            self.buckets.resize_with(len + 1, Bucket::default);
        }
        &mut self.buckets[len]
    }
}

/// The first `k` in `0..n` for which `before(k)` is false (`before` must be
/// true on a prefix of the range, false on the rest).
fn partition_point(n: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn words_added_one_by_one_stay_sorted_across_chunk_splits() {
        let mut lexicon = Lexicon::default();
        // 3,000 distinct four-letter words in a scrambled order.
        let words: Vec<Vec<char>> = (0..3000u32)
            .map(|i| {
                let n = (i * 7919) % 3000;
                chars(&format!(
                    "{}{}{}{}",
                    (b'a' + (n / 676 % 26) as u8) as char,
                    (b'a' + (n / 26 % 26) as u8) as char,
                    (b'a' + (n % 26) as u8) as char,
                    (b'a' + (n / 17576) as u8) as char
                ))
            })
            .collect();
        let copy = lexicon.clone();
        for (t, w) in words.iter().enumerate() {
            lexicon.add_posting(w, t as u32);
            if t % 97 == 0 {
                lexicon.assert_signatures();
            }
        }
        lexicon.assert_signatures();
        let bucket = &lexicon.buckets[4];
        assert!(bucket.chunks.len() > 3);
        let listed: Vec<&[char]> = bucket
            .chunks()
            .flat_map(|c| (0..c.len()).map(move |k| c.word(k, 4)))
            .collect();
        assert!(listed.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(listed.len(), 3000);
        for (t, w) in words.iter().enumerate() {
            let id = lexicon.find(w).expect("added");
            assert_eq!(lexicon.word(id), &w[..]);
            assert_eq!(
                lexicon.postings(id).flatten().copied().collect::<Vec<_>>(),
                [t as u32]
            );
        }
        let mut heads = Vec::new();
        lexicon.with_prefix(&chars("ab"), &mut heads);
        assert_eq!(
            heads.len(),
            words.iter().filter(|w| w[..2] == ['a', 'b']).count()
        );
        for (t, w) in words.iter().enumerate() {
            let id = lexicon.find(w).expect("added");
            lexicon.remove_posting(id, t as u32);
            assert!(lexicon.find(w).is_none());
            if t % 89 == 0 {
                lexicon.assert_signatures();
            }
        }
        assert_eq!(lexicon.live_words(), 0);
        assert_eq!(copy.live_words(), 0);
    }
}
