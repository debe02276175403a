//! Steps 2 and 3 of a ranking: which lexicon words each query word matches
//! (alone, joined with its neighbour, or cut in two), then which titles contain
//! them, with each query word's rarity weight and an upper bound of each title's
//! score.

// foldhash (hashbrown's default, randomly seeded) rather than SipHash: scoring
// looks a matched word's row up for every title that holds it.
use foldhash::{HashMap, HashMapExt};

use super::compound::{join_cuts, split_hits, PartPositions};
use super::index::RankIndex;
use super::lookup::{lookup, QueryWord, WordHit};
use super::postings::DenseSet;
use super::score::weight;

mod masked;
use masked::accumulate_masked;

/// One looked-up word: a query word, two adjacent query words joined (a split),
/// or one part of a query word cut in two (a join).
pub(super) struct Column {
    pub word: QueryWord,
    pub hits: Vec<WordHit>,
}

/// A query word read as two title words (see `compound`): the columns holding
/// its head's and its tail's hits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Join {
    pub query_word: usize,
    pub head_col: usize,
    pub tail_col: usize,
    pub head_len: usize,
    pub tail_len: usize,
}

/// What the query words matched in the lexicon.
pub(super) struct WordMatches {
    /// Number of query words.
    pub m: usize,
    /// `columns[i]` for query word `i < m`; `columns[m + i]` for query words `i`
    /// and `i + 1` joined (`i < m - 1`); then a head and a tail column per join.
    pub columns: Vec<Column>,
    pub joins: Vec<Join>,
    /// A bit per lexicon word, set when some column matched it: scoring checks
    /// every title word here first, and most match nothing. (A dense row index
    /// per lexicon word, 1.2 MB at 1.1M titles, was a cache miss per title word
    /// and a fifth of the time of scoring one title.)
    matched: Vec<u64>,
    /// Matched lexicon word → its row of `qualities`.
    rows: HashMap<u32, u32>,
    /// `columns.len()` qualities per matched lexicon word (0 = no match).
    qualities: Vec<f32>,
}

impl WordMatches {
    /// Qualities of lexicon word `w` for each column, if any matched it.
    #[inline]
    pub fn row(&self, w: u32) -> Option<&[f32]> {
        if self.matched[w as usize / 64] >> (w % 64) & 1 == 0 {
            return None;
        }
        let width = self.columns.len();
        let s = self.rows[&w] as usize;
        Some(&self.qualities[s * width..][..width])
    }

    /// Column of query words `i` and `i + 1` joined.
    pub fn split_col(&self, i: usize) -> usize {
        self.m + i
    }

    /// Head and tail positions of `join` in a title's `words`, into `parts`.
    pub fn find_parts_in_words(&self, words: &[u32], join: &Join, parts: &mut PartPositions) {
        parts.clear();
        for (p, &w) in words.iter().enumerate() {
            if let Some(row) = self.row(w) {
                parts.push(p as u32, row, join);
            }
        }
    }

    /// [`find_parts_in_words`](Self::find_parts_in_words) over the positions of
    /// a title's matched words and their rows (in title order).
    pub fn find_parts(&self, found: &[(u32, &[f32])], join: &Join, parts: &mut PartPositions) {
        parts.clear();
        for &(p, row) in found {
            parts.push(p, row, join);
        }
    }
}

