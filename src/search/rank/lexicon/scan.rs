//! Whole-word bounded-edit lookup by char signatures: every word of a length
//! bucket is tested with two AND-NOTs and two bit counts of a 64-bit signature
//! of its chars, and only the few that pass are compared with the query
//! (rapidfuzz's bit-parallel OSA, with the budget as its cutoff).
//!
//! Why not the trie walk (`super::walk`) here: for a query word of 7+ chars
//! within two edits, the walk computes tens of thousands of rows over the five
//! buckets it visits (31,094 for `library` at 1.1M titles, about 40 ns a node,
//! 1.3–2.8 ms a lookup), because two edits keep many prefixes alive for several
//! chars. A signature test is a few instructions over a contiguous `u64` array,
//! and at 1.1M titles it lets 0.03–0.5 % of a band's words through (`library`:
//! 404 of 154,643). The head rule (an unfinished last word of 5–7 chars, one
//! edit, in every longer bucket) is scanned too, by a second signature of each
//! word's first [`HEAD_SIG_CHARS`] chars: a head lies within them, so only the
//! query's side of the test applies (`camjs`: 2,019 of 186,526 words pass). A
//! longer last word, whose heads reach past those chars, is tested by the whole
//! word's signature, which its many distinct chars make selective enough
//! (`kubernetes`, two edits: 2,240 of 39,074). The walk stays for one-edit whole
//! words, where it prunes most prefixes at their first or second char, and for
//! heads without an edit.
//!
//! Why the test never drops a match: a signature has one bit per letter for
//! "occurs at least once" and one for "at least twice", one per digit, and two
//! shared by every other char (by parity). Turning the query into a word by OSA
//! edits, a deletion or a substitution takes away one occurrence of one char, an
//! insertion or a substitution adds one, a transposition neither. A bit set for
//! the query and not for the word needs at least one occurrence taken away from
//! its char (or class); distinct bits need distinct occurrences (the two bits of
//! one letter need two). So a word within `k` edits has at most `k` bits of the
//! query's that it lacks, and at most `k` of its own that the query lacks.

use rapidfuzz::distance::osa;

use super::walk::Neighbour;
use super::Bucket;
use crate::search::rank::lookup::prefix_edits;

/// The char signature of `word` (see the module docs): bits 0–25 for `a`–`z`
/// occurring at least once, 26–51 at least twice, 52–61 for `0`–`9`, 62–63 for
/// any other char by the parity of its code point.
pub(super) fn signature(word: &[char]) -> u64 {
    let mut sig = 0u64;
    for &c in word {
        let bit = match c {
            'a'..='z' => {
                let once = 1u64 << (c as u32 - 'a' as u32);
                if sig & once == 0 {
                    once
                } else {
                    once << 26
                }
            }
            '0'..='9' => 1u64 << (52 + c as u32 - '0' as u32),
            _ => 1u64 << (62 + (c as u32 & 1)),
        };
        sig |= bit;
    }
    sig
}

/// How many leading chars [`head_signature`] covers: every head the head rule
/// tries for a query word of up to 7 chars (one edit: heads of `len + 1` chars
/// at most).
pub(super) const HEAD_SIG_CHARS: usize = 8;

/// The [`signature`] of the first [`HEAD_SIG_CHARS`] chars of `word`: it has
/// every bit of any head of at most that many chars, so a head within `k`
/// edits of the query lacks at most `k` of the query's bits, and so does it.
pub(super) fn head_signature(word: &[char]) -> u64 {
    signature(&word[..word.len().min(HEAD_SIG_CHARS)])
}

/// One query word's tests, reused across buckets.
pub(super) struct Scan {
    sig: u64,
    len: usize,
    whole: u32,
    comparator: osa::BatchComparator<char>,
    args: osa::Args<usize, rapidfuzz::common::WithScoreCutoff<usize>>,
}

impl Scan {
    /// The tests for words within `whole` OSA edits of `query`.
    pub fn new(query: &[char], whole: usize) -> Scan {
        Scan {
            sig: signature(query),
            len: query.len(),
            whole: whole as u32,
            comparator: osa::BatchComparator::new(query.iter().copied()),
            args: osa::Args::default().score_cutoff(whole),
        }
    }

    /// Calls `found` for every word of `bucket` (whose words have `l` chars)
    /// within the budget, in the bucket's order, with its edits.
    pub fn bucket(&self, bucket: &Bucket, l: usize, found: &mut impl FnMut(Neighbour)) {
        match self.whole {
            0 => self.each_passing::<0>(bucket, l, found),
            1 => self.each_passing::<1>(bucket, l, found),
            2 => self.each_passing::<2>(bucket, l, found),
            _ => self.each_passing::<{ u32::MAX }>(bucket, l, found),
        }
    }

