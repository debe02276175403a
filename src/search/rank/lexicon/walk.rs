//! Bounded-edit lookup over the lexicon: the words within a few OSA edits of a
//! query word, whole or by a head, found by walking each length bucket as the
//! trie its sorted order is.
//!
//! A bucket's words are sorted by chars, so the words sharing a prefix are
//! contiguous, and a prefix is a trie node. The walk keeps one row of the OSA
//! dynamic programme per char of the current word (query chars across, word
//! chars down) and reuses the rows of the prefix the word shares with the
//! previous one. When a row shows that no word below that prefix can come
//! within the budget, the walk jumps past every word with that prefix, so
//! its cost grows with the trie nodes near the query, not with the lexicon
//! (the Levenshtein-automaton walk of Lucene and Tantivy, over an implicit
//! trie). The rows, and so the distances, are exactly those of OSA
//! (`rapidfuzz::distance::osa`): an adjacent transposition is one edit.
//!
//! What makes a node cheap: each chunk keeps, per word, how many chars it
//! shares with the word before (`lcp`) and its first char past them
//! (`branch`). The jump past a prefix of `d` chars is a scan of those bytes
//! for the first below `d` (a binary search over the chunks' last words when
//! the run fills a chunk); what the next word shares with the last is its
//! `lcp`; and its first new row needs only its `branch`, so the walk never
//! waits on the chars of a word pruned there (they are only asked for ahead,
//! while that row is computed, for the rows past it). Each row computes only
//! its band (see `Walk::band`), the 2 × budget + 1 cells around the diagonal
//! a word of this bucket's length can still end on, and the cells a head can.
//!
//! A row lower bound: a word of `l` chars whose row `d` holds `R[d][i]` ends at
//! least `R[d][i] + |(l - d) - (len - i)|` edits from the query for a path
//! through cell `i`, and every path (a transposition step too) is bounded by
//! some cell of every row. Fixing the word length per bucket makes this bound
//! tight: only a band of `2 × budget + 1` cells can stay within it.

use super::scan::Scan;
use super::{common_prefix, Bucket, Lexicon};

/// What a walk looks for, for one query word of `query.len()` chars.
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

/// One word a walk found: its id, its length in chars, the OSA edits of the
/// whole word (when within [`Neighbourhood::whole`]) and the fewest edits of a
/// head (when the head rule applies and is met).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::search::rank) struct Neighbour {
    pub id: u32,
    pub len: usize,
    pub whole: Option<u8>,
    pub head: Option<u8>,
}

/// A distance no walk reaches (rows are at most 66 deep, queries 64 chars).
const FAR: u8 = u8::MAX;
/// What a cell outside its row's band holds (see `Walk::band`): beyond every
/// budget, and low enough that the rows below it (at most 66 more, each adding
/// at most one) never overflow a byte.
const DEAD: u8 = 128;