/// Looks every query word up in the lexicon (a repeated word only once), then
/// every adjacent pair joined, then every way to cut a word in two.
pub(super) fn match_words(index: &RankIndex, words: &[QueryWord]) -> WordMatches {
    let m = words.len();
    let lexicon = &index.lexicon;
    let mut columns: Vec<Column> = Vec::with_capacity(2 * m);
    for (i, word) in words.iter().enumerate() {
        let hits = match words[..i].iter().position(|w| w == word) {
            Some(e) => columns[e].hits.clone(),
            None => {
                let mut hits = Vec::new();
                lookup(lexicon, word, &mut hits);
                hits
            }
        };
        columns.push(Column {
            word: word.clone(),
            hits,
        });
    }
    for pair in words.windows(2) {
        let hits = split_hits(lexicon, &pair[0], &pair[1]);
        let mut joined = pair[0].clone();
        joined.chars.extend_from_slice(&pair[1].chars);
        joined.prefix = pair[1].prefix;
        columns.push(Column { word: joined, hits });
    }
    let mut joins = Vec::new();
    for (i, word) in words.iter().enumerate() {
        for cut in join_cuts(lexicon, word) {
            joins.push(Join {
                query_word: i,
                head_col: columns.len(),
                tail_col: columns.len() + 1,
                head_len: cut.head.chars.len(),
                tail_len: cut.tail.chars.len(),
            });
            columns.push(Column {
                word: cut.head,
                hits: vec![WordHit {
                    word: cut.head_word,
                    quality: 1.0,
                    edits: 0,
                }],
            });
            columns.push(Column {
                word: cut.tail,
                hits: cut.tail_hits,
            });
        }
    }

    let width = columns.len();
    let mut matched = vec![0u64; lexicon.len().div_ceil(64)];
    let mut rows: HashMap<u32, u32> = HashMap::new();
    let mut qualities: Vec<f32> = Vec::new();
    for (c, column) in columns.iter().enumerate() {
        for h in &column.hits {
            matched[h.word as usize / 64] |= 1 << (h.word % 64);
            let s = *rows.entry(h.word).or_insert_with(|| {
                qualities.resize(qualities.len() + width, 0.0);
                (qualities.len() / width - 1) as u32
            });
            let q = &mut qualities[s as usize * width + c];
            *q = q.max(h.quality);
        }
    }
    WordMatches {
        m,
        columns,
        joins,
        matched,
        rows,
        qualities,
    }
}

/// What is known about one candidate title before it is scored exactly.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Tally {
    /// Bit set of the query words the title matches.
    pub matched: u32,
    /// An upper bound of the sum over matched query words of their weight times
    /// their best quality in this title: exact for the words accumulated (see
    /// [`accumulate`]), the word's whole weight for the others.
    pub quality_sum: f32,
}

/// Buffers a ranking reuses across queries on one thread, sized by slot (and
/// kept zeroed between uses), so that a query at a million titles does not
/// allocate and clear 15 MB each time.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// Best quality of the query word being accumulated, per slot.
    best: Vec<f32>,
    /// Per slot.
    tallies: Vec<Tally>,
    /// One bit set per query word (`words_per_set` u64s each): the titles it
    /// matches, through any of its matches.
    sets: Vec<u64>,
    /// Laid out as `sets`: the titles each query word reaches with quality
    /// 1.0 on their own (the word itself, or a join found exactly; not a
    /// split, which two query words share).
    exact: Vec<u64>,
    words_per_set: usize,
    /// A bit per slot (`words_per_set` u64s) when the ranking restricts its
    /// candidates to the titles holding every required query word (see
    /// [`Scratch::restrict_to`]); empty otherwise.
    mask: Vec<u64>,
    /// Per u64 of `mask`, the bits set in the ones before it: a masked
    /// title's place among the masked titles.
    mask_ranks: Vec<u32>,
    /// With a mask: each masked title and its tally, in slot order (a dense
    /// array: the tallies of a restricted ranking stay in cache, where the
    /// per-slot ones are a cache miss each).
    masked: Vec<(u32, Tally)>,
    /// With a mask: per masked title, the best quality of the query word
    /// being accumulated.
    masked_best: Vec<f32>,
    /// Titles with a tally, in the order first reached (without a mask).
    touched: Vec<u32>,
    reached: Vec<u32>,
    /// A bit per slot, for a join's titles (see [`visit_join`]).
    marks: Marks,
    /// Per join of the query being ranked, its titles once found.
    joined: JoinTitles,
    /// Set while a ranking uses the buffers: a ranking that panicked (its
    /// scorer thread lives on) left them as they were, to be cleared in full.
    in_use: bool,
}

