//! Bounded-edit lookup by char signatures: every word of a length bucket is
//! tested with two AND-NOTs and two bit counts of a 64-bit signature of its
//! chars, and only the few that pass are compared with the query (within one
//! edit by a compare around the first char that differs, [`within_one`];
//! within more by rapidfuzz's bit-parallel OSA, with the budget as its cutoff).
//!
//! At 1.1M titles the test lets 0.03–0.5 % of a bucket's words through for a
//! word within two edits (`library`: 404 of 154,643), and a few hundred of the
//! 37,000 words of 2–4 chars for `for` within one. The head rule (an
//! unfinished last word of 5–7 chars, one edit, in every longer bucket) is
//! scanned too, by a second signature of each word's first [`HEAD_SIG_CHARS`]
//! chars: a head lies within them, so only the query's side of the test
//! applies (`camjs`: 2,019 of 186,526 words pass). A longer last word, whose
//! heads reach past those chars, is tested by the whole word's signature,
//! which its many distinct chars make selective enough (`kubernetes`, two
//! edits: 2,240 of 39,074). A head without an edit is the query itself: in a
//! bucket within the whole-word budget it is marked on the words the scan
//! finds, beyond it found by binary search (`super::neighbours`).
//!
//! Why the test never drops a match: a signature has one bit per letter for
//! "occurs at least once" and one for "at least twice", one per digit, and two
//! shared by every other char (by parity). Turning the query into a word by OSA
//! edits, a deletion or a substitution takes away one occurrence of one char, an
//! insertion or a substitution adds one, a transposition neither. A bit set for
//! the query and not for the word needs at least one occurrence taken away from
//! its char (or class); distinct bits need distinct occurrences (the two bits of
//! one letter need two). So a word within `k` edits has at most `k` bits of the
//! query's that it lacks, and at most `k` of its own that the query lacks; and
//! a word `d` chars longer needs `d` insertions among its edits, so it lacks at
//! most `k - d` (a shorter one, likewise, has at most `k - d` of its own).

use rapidfuzz::distance::osa;

use super::neighbours::Neighbour;
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
pub(super) struct Scan<'q> {
    query: &'q [char],
    sig: u64,
    len: usize,
    whole: u32,
    comparator: osa::BatchComparator<char>,
    args: osa::Args<usize, rapidfuzz::common::WithScoreCutoff<usize>>,
}

