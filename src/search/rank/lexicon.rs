//! The distinct folded words of a corpus, each with the titles that use it, kept
//! ready for the two ways a query reads them: a scan of every word of a range of
//! lengths (typo matching) and a binary search by chars (exact and prefix).
//!
//! Words have stable ids (an index into `words`, reused after a word leaves the
//! corpus), so that titles can store word ids and an update touches only the
//! words of the changed title. Next to that, `buckets[l]` lists the live words
//! of `l` chars sorted by chars, with their bag-of-chars signatures inline so
//! that a scan reads one contiguous array per length.

/// Length of the word heads summarized in `Bucket::head_masks`: covers a
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

/// One word id's entry; a free id has no chars and no postings.
#[derive(Debug, Clone, Default)]
struct Word {
    chars: Box<[char]>,
    /// Title slots using the word, ascending, no repeats.
    postings: Vec<u32>,
}

/// The live words of one length `l`, sorted by chars (parallel arrays).
#[derive(Debug, Clone, Default)]
pub(super) struct Bucket {
    pub ids: Vec<u32>,
    /// The words' chars back to back, `l` per word (a copy of `Word::chars`
    /// that a scan reads without chasing pointers).
    chars: Vec<char>,
    /// [`char_mask`] of each word.
    pub masks: Vec<u64>,
    /// [`char_mask`] of each word's first [`HEAD_CHARS`] chars, to filter prefix
    /// matches without touching the chars.
    pub head_masks: Vec<u64>,
}

impl Bucket {
    /// The chars of the `k`-th word; `l` is the bucket's word length.
    pub fn word(&self, k: usize, l: usize) -> &[char] {
        &self.chars[k * l..][..l]
    }

    fn insert(&mut self, at: usize, id: u32, chars: &[char]) {
        let l = chars.len();
        self.chars.splice(at * l..at * l, chars.iter().copied());
        self.ids.insert(at, id);
        self.masks.insert(at, char_mask(chars));
        self.head_masks
            .insert(at, char_mask(&chars[..chars.len().min(HEAD_CHARS)]));
    }

    fn remove(&mut self, at: usize, l: usize) {
        self.chars.drain(at * l..(at + 1) * l);
        self.ids.remove(at);
        self.masks.remove(at);
        self.head_masks.remove(at);
    }
}

/// Distinct folded words, their postings, and the per-length sorted buckets.
#[derive(Debug, Clone, Default)]
pub(super) struct Lexicon {
    words: Vec<Word>,
    /// `buckets[l]` holds the words of `l` chars (`buckets[0]` stays empty).
    buckets: Vec<Bucket>,
    /// Ids of words that left the corpus, for reuse.
    free: Vec<u32>,
}

impl Lexicon {
    /// Builds the lexicon of `distinct` words (no repeats, any order), with ids
    /// given in (length, chars) order; returns it and each word's id, in the
    /// order given. Every word starts with no postings.
    pub fn from_words(distinct: &[Vec<char>]) -> (Lexicon, Vec<u32>) {
        let mut order: Vec<usize> = (0..distinct.len()).collect();
        order.sort_unstable_by(|&a, &b| {
            let (a, b) = (&distinct[a], &distinct[b]);
            a.len().cmp(&b.len()).then_with(|| a.cmp(b))
        });
        let mut lexicon = Lexicon::default();
        let mut ids = vec![0u32; distinct.len()];
        for (id, &i) in order.iter().enumerate() {
            let chars = &distinct[i];
            ids[i] = id as u32;
            lexicon.words.push(Word {
                chars: chars.clone().into_boxed_slice(),
                postings: Vec::new(),
            });
            let bucket = lexicon.bucket_mut(chars.len());
            let at = bucket.ids.len();
            bucket.insert(at, id as u32, chars);
        }
        (lexicon, ids)
    }