impl Scratch {
    /// Readies the buffers for `m` query words over `slots` title slots.
    fn prepare(&mut self, m: usize, slots: usize) {
        if std::mem::replace(&mut self.in_use, true) {
            self.best.fill(0.0);
            self.tallies.fill(Tally::default());
            self.touched.clear();
            self.masked.clear();
            self.marks.0.fill(0);
            self.joined.forget();
        }
        if self.best.len() < slots {
            self.best.resize(slots, 0.0);
            self.tallies.resize(slots, Tally::default());
        }
        let mark_words = slots.div_ceil(64);
        if self.marks.0.len() < mark_words {
            self.marks.0.resize(mark_words, 0);
        }
        self.words_per_set = slots.div_ceil(64);
        self.sets.clear();
        self.sets.resize(m * self.words_per_set, 0);
        self.exact.clear();
        self.exact.resize(m * self.words_per_set, 0);
        self.mask.clear();
    }

    /// Grows the per-slot buffers to `slots` (and the sets to three query
    /// words' worth) ahead of a ranking; the buffers stay clean.
    pub fn reserve(&mut self, slots: usize) {
        self.prepare(3, slots);
        self.release();
    }

    /// Restricts the candidates of the next [`accumulate`]s to the titles of
    /// `r` over the titles of `index` (nothing is restricted when it
    /// restricts nothing).
    pub fn restrict_to(&mut self, r: &Restriction, index: &RankIndex) {
        self.mask.clear();
        self.masked.clear();
        if r.required == 0 && r.max_len.is_none() {
            return;
        }
        let per = self.words_per_set;
        if r.required != 0 {
            self.mask.resize(per, u64::MAX);
            for set in chosen(&self.sets, per, r.required) {
                self.mask.iter_mut().zip(set).for_each(|(m, &w)| *m &= w);
            }
        } else {
            self.mask.resize(per, 0);
            for set in chosen(&self.sets, per, r.reaching) {
                self.mask.iter_mut().zip(set).for_each(|(m, &w)| *m |= w);
            }
        }
        if let Some(max_len) = r.max_len {
            let max_len = max_len.min(255) as u8;
            let mut buffer = [0u8; 64];
            for (k, m) in self.mask.iter_mut().enumerate().filter(|(_, m)| **m != 0) {
                let lens = index.title_lens_64(k, &mut buffer);
                *m &= at_most_bits(lens, max_len);
            }
        }
        for set in chosen(&self.sets, per, r.aside) {
            self.mask.iter_mut().zip(set).for_each(|(m, &w)| *m |= w);
        }
        self.mask_ranks.clear();
        let mut before = 0u32;
        for (k, &w) in self.mask.iter().enumerate() {
            self.mask_ranks.push(before);
            before += w.count_ones();
            let mut bits = w;
            while bits != 0 {
                let t = (k as u32) << 6 | bits.trailing_zeros();
                self.masked.push((t, Tally::default()));
                bits &= bits - 1;
            }
        }
    }

    /// Calls `f` with every candidate title and its tally (a title some
    /// accumulated query word reached).
    pub fn for_each_candidate(&self, mut f: impl FnMut(u32, Tally)) {
        if self.mask.is_empty() {
            for &t in &self.touched {
                f(t, self.tallies[t as usize]);
            }
        } else {
            for &(t, tally) in &self.masked {
                if tally.matched != 0 {
                    f(t, tally);
                }
            }
        }
    }

    /// An upper bound of the number of candidates.
    pub fn candidates_at_most(&self) -> usize {
        if self.mask.is_empty() {
            self.touched.len()
        } else {
            self.masked.len()
        }
    }