    /// [`Scan::bucket`] with the signature test for a budget of `K` edits
    /// (`u32::MAX`: the budget of `self`) compiled into the loop.
    fn each_passing<const K: u32>(
        &self,
        bucket: &Bucket,
        l: usize,
        found: &mut impl FnMut(Neighbour),
    ) {
        let k = if K == u32::MAX { self.whole } else { K };
        for chunk in bucket.chunks() {
            for (i, &sig) in chunk.sigs.iter().enumerate() {
                if !self.may_be_within(sig, k) {
                    continue;
                }
                if let Some(d) = self.whole_edits(chunk.word(i, l)) {
                    found(Neighbour {
                        id: chunk.ids[i],
                        len: l,
                        whole: Some(d),
                        head: None,
                    });
                }
            }
        }
    }

    /// For a bucket of words longer than the query (`l` chars), what the walk
    /// gives with the head rule at `k` edits (`k >= 1`): every word whose whole
    /// is within the budget or some head of `len - k ..= len + k` chars
    /// (strictly shorter than the word) within `k` edits, with the edits of
    /// each. Whole words are tested as in [`Scan::bucket`], heads by
    /// [`head_signature`] first (by the whole word's signature when `len + k`
    /// exceeds [`HEAD_SIG_CHARS`]: a head's chars are the word's too).
    pub fn bucket_with_heads(
        &self,
        bucket: &Bucket,
        l: usize,
        k: usize,
        found: &mut impl FnMut(Neighbour),
    ) {
        let len = self.len;
        debug_assert!(l > len && k >= 1);
        let whole_here = l - len <= self.whole as usize;
        let head_max = (len + k).min(l - 1);
        let short_heads = len + k <= HEAD_SIG_CHARS;
        for chunk in bucket.chunks() {
            let head_sigs = if short_heads {
                &chunk.head_sigs
            } else {
                &chunk.sigs
            };
            for (i, (&sig, &head_sig)) in chunk.sigs.iter().zip(head_sigs).enumerate() {
                let whole_test = whole_here && self.may_be_within(sig, self.whole);
                let head_test = at_most(self.sig & !head_sig, k as u32);
                if !whole_test && !head_test {
                    continue;
                }
                let word = chunk.word(i, l);
                let whole = whole_test.then(|| self.whole_edits(word)).flatten();
                let head = head_test
                    .then(|| prefix_edits(&self.comparator, word, len, k, head_max))
                    .flatten()
                    .map(|(d, _)| d as u8);
                if whole.is_some() || head.is_some() {
                    found(Neighbour {
                        id: chunk.ids[i],
                        len: l,
                        whole,
                        head,
                    });
                }
            }
        }
    }

    /// The signature test of a whole word (signature `sig`) at `k` edits: false
    /// only for words farther than `k` (see the module docs).
    #[inline(always)]
    fn may_be_within(&self, sig: u64, k: u32) -> bool {
        at_most(self.sig & !sig, k) && at_most(sig & !self.sig, k)
    }

    /// OSA edits from the query to `word`, when within the budget.
    fn whole_edits(&self, word: &[char]) -> Option<u8> {
        self.comparator
            .distance_with_args(word.iter().copied(), &self.args)
            .map(|d| d as u8)
    }
}

/// Whether `bits` has at most `k` bits set: clearing the lowest set bit `k`
/// times leaves nothing (cheaper than a popcount where the target has none).
#[inline(always)]
fn at_most(mut bits: u64, k: u32) -> bool {
    for _ in 0..k {
        bits &= bits.wrapping_sub(1);
    }
    bits == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::testing::Lcg;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    /// Bits the first lacks of the second's, and the other way round.
    fn gaps(a: &str, b: &str) -> (u32, u32) {
        let (a, b) = (signature(&chars(a)), signature(&chars(b)));
        ((a & !b).count_ones(), (b & !a).count_ones())
    }

    #[test]
    fn at_most_counts_set_bits() {
        assert!(at_most(0, 0));
        assert!(!at_most(1, 0));
        assert!(at_most(0b1010, 2));
        assert!(!at_most(0b1011, 2));
        assert!(at_most(u64::MAX, 64));
    }

    #[test]
    fn a_signature_tells_once_from_twice_and_digits_from_letters() {
        assert_eq!(gaps("abc", "abc"), (0, 0));
        assert_eq!(gaps("mode", "mdoe"), (0, 0));
        assert_eq!(gaps("letter", "leter"), (1, 0));
        assert_eq!(gaps("a1", "al"), (1, 1));
        assert_eq!(gaps("über", "uber"), (1, 1));
    }

    #[test]
    fn no_word_within_the_budget_fails_the_signature_test() {
        let mut rng = Lcg(7);
        let alphabet: Vec<char> = "aabcdeeilnorst019é".chars().collect();
        for _ in 0..20_000 {
            let n = 1 + rng.below(9);
            let a: Vec<char> = (0..n)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            let b: Vec<char> = (0..1 + rng.below(9))
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            let d = osa::distance(a.iter().copied(), b.iter().copied()) as u32;
            let (sa, sb) = (signature(&a), signature(&b));
            assert!((sa & !sb).count_ones() <= d, "{a:?} {b:?} within {d}");
            assert!((sb & !sa).count_ones() <= d, "{a:?} {b:?} within {d}");
        }
    }
}
