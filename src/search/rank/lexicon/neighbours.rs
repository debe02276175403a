//! Bounded-edit lookup over the lexicon: the words within a few OSA edits of a
//! query word, whole or by a head, found bucket by bucket (a bucket holds the
//! words of one length) by a signature scan (`super::scan`), and the words a
//! query word begins by binary search.
//!
//! Why a scan of every word of the buckets in reach rather than a walk of the
//! trie their sorted order is (the Levenshtein-automaton walk of Lucene and
//! Tantivy, which this replaced): a walk's cost grows with the trie nodes near
//! the query, and a short word has many. At 1.1M titles a three-char word
//! within one edit (`for`) took 230–330 µs to walk, because every first char
//! of three buckets stays within one edit for a char or two; a scan tests its
//! 37,000 words' signatures and compares the few hundred that pass in
//! 70 µs. Longer words within two edits kept tens of thousands of rows alive
//! (1.3–2.8 ms for `library`), where a scan lets 0.03–0.5 % of a bucket
//! through. And the scan's arrays are the bucket's own, where the walk needed
//! two more per word (shared prefix and branch char) kept through every write.

use super::scan::Scan;
use super::Lexicon;

/// What a lookup looks for, for one query word of `query.len()` chars.
#[derive(Debug, Clone, Copy)]
pub(in crate::search::rank) struct Neighbourhood<'q> {
    pub query: &'q [char],
    /// Whole words within this many OSA edits of the query.
    pub whole: usize,
    /// `Some(k)`: also words longer than the query some head of which is
    /// within `k` OSA edits of it (a head of `len - k ..= len + k` chars, at
    /// least 1, strictly shorter than the word). `k` must not exceed `whole`.
    pub heads: Option<usize>,
}

/// One word a lookup found: its id, its length in chars, the OSA edits of the
/// whole word (when within [`Neighbourhood::whole`]) and the fewest edits of a
/// head (when the head rule applies and is met).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::search::rank) struct Neighbour {
    pub id: u32,
    pub len: usize,
    pub whole: Option<u8>,
    pub head: Option<u8>,
}

impl Lexicon {
    /// Calls `found` for every live word within `n` (see [`Neighbourhood`]),
    /// once each. Order: bucket by bucket (the buckets of words longer than
    /// `len + whole` first when the head rule allows no edit, otherwise
    /// shortest first), sorted by chars within a bucket.
    pub fn neighbours(&self, n: &Neighbourhood<'_>, mut found: impl FnMut(Neighbour)) {
        let len = n.query.len();
        if len == 0 {
            return;
        }
        debug_assert!(n.heads.is_none_or(|k| k <= n.whole));
        let lo = len.saturating_sub(n.whole).max(1);
        let hi = match n.heads {
            Some(0) | None => len + n.whole,
            Some(_) => usize::MAX,
        };
        if n.heads == Some(0) {
            // Past `len + whole` only a head can match, and only the query
            // itself: the words it starts, found by binary search.
            for (l, bucket) in self.buckets(hi + 1, usize::MAX) {
                bucket.each_starting_with(n.query, l, |id| {
                    found(Neighbour {
                        id,
                        len: l,
                        whole: None,
                        head: Some(0),
                    })
                });
            }
        }
        let scan = Scan::new(n.query, n.whole);
        for (l, bucket) in self.buckets(lo, hi) {
            match n.heads.filter(|_| l > len) {
                Some(k) if k >= 1 => scan.bucket_with_heads(bucket, l, k, &mut found),
                heads => scan.bucket(bucket, l, heads == Some(0), &mut found),
            }
        }
    }
}