    /// The query words of `order` (a bit set) taken in that order, each one
    /// when at least `limit` titles reach it and every word taken before it
    /// with quality 1.0 on their own (see `exact`): a pass over each word's
    /// set.
    pub fn held_words(&self, order: &[usize], limit: usize) -> u32 {
        let per = self.words_per_set;
        let mut all = vec![u64::MAX; per];
        let mut held = 0u32;
        for &i in order {
            let set = &self.exact[i * per..][..per];
            let n: usize = all
                .iter()
                .zip(set)
                .map(|(a, b)| (a & b).count_ones() as usize)
                .sum();
            if n >= limit {
                all.iter_mut().zip(set).for_each(|(a, b)| *a &= b);
                held |= 1 << i;
            }
        }
        held
    }

    /// Calls `f(k, bits)` with every non-zero u64 (the `k`-th) of the set of
    /// titles that reach every query word of `words` (a non-empty bit set)
    /// with quality 1.0 on their own, in slot order.
    pub fn each_exact_in_all(&self, words: u32, f: impl FnMut(usize, u64)) {
        each_in_all(&self.exact, self.words_per_set, words, f);
    }

    /// How many of the query words `words` (a bit set) title `t` reaches.
    pub fn words_reached(&self, words: u32, t: u32) -> u32 {
        (0..32)
            .filter(|&i| words >> i & 1 == 1 && self.in_set(i, t))
            .count() as u32
    }

    /// How many titles reach every query word of `words` (a bit set) through
    /// any of their matches; 0 for no words.
    pub fn in_all(&self, words: u32) -> usize {
        if words == 0 {
            return 0;
        }
        let mut n = 0;
        each_in_all(&self.sets, self.words_per_set, words, |_, bits| {
            n += bits.count_ones() as usize;
        });
        n
    }

    /// Whether title `t` is in query word `i`'s set.
    fn in_set(&self, i: usize, t: u32) -> bool {
        let word = self.sets[i * self.words_per_set + (t as usize >> 6)];
        word & (1u64 << (t & 63)) != 0
    }

    /// Adds to `tally` (title `t`'s) every query word of `others` whose set
    /// holds `t`, with its whole weight (an upper bound of its part).
    fn add_other_words(&self, t: u32, tally: &mut Tally, others: &[usize], sets: &WordSets) {
        for &j in others {
            if self.in_set(j, t) {
                tally.matched |= 1 << j;
                tally.quality_sum += sets.weights[j];
            }
        }
    }

    /// Forgets the tallies (the next [`accumulate`] starts afresh).
    pub fn clear_tallies(&mut self) {
        for &t in &self.touched {
            self.tallies[t as usize] = Tally::default();
        }
        self.touched.clear();
        for (_, tally) in &mut self.masked {
            *tally = Tally::default();
        }
    }

    /// Ends a ranking's use of the buffers (they are clean again).
    pub fn release(&mut self) {
        self.clear_tallies();
        self.mask.clear();
        self.masked.clear();
        // As for a join's titles: a thread keeps room for a restricted
        // ranking of common size, not for the largest it ever saw (a word in
        // every title would keep 17 MB a thread).
        if self.masked.capacity() > KEPT_MASKED {
            self.masked = Vec::new();
            self.masked_best = Vec::new();
        }
        self.joined.forget();
        self.in_use = false;
    }
}

/// The sets of the query words of `words` (a bit set) in `sets`, laid out as
/// [`Scratch::sets`] (`per` u64s a query word).
fn chosen(sets: &[u64], per: usize, words: u32) -> impl Iterator<Item = &[u64]> {
    sets.chunks_exact(per.max(1))
        .enumerate()
        .filter(move |&(i, _)| words >> i & 1 == 1)
        .map(|(_, set)| set)
}

/// Calls `f(k, bits)` with every non-zero u64 (the `k`-th) of the
/// intersection of the sets of the query words of `words` (a non-empty bit
/// set) in `sets` (laid out as [`Scratch::sets`]), in slot order.
fn each_in_all(sets: &[u64], per: usize, words: u32, mut f: impl FnMut(usize, u64)) {
    let chosen: Vec<&[u64]> = chosen(sets, per, words).collect();
    for k in 0..per {
        let bits = chosen.iter().fold(u64::MAX, |acc, set| acc & set[k]);
        if bits != 0 {
            f(k, bits);
        }
    }
}