impl<'q> Scan<'q> {
    /// The tests for words within `whole` OSA edits of `query`.
    pub fn new(query: &'q [char], whole: usize) -> Scan<'q> {
        Scan {
            query,
            sig: signature(query),
            len: query.len(),
            whole: whole as u32,
            comparator: osa::BatchComparator::new(query.iter().copied()),
            args: osa::Args::default().score_cutoff(whole),
        }
    }

    /// Calls `found` for every word of `bucket` (whose words have `l` chars)
    /// within the budget, in the bucket's order, with its edits; with
    /// `exact_heads`, also whether its head of the query's length is the
    /// query (such a word of at most `len + whole` chars is within the budget
    /// anyway: its other chars are insertions).
    pub fn bucket(
        &self,
        bucket: &Bucket,
        l: usize,
        exact_heads: bool,
        found: &mut impl FnMut(Neighbour),
    ) {
        match self.budgets(l) {
            (0, 1) => self.each_passing::<0, 1>(bucket, l, exact_heads, found),
            (1, 0) => self.each_passing::<1, 0>(bucket, l, exact_heads, found),
            (1, 1) => self.each_passing::<1, 1>(bucket, l, exact_heads, found),
            (1, 2) => self.each_passing::<1, 2>(bucket, l, exact_heads, found),
            (2, 1) => self.each_passing::<2, 1>(bucket, l, exact_heads, found),
            (2, 2) => self.each_passing::<2, 2>(bucket, l, exact_heads, found),
            (0, 2) => self.each_passing::<0, 2>(bucket, l, exact_heads, found),
            (2, 0) => self.each_passing::<2, 0>(bucket, l, exact_heads, found),
            (0, 0) => self.each_passing::<0, 0>(bucket, l, exact_heads, found),
            _ => self.each_passing::<{ u32::MAX }, { u32::MAX }>(bucket, l, exact_heads, found),
        }
    }

    /// [`Scan::bucket`] with a signature test that lets through words lacking
    /// at most `LACK` of the query's bits and having at most `EXTRA` of their
    /// own (`u32::MAX`: the budget of `self`) compiled into the loop.
    fn each_passing<const LACK: u32, const EXTRA: u32>(
        &self,
        bucket: &Bucket,
        l: usize,
        exact_heads: bool,
        found: &mut impl FnMut(Neighbour),
    ) {
        let lack = if LACK == u32::MAX { self.whole } else { LACK };
        let extra = if EXTRA == u32::MAX { self.whole } else { EXTRA };
        debug_assert!(!exact_heads || (l > self.len && l - self.len <= self.whole as usize));
        for chunk in bucket.chunks() {
            for (i, &sig) in chunk.sigs.iter().enumerate() {
                if !(at_most(self.sig & !sig, lack) && at_most(sig & !self.sig, extra)) {
                    continue;
                }
                let word = chunk.word(i, l);
                if let Some(d) = self.whole_edits(word) {
                    let head = (exact_heads && word.starts_with(self.query)).then_some(0);
                    found(Neighbour {
                        id: chunk.ids[i],
                        len: l,
                        whole: Some(d),
                        head,
                    });
                }
            }
        }
    }

    /// For a bucket of words longer than the query (`l` chars), the words
    /// the head rule at `k` edits finds (`k >= 1`): every word whose whole
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
        let (whole_lack, whole_extra) = self.budgets(l);
        let head_max = (len + k).min(l - 1);
        let short_heads = len + k <= HEAD_SIG_CHARS;
        for chunk in bucket.chunks() {
            let head_sigs = if short_heads {
                &chunk.head_sigs
            } else {
                &chunk.sigs
            };
            for (i, (&sig, &head_sig)) in chunk.sigs.iter().zip(head_sigs).enumerate() {
                let whole_test = whole_here
                    && at_most(self.sig & !sig, whole_lack)
                    && at_most(sig & !self.sig, whole_extra);
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

    /// How many of the query's signature bits a whole word of `l` chars within
    /// the budget can lack, and how many of its own it can have: a word `d`
    /// chars longer than the query needs at least `d` insertions, which take
    /// no char away, so it lacks at most `whole - d`; likewise a shorter one
    /// has at most `whole - d` of its own.
    fn budgets(&self, l: usize) -> (u32, u32) {
        let k = self.whole;
        let lack = k.saturating_sub(l.saturating_sub(self.len) as u32);
        let extra = k.saturating_sub(self.len.saturating_sub(l) as u32);
        (lack, extra)
    }

    /// OSA edits from the query to `word`, when within the budget.
    fn whole_edits(&self, word: &[char]) -> Option<u8> {
        if self.whole <= 1 {
            return within_one(self.query, word).filter(|&d| d <= self.whole as u8);
        }
        self.comparator
            .distance_with_args(word.iter().copied(), &self.args)
            .map(|d| d as u8)
    }
}

/// OSA edits from `a` to `b` when at most one (an insertion, a deletion, a
/// substitution or an adjacent transposition): a compare of the chars around
/// the first that differs, where a bit-parallel OSA costs as much for any
/// distance (short query words, whose one-edit neighbours pass the
/// signature test by the hundred, spent most of their lookup there).
pub(super) fn within_one(a: &[char], b: &[char]) -> Option<u8> {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let i = short.iter().zip(long).take_while(|(x, y)| x == y).count();
    match long.len() - short.len() {
        0 if i == short.len() => Some(0),
        0 if short[i + 1..] == long[i + 1..] => Some(1),
        0 => (i + 1 < short.len()
            && short[i] == long[i + 1]
            && short[i + 1] == long[i]
            && short[i + 2..] == long[i + 2..])
            .then_some(1),
        1 => (short[i..] == long[i + 1..]).then_some(1),
        _ => None,
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
    fn within_one_agrees_with_osa_up_to_one_edit() {
        let mut rng = Lcg(11);
        let alphabet: Vec<char> = "abcdeé1".chars().collect();
        let mut ones = 0;
        for _ in 0..50_000 {
            let a: Vec<char> = (0..rng.below(6))
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            // Half the pairs one random edit apart, so that distance 1 is common.
            let mut b = a.clone();
            if rng.below(2) == 0 || b.is_empty() {
                b = (0..rng.below(6))
                    .map(|_| alphabet[rng.below(alphabet.len())])
                    .collect();
            } else {
                let at = rng.below(b.len());
                match rng.below(4) {
                    0 => b[at] = alphabet[rng.below(alphabet.len())],
                    1 => b.insert(at, alphabet[rng.below(alphabet.len())]),
                    2 => drop(b.remove(at)),
                    _ if at + 1 < b.len() => b.swap(at, at + 1),
                    _ => {}
                }
            }
            let d = osa::distance(a.iter().copied(), b.iter().copied());
            let expected = (d <= 1).then_some(d as u8);
            assert_eq!(within_one(&a, &b), expected, "{a:?} {b:?}");
            ones += usize::from(d == 1);
        }
        assert!(ones > 10_000, "{ones}");
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