impl Lexicon {
    /// Calls `found` for every live word within `n` (see [`Neighbourhood`]),
    /// once each. Order: bucket by bucket (the buckets of words longer than
    /// `len + whole` first when the head rule allows no edit, as a prefix
    /// search by binary search gave them before; otherwise shortest first),
    /// sorted by chars within a bucket.
    pub fn neighbours(&self, n: &Neighbourhood<'_>, mut found: impl FnMut(Neighbour)) {
        let len = n.query.len();
        if len == 0 {
            return;
        }
        debug_assert!(n.heads.is_none_or(|k| k <= n.whole));
        let lo = len.saturating_sub(n.whole).max(1);
        let hi = if n.heads.is_some() {
            usize::MAX
        } else {
            len + n.whole
        };
        let exact_heads = n.heads == Some(0);
        if exact_heads {
            // Past `len + whole` only a head can match, and only the query
            // itself: the words it starts, found by binary search (a walk
            // would visit every first char of every bucket to prune it).
            for (l, bucket) in self.buckets(len + n.whole + 1, usize::MAX) {
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
        let last = if exact_heads { len + n.whole } else { hi };
        // Scanned by signature (`super::scan`): whole words within two edits,
        // and the head rule with edits. Whole words within one edit are walked:
        // the walk prunes most prefixes at their first or second char and was as
        // fast (1.1M titles, words of 5–6 chars scanned or walked: the same
        // within noise); so are heads without an edit.
        let scan = Scan::new(n.query, n.whole);
        let mut walk = None;
        for (l, bucket) in self.buckets(lo, last) {
            let heads = n.heads.filter(|_| l > len);
            match heads {
                None if n.whole >= 2 => scan.bucket(bucket, l, &mut found),
                Some(k) if k >= 1 => scan.bucket_with_heads(bucket, l, k, &mut found),
                _ => walk
                    .get_or_insert_with(|| Walk::new(n))
                    .bucket(bucket, l, &mut found),
            }
        }
    }
}

/// The rows of a walk, reused across buckets.
struct Walk<'q> {
    q: &'q [char],
    whole: usize,
    heads: Option<usize>,
    /// `(depth + 1) × (len + 1)` distances, row `d` for the first `d` chars of
    /// the current word.
    rows: Vec<u8>,
    /// Per depth `d`, the fewest edits of a head of at most `d` chars in the
    /// head range ([`FAR`] when none).
    best_head: Vec<u8>,
    /// Per depth, the band of cells the bucket being walked computes.
    bands: Vec<(usize, usize)>,
    /// The chars of the current word the rows were computed for, as far as
    /// they were: a word's own chars are read only past its branch char (see
    /// `BucketChunk::branch`), which spares most words a cache miss.
    path: Vec<char>,
}

/// How far `x` lies outside `lo..=hi` (0 inside).
fn outside(x: usize, lo: usize, hi: usize) -> usize {
    if x < lo {
        lo - x
    } else {
        x.saturating_sub(hi)
    }
}

impl<'q> Walk<'q> {
    fn new(n: &Neighbourhood<'q>) -> Walk<'q> {
        let len = n.query.len();
        let depth = len + n.whole.max(n.heads.unwrap_or(0)) + 1;
        let mut rows = vec![0u8; (depth + 1) * (len + 1)];
        for (i, r) in rows[..=len].iter_mut().enumerate() {
            *r = i as u8;
        }
        Walk {
            q: n.query,
            whole: n.whole,
            heads: n.heads,
            rows,
            best_head: vec![FAR; depth + 1],
            bands: Vec::with_capacity(depth + 1),
            path: vec!['\0'; depth + 1],
        }
    }

    /// Computes cells `lo..=hi` of row `d` (`d >= 1`) from the rows above it
    /// for the chars of [`Walk::path`]; the cells outside a row's band stay
    /// [`DEAD`].
    fn row(&mut self, d: usize, (lo, hi): (usize, usize)) {
        let q = self.q;
        let w = q.len() + 1;
        let word = &self.path;
        let (above, rest) = self.rows.split_at_mut(d * w);
        let cur = &mut rest[..w];
        let r1 = &above[(d - 1) * w..];
        let c = word[d - 1];
        if lo == 0 {
            cur[0] = d as u8;
        }
        let from = lo.max(1);
        if d >= 2 {
            let r2 = &above[(d - 2) * w..(d - 1) * w];
            let p = word[d - 2];
            for i in from..=hi {
                let mut v = (r1[i] + 1)
                    .min(cur[i - 1] + 1)
                    .min(r1[i - 1] + u8::from(q[i - 1] != c));
                if i >= 2 && q[i - 1] == p && q[i - 2] == c {
                    v = v.min(r2[i - 2] + 1);
                }
                cur[i] = v;
            }
        } else {
            for i in from..=hi {
                cur[i] = (r1[i] + 1)
                    .min(cur[i - 1] + 1)
                    .min(r1[i - 1] + u8::from(q[i - 1] != c));
            }
        }
    }

    /// The cells `lo..=hi` of row `d` that can still lead to a match in a
    /// bucket of `l`-char words (`lo > hi`: none). A whole word ends at least
    /// `|(l - d) - (len - i)|` edits past cell `i`; a head of at most
    /// `head_hi` chars at least `(len - i) - (head_hi - d)`. Both only grow
    /// along a path of the programme, so every cell on the best path to a cell
    /// within budget is in its row's band, and a cell outside the bands may
    /// hold [`DEAD`] instead of its distance without changing any distance
    /// within budget.
    fn band(
        &self,
        d: usize,
        l: usize,
        whole_here: bool,
        heads: Option<(usize, usize)>,
    ) -> (usize, usize) {
        let len = self.q.len();
        let (mut lo, mut hi) = (usize::MAX, 0);
        if whole_here {
            let centre = (len + d) as isize - l as isize;
            let (a, b) = (centre - self.whole as isize, centre + self.whole as isize);
            if b >= 0 && a <= len as isize {
                (lo, hi) = (a.max(0) as usize, (b as usize).min(len));
            }
        }
        if let Some((pb, head_hi)) = heads {
            if d <= head_hi {
                lo = lo.min((len + d).saturating_sub(head_hi + pb));
                hi = len;
            }
        }
        (lo, hi)
    }

    /// Walks one bucket of words of `l` chars.
    fn bucket(&mut self, bucket: &Bucket, l: usize, found: &mut impl FnMut(Neighbour)) {
        let len = self.q.len();
        let w = len + 1;
        let whole_here = l.abs_diff(len) <= self.whole;
        let heads = self.heads.filter(|_| l > len);
        if !whole_here && heads.is_none() {
            return;
        }
        let pb = heads.unwrap_or(0);
        // Heads tried: `head_lo..=head_hi` chars.
        let head_lo = len.saturating_sub(pb).max(1);
        let head_hi = (len + pb).min(l - 1);
        // Whole words are read to the end; for the head rule alone, to the
        // longest head, below which every word matches alike.
        let depth = if whole_here { l } else { head_hi };
        self.bands.clear();
        for d in 0..=depth {
            let band = self.band(d, l, whole_here, heads.map(|pb| (pb, head_hi)));
            self.bands.push(band);
        }
        self.rows[w..].fill(DEAD);
        let mut cursor = Cursor::start(bucket, l);
        // Rows `0..=valid` hold the first `valid` chars of `prev`.
        let mut valid = 0;
        let mut prev: &[char] = &[];
        while let Some(word) = cursor.word() {
            let linked = cursor.shared_with_last();
            let shared = match linked {
                Some(lcp) => lcp.min(valid),
                None => usize::from(common_prefix(&prev[..valid], word)),
            };
            // A row past the branch reads the word's own chars, and after a
            // skip they are a cache miss: ask for them now, while the branch
            // row is computed.
            if shared + 1 < depth {
                crate::search::chunked::prefetch(word.as_ptr().wrapping_add(shared + 1));
            }
            let mut d = shared;
            let mut pruned = false;
            while d < depth {
                d += 1;
                let (lo, hi) = self.bands[d];
                if lo > hi {
                    pruned = true;
                    break;
                }
                self.path[d - 1] = match linked {
                    Some(lcp) if lcp == d - 1 => cursor.branch(),
                    _ => word[d - 1],
                };
                self.row(d, (lo, hi));
                let r = &self.rows[d * w..][..w];
                let here = if heads.is_some() && (head_lo..=head_hi).contains(&d) {
                    r[len]
                } else {
                    FAR
                };
                self.best_head[d] = self.best_head[d - 1].min(here);
                let band = || {
                    r[lo..=hi]
                        .iter()
                        .enumerate()
                        .map(move |(j, &v)| (lo + j, v))
                };
                let whole_ok = whole_here
                    && band().any(|(i, v)| v as usize + (l - d).abs_diff(len - i) <= self.whole);
                let head_ok = heads.is_some()
                    && (self.best_head[d] as usize <= pb
                        || (d < head_hi
                            && band().any(|(i, v)| {
                                v as usize + outside(len - i, head_lo.max(d + 1) - d, head_hi - d)
                                    <= pb
                            })));
                if !whole_ok && !head_ok {
                    pruned = true;
                    break;
                }
            }
            valid = d;
            prev = word;
            if pruned {
                cursor.skip_prefix(&self.path[..d]);
                continue;
            }
            let head = heads
                .is_some()
                .then_some(self.best_head[d])
                .filter(|&e| e as usize <= pb);
            if whole_here {
                let e = self.rows[l * w + len];
                let whole = (e as usize <= self.whole).then_some(e);
                if whole.is_some() || head.is_some() {
                    found(Neighbour {
                        id: cursor.id(),
                        len: l,
                        whole,
                        head,
                    });
                }
                cursor.advance();
            } else {
                // Every word below this head matches by it, alike.
                cursor.each_with_prefix(&self.path[..d], |id| {
                    found(Neighbour {
                        id,
                        len: l,
                        whole: None,
                        head,
                    })
                });
            }
        }
    }
}

/// A position in a bucket: chunk `c`, word `k` in it.
struct Cursor<'a> {
    bucket: &'a Bucket,
    l: usize,
    c: usize,
    k: usize,
    /// Whether the last move stayed in one chunk, so that the word here shares
    /// `lcp[k]` chars with the word the move started from (see
    /// [`Cursor::shared_with_last`]).
    in_chunk: bool,
}

impl<'a> Cursor<'a> {
    fn start(bucket: &'a Bucket, l: usize) -> Cursor<'a> {
        Cursor {
            bucket,
            l,
            c: 0,
            k: 0,
            in_chunk: false,
        }
    }

    /// The word here, `None` past the last.
    fn word(&self) -> Option<&'a [char]> {
        let chunk: &'a _ = self.bucket.chunks.get(self.c)?;
        Some(chunk.word(self.k, self.l))
    }