/// A bit per byte of `lens`, set when it is at most `max` (bit `i` for
/// `lens[i]`): eight bytes at a time in a `u64` (SWAR), as a branch per title
/// cost 2.5 ns a title at a million titles and a loop per byte did not
/// vectorize.
fn at_most_bits(lens: &[u8; 64], max: u8) -> u64 {
    const H: u64 = 0x8080_8080_8080_8080;
    const PACK: u64 = 0x0102_0408_1020_4080;
    if max == u8::MAX {
        return u64::MAX;
    }
    let y = u64::from_ne_bytes([max + 1; 8]);
    let mut out = 0u64;
    for (g, group) in lens.chunks_exact(8).enumerate() {
        let x = u64::from_le_bytes(group.try_into().expect("8 bytes"));
        // Per byte, the high bit of `d` is set when x's low 7 bits are at
        // least y's (no borrow crosses a byte: x | 0x80 > y & 0x7f).
        let d = (x | H) - (y & !H);
        // x < y: y's high bit alone, or equal high bits and x's low bits less.
        let less = ((!x & y) | (!(x ^ y) & !d)) & H;
        // Each byte's high bit, gathered into the top byte, byte i at bit i.
        out |= ((less >> 7).wrapping_mul(PACK) >> 56) << (8 * g);
    }
    out
}

/// Which titles a ranking need consider as candidates (see
/// `select::restriction`): those that reach any query word of `aside` (a bit
/// set of query words), and those of at most `max_len` words (any length when
/// `None`) that reach every word of `required` (any word of `reaching` when
/// `required` is empty). Restricts nothing when `required` is empty and there
/// is no `max_len`.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Restriction {
    pub required: u32,
    pub reaching: u32,
    pub aside: u32,
    pub max_len: Option<u32>,
}

/// Per query word, how many titles it matched and its rarity weight; and how
/// many titles matched any query word.
pub(super) struct WordSets {
    pub df: Vec<usize>,
    /// Per query word, its rarity weight (see `score::weight`).
    pub weights: Vec<f32>,
    /// Titles matching at least one query word.
    pub total: usize,
}

/// Calls `visit(t, quality, alone)` for every title `t` that query word `i`
/// reaches through its own column, a split with a neighbour, or one of its
/// joins (a title may come more than once); `alone` is false for a split,
/// whose match also takes the neighbour's place. A lexicon word of its own
/// column whose postings keep a bit set is offered to `take_dense(set,
/// quality, titles)` first; when that returns true (it visited the set's
/// titles its own way), they are not visited one by one.
#[allow(clippy::too_many_arguments)]
fn reach<'a>(
    index: &'a RankIndex,
    matches: &WordMatches,
    i: usize,
    parts: &mut PartPositions,
    marks: &mut Marks,
    joined: &mut JoinTitles,
    mut take_dense: impl FnMut(&'a DenseSet, f32, usize) -> bool,
    mut visit: impl FnMut(u32, f32, bool),
) {
    let m = matches.m;
    let cols = [
        Some(i),
        i.checked_sub(1).map(|j| matches.split_col(j)),
        (i + 1 < m).then(|| matches.split_col(i)),
    ];
    for (k, c) in cols.into_iter().enumerate() {
        let Some(c) = c else { continue };
        for h in &matches.columns[c].hits {
            if k == 0 {
                if let Some(dense) = index.dense(h.word) {
                    if take_dense(dense, h.quality, index.titles_with(h.word)) {
                        continue;
                    }
                }
            }
            for block in index.postings(h.word) {
                for &t in block {
                    visit(t, h.quality, k == 0);
                }
            }
        }
    }
    for (j, join) in matches.joins.iter().enumerate() {
        if join.query_word == i {
            for &(t, q) in joined.titles(j, |found| {
                visit_join(index, matches, join, parts, marks, None, &mut |t, q| {
                    found.push((t, q))
                })
            }) {
                visit(t, q, true);
            }
        }
    }
}