    /// Size of the id space (live and free ids): the length of any array
    /// indexed by word id.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    pub fn word(&self, id: u32) -> &[char] {
        &self.words[id as usize].chars
    }

    /// Title slots using word `id`, ascending.
    pub fn postings(&self, id: u32) -> &[u32] {
        &self.words[id as usize].postings
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
        position(bucket, word).ok().map(|at| bucket.ids[at])
    }

    /// Ids of words strictly longer than `prefix` that start with it.
    pub fn with_prefix(&self, prefix: &[char], out: &mut Vec<u32>) {
        let n = prefix.len();
        for (l, bucket) in self.buckets(n + 1, usize::MAX) {
            let head = |k: usize| &bucket.word(k, l)[..n];
            let first = partition_point(bucket.ids.len(), |k| head(k) < prefix);
            let count = (first..bucket.ids.len())
                .take_while(|&k| head(k) == prefix)
                .count();
            out.extend_from_slice(&bucket.ids[first..first + count]);
        }
    }

    /// Adds title slot `t` to the postings of `word`, adding the word when new;
    /// returns its id. Cost: a binary search in the word's bucket and postings,
    /// plus shifting the tail of each.
    pub fn add_posting(&mut self, word: &[char], t: u32) -> u32 {
        let len = word.len();
        let found = self
            .buckets
            .get(len)
            .map_or(Err(0), |bucket| position(bucket, word));
        let id = match found {
            Ok(at) => self.buckets[len].ids[at],
            Err(at) => {
                let id = self.free.pop().unwrap_or_else(|| {
                    self.words.push(Word::default());
                    self.words.len() as u32 - 1
                });
                self.words[id as usize].chars = word.into();
                self.bucket_mut(len).insert(at, id, word);
                id
            }
        };
        let postings = &mut self.words[id as usize].postings;
        if let Err(at) = postings.binary_search(&t) {
            postings.insert(at, t);
        }
        id
    }

    /// Removes title slot `t` from the postings of word `id`; a word left with
    /// no postings leaves the lexicon (its id is freed).
    pub fn remove_posting(&mut self, id: u32, t: u32) {
        let entry = &mut self.words[id as usize];
        if entry.chars.is_empty() {
            return; // a free id
        }
        if let Ok(at) = entry.postings.binary_search(&t) {
            entry.postings.remove(at);
        }
        if !entry.postings.is_empty() {
            return;
        }
        let len = entry.chars.len();
        if let Ok(at) = position(&self.buckets[len], &self.words[id as usize].chars) {
            self.buckets[len].remove(at, len);
        }
        self.words[id as usize] = Word::default();
        self.free.push(id);
    }

    /// Appends title slot `t` to the postings of word `id` (bulk build: slots
    /// arrive in ascending order).
    pub fn push_posting(&mut self, id: u32, t: u32) {
        let postings = &mut self.words[id as usize].postings;
        debug_assert!(postings.last().is_none_or(|&last| last < t));
        postings.push(t);
    }

    /// Releases growth slack (after a bulk build).
    pub fn shrink_to_fit(&mut self) {
        for w in &mut self.words {
            w.postings.shrink_to_fit();
        }
    }

    /// Approximate heap size in bytes (without allocator overhead).
    pub fn heap_bytes(&self) -> usize {
        let words: usize = self
            .words
            .iter()
            .map(|w| w.chars.len() * 4 + w.postings.capacity() * 4)
            .sum();
        let buckets: usize = self
            .buckets
            .iter()
            .map(|b| {
                b.ids.capacity() * 4
                    + b.chars.capacity() * 4
                    + b.masks.capacity() * 8
                    + b.head_masks.capacity() * 8
            })
            .sum();
        self.words.capacity() * std::mem::size_of::<Word>()
            + words
            + self.buckets.capacity() * std::mem::size_of::<Bucket>()
            + buckets
            + self.free.capacity() * 4
    }

    fn bucket_mut(&mut self, len: usize) -> &mut Bucket {
        if self.buckets.len() <= len {
            self.buckets.resize_with(len + 1, Bucket::default);
        }
        &mut self.buckets[len]
    }
}

/// Where `word` is (`Ok`) or would go (`Err`) in the bucket of its length.
fn position(bucket: &Bucket, word: &[char]) -> Result<usize, usize> {
    let l = word.len();
    let at = partition_point(bucket.ids.len(), |k| bucket.word(k, l) < word);
    if at < bucket.ids.len() && bucket.word(at, l) == word {
        Ok(at)
    } else {
        Err(at)
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