    fn id(&self) -> u32 {
        self.bucket.chunks[self.c].ids[self.k]
    }

    /// The word here's char at its `lcp`, where it leaves its predecessor.
    fn branch(&self) -> char {
        self.bucket.chunks[self.c].branch(self.k)
    }

    /// How many leading chars the word here shares with the word the last
    /// move started from, when the chunk's `lcp` tells (`None` after a move
    /// across chunks, or at the start). An advance goes to the next word; a
    /// skip past a run of words sharing `d` chars lands on the first that
    /// shares fewer with its predecessor, hence (sorted order) with every word
    /// of the run: its `lcp` either way.
    fn shared_with_last(&self) -> Option<usize> {
        self.in_chunk
            .then(|| self.bucket.chunks[self.c].lcp(self.k))
    }

    fn advance(&mut self) {
        self.k += 1;
        self.in_chunk = self.k < self.bucket.chunks[self.c].len();
        if !self.in_chunk {
            self.c += 1;
            self.k = 0;
        }
    }

    /// Moves to the first word at or after here that does not start with
    /// `prefix` (the word here does).
    fn skip_prefix(&mut self, prefix: &[char]) {
        let (l, d) = (self.l, prefix.len());
        let chunks = &self.bucket.chunks;
        let chunk = &chunks[self.c];
        let end = chunk.run_end(self.k + 1, d);
        if end < chunk.len() {
            self.k = end;
            self.in_chunk = true;
            return;
        }
        // The run goes on past this chunk: the chunks it fills whole, by their
        // last word, then where it ends in the next.
        self.in_chunk = false;
        let rest = &chunks[self.c + 1..];
        let c = self.c + 1 + rest.partition_point(|ch| &ch.word(ch.len() - 1, l)[..d] == prefix);
        self.c = c;
        self.k = match chunks.get(c) {
            Some(ch) if &ch.word(0, l)[..d] == prefix => ch.run_end(1, d),
            _ => 0,
        };
    }

    /// Calls `f` with the id of every word from here on that starts with
    /// `prefix` (the word here does), and moves past them.
    fn each_with_prefix(&mut self, prefix: &[char], mut f: impl FnMut(u32)) {
        let (from_c, from_k) = (self.c, self.k);
        self.skip_prefix(prefix);
        let chunks = &self.bucket.chunks;
        let mut k = from_k;
        for c in from_c..=self.c.min(chunks.len() - 1) {
            let end = if c == self.c { self.k } else { chunks[c].len() };
            for &id in &chunks[c].ids[k..end] {
                f(id);
            }
            k = 0;
        }
    }
}