/// Most masked titles [`Scratch`] keeps room for between rankings (2 MB
/// with their best qualities).
const KEPT_MASKED: usize = 1 << 17;

/// Most titles a [`JoinTitles`] list keeps room for between rankings (512 KB).
const KEPT_JOIN_TITLES: usize = 1 << 16;

/// Each join's titles with their best pair quality, found once per ranking:
/// the word sets and the tallies (twice when a word is left out) all need
/// them, and finding them reads the words of every title holding a part.
#[derive(Debug, Default)]
pub(super) struct JoinTitles {
    lists: Vec<Vec<(u32, f32)>>,
    found: Vec<bool>,
}

impl JoinTitles {
    /// Forgets the titles found (at the end of a ranking, or before one that
    /// follows a panicked one), and lets go of large lists (a join of two
    /// common parts holds hundreds of thousands of titles), so that a scorer
    /// thread does not keep the largest it ever saw: one is a fraction of the
    /// work of finding it again.
    fn forget(&mut self) {
        self.found.clear();
        for list in &mut self.lists {
            if list.capacity() > KEPT_JOIN_TITLES {
                *list = Vec::new();
            }
        }
    }

    /// Join `j`'s titles, found by `find` (which appends them) the first time
    /// since the last [`forget`](Self::forget).
    fn titles(&mut self, j: usize, find: impl FnOnce(&mut Vec<(u32, f32)>)) -> &[(u32, f32)] {
        if self.found.len() <= j {
            self.found.resize(j + 1, false);
        }
        if self.lists.len() <= j {
            self.lists.resize_with(j + 1, Vec::new);
        }
        let list = &mut self.lists[j];
        if !std::mem::replace(&mut self.found[j], true) {
            list.clear();
            find(list);
        }
        list
    }
}

/// Calls `visit(t, quality)` for every title `t` that holds both parts of
/// `join`, with the best quality of a pair of them. `pair_filter` forces (or
/// forbids) marking the titles of both parts first; `None` picks by their
/// postings' lengths.
fn visit_join(
    index: &RankIndex,
    matches: &WordMatches,
    join: &Join,
    parts: &mut PartPositions,
    marks: &mut Marks,
    pair_filter: Option<bool>,
    visit: &mut impl FnMut(u32, f32),
) {
    let head = &matches.columns[join.head_col].hits;
    let tail = &matches.columns[join.tail_col].hits;
    let postings_of =
        |hits: &[WordHit]| -> usize { hits.iter().map(|h| index.titles_with(h.word)).sum() };
    let (head_n, tail_n) = (postings_of(head), postings_of(tail));
    let (rarer, other) = if head_n <= tail_n {
        (head, tail)
    } else {
        (tail, head)
    };
    let filter =
        pair_filter.unwrap_or_else(|| head_n.max(tail_n) <= PAIR_FILTER_RATIO * head_n.min(tail_n));
    let mut checked = Vec::new();
    if !filter {
        // Each title of the rarer part is checked for both.
        for h in rarer {
            checked.extend(index.postings(h.word).flatten());
        }
    } else {
        // Both parts are common (`in` + `to`): reading every title of the
        // rarer one costs more than marking its titles and reading only those
        // the other part's postings hold too.
        for h in rarer {
            index.postings(h.word).flatten().for_each(|&t| marks.set(t));
        }
        for h in other {
            checked.extend(index.postings(h.word).flatten().filter(|&&t| marks.take(t)));
        }
        for h in rarer {
            index
                .postings(h.word)
                .flatten()
                .for_each(|&t| marks.unset(t));
        }
    }
    for (k, &t) in checked.iter().enumerate() {
        index.prefetch_words_ahead(&checked, k, |&t| t);
        matches.find_parts_in_words(index.words(t), join, parts);
        let mut top = 0.0f32;
        parts.best_pairs(join.head_len, join.tail_len, |_, _, q| top = top.max(q));
        if top > 0.0 {
            visit(t, top);
        }
    }
}

/// A join whose two parts' postings differ in length by less than this factor
/// reads the titles holding both (a pass over each part's postings) rather
/// than every title of the rarer part (a pass over their words): a posting
/// costs a bit, a title's words a lookup each.
const PAIR_FILTER_RATIO: usize = 16;

/// A bit per title slot, clear between uses.
#[derive(Debug, Default)]
struct Marks(Vec<u64>);

impl Marks {
    fn set(&mut self, t: u32) {
        self.0[t as usize >> 6] |= 1 << (t & 63);
    }

    fn unset(&mut self, t: u32) {
        self.0[t as usize >> 6] &= !(1 << (t & 63));
    }

    /// Whether `t` is set, clearing it (a title the other part reaches twice
    /// is checked once).
    fn take(&mut self, t: u32) -> bool {
        let word = &mut self.0[t as usize >> 6];
        let bit = 1 << (t & 63);
        let was = *word & bit != 0;
        *word &= !bit;
        was
    }
}

/// The set of titles each query word matches (a pass over the postings of its
/// hits, setting bits: cost proportional to the (title, matched word) pairs,
/// plus the words of the titles holding a join's rarer part), hence its weight,
/// and the number of titles matched at all.
pub(super) fn word_sets(
    index: &RankIndex,
    matches: &WordMatches,
    scratch: &mut Scratch,
) -> WordSets {
    let m = matches.m;
    scratch.prepare(m, index.slot_count());
    let per = scratch.words_per_set;
    let mut parts = PartPositions::default();
    let mut df = Vec::with_capacity(m);
    for i in 0..m {
        let set = &mut scratch.sets[i * per..(i + 1) * per];
        let exact = &mut scratch.exact[i * per..(i + 1) * per];
        let (marks, joined) = (&mut scratch.marks, &mut scratch.joined);
        let mut dense: Vec<(&DenseSet, f32)> = Vec::new();
        reach(
            index,
            matches,
            i,
            &mut parts,
            marks,
            joined,
            |d, q, _| {
                dense.push((d, q));
                true
            },
            |t, q, alone| {
                let (k, bit) = (t as usize >> 6, 1u64 << (t & 63));
                set[k] |= bit;
                if alone && q >= 1.0 {
                    exact[k] |= bit;
                }
            },
        );
        // A common word's titles are ORed in (at 1.1M, `for`: 17,000 u64s
        // rather than 460,000 slots one by one).
        for (d, q) in dense {
            set.iter_mut().zip(d.words()).for_each(|(s, &w)| *s |= w);
            if q >= 1.0 {
                exact.iter_mut().zip(d.words()).for_each(|(e, &w)| *e |= w);
            }
        }
        df.push(set.iter().map(|w| w.count_ones() as usize).sum());
    }
    let total = (0..per)
        .map(|k| {
            (0..m)
                .fold(0u64, |acc, i| acc | scratch.sets[i * per + k])
                .count_ones() as usize
        })
        .sum();
    let live = index.live_len();
    let weights = df.iter().map(|&d| weight(d, live)).collect();
    WordSets { df, weights, total }
}

/// Adds the query words `words` (indexes) to the tallies: every title they
/// reach gets its exact best quality for each of them, and becomes a
/// candidate (in `scratch.touched`). Then each candidate gets the other query
/// words it matches (from their sets, exactly) with their whole weight (an
/// upper bound of their part). Cost proportional to the (title, word) pairs of
/// `words` only.
pub(super) fn accumulate(
    index: &RankIndex,
    matches: &WordMatches,
    sets: &WordSets,
    words: &[usize],
    scratch: &mut Scratch,
) {
    if !scratch.mask.is_empty() {
        return accumulate_masked(index, matches, sets, words, scratch);
    }
    let mut parts = PartPositions::default();
    let Scratch {
        best,
        tallies,
        touched,
        reached,
        marks,
        joined,
        ..
    } = scratch;
    for &i in words {
        reached.clear();
        reach(
            index,
            matches,
            i,
            &mut parts,
            marks,
            joined,
            |_, _, _| false,
            |t, q, _| {
                let b = &mut best[t as usize];
                if *b < q {
                    if *b == 0.0 {
                        reached.push(t);
                    }
                    *b = q;
                }
            },
        );
        let (bit, w) = (1u32 << i, sets.weights[i]);
        for &t in reached.iter() {
            let q = std::mem::take(&mut best[t as usize]);
            let tally = &mut tallies[t as usize];
            if tally.matched == 0 {
                touched.push(t);
            }
            tally.matched |= bit;
            tally.quality_sum += w * q;
        }
    }
    let others = other_words(matches, words);
    if others.is_empty() {
        return;
    }
    for k in 0..scratch.touched.len() {
        let t = scratch.touched[k];
        let mut tally = scratch.tallies[t as usize];
        scratch.add_other_words(t, &mut tally, &others, sets);
        scratch.tallies[t as usize] = tally;
    }
}

/// The query words not in `words` (those [`accumulate`] adds from their sets).
fn other_words(matches: &WordMatches, words: &[usize]) -> Vec<usize> {
    (0..matches.m).filter(|i| !words.contains(i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::testing::Lcg;

    #[test]
    fn at_most_bits_sets_the_bits_of_the_bytes_at_most_the_bound() {
        let mut rng = Lcg(0x5a_11);
        for n in 0..2000 {
            let lens: [u8; 64] = std::array::from_fn(|_| match n % 3 {
                0 => rng.below(256) as u8,
                _ => rng.below(12) as u8,
            });
            let max = [0, 1, 3, 7, 127, 128, 200, 254, 255][n % 9];
            let want = (0..64).fold(0u64, |acc, b| acc | u64::from(lens[b] <= max) << b);
            assert_eq!(at_most_bits(&lens, max), want, "{lens:?} {max}");
        }
    }

    #[test]
    fn a_join_finds_the_same_titles_whether_or_not_it_marks_both_parts_first() {
        // `in` and `to` both common, so that `into` is cut into two common
        // parts; `inside` and `top` are heads of longer words for the last
        // query word.
        const WORDS: &[&str] = &["in", "to", "into", "top", "inside", "the", "go", "tool"];
        let mut rng = Lcg(0x1a70_0c0d);
        let titles: Vec<String> = (0..4000)
            .map(|_| {
                let n = 1 + rng.below(6);
                rng.words(WORDS, n)
            })
            .collect();
        let index = RankIndex::numbered(titles.iter().map(String::as_str));
        let mut checked = 0;
        let mut marks = Marks(vec![0; index.slot_count().div_ceil(64)]);
        for query in ["into the", "go into", "intoo", "intop"] {
            let words = super::super::query_words(query);
            let matches = match_words(&index, &words);
            assert!(!matches.joins.is_empty(), "{query}");
            for join in &matches.joins {
                let mut parts = PartPositions::default();
                let mut found = |filter| {
                    let mut seen = Vec::new();
                    visit_join(
                        &index,
                        &matches,
                        join,
                        &mut parts,
                        &mut marks,
                        Some(filter),
                        &mut |t, q| seen.push((t, q.to_bits())),
                    );
                    seen.sort_unstable();
                    seen.dedup();
                    seen
                };
                let (marked, read) = (found(true), found(false));
                assert_eq!(marked, read, "{query}");
                checked += marked.len();
            }
        }
        assert!(checked > 1000, "{checked}");
        // The marks are left clear for the next join.
        assert!(marks.0.iter().all(|&w| w == 0));
    }
}
