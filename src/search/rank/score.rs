//! Scoring one title against the query, and the rank order.
//!
//! A title's raw score has three parts:
//!
//! * **match**: for each query word, its rarity weight (see [`weight`]) times the
//!   quality (`0..=1`) of what it is aligned with in the title (0 when nothing
//!   matches), summed, times [`MATCH_WEIGHT`]. A query word is aligned with one
//!   title word, or with two (a join: `arcadegames` → `arcade games`); two
//!   adjacent query words may share one title word (a split: `frame work` →
//!   `framework`), which counts as both found, adjacent and in order;
//! * **proximity**: for each pair of consecutive query words, [`ADJACENT`] when their
//!   title words are adjacent and in order, [`SWAPPED`] when adjacent but swapped,
//!   [`IN_ORDER`] when in order with words between — so the query's word order is
//!   rewarded but not required;
//! * **coverage**: `1 / (1 + title words left unmatched)`, times [`COVERAGE`], so an
//!   exact title outranks a longer one that merely contains the query.
//!
//! The weights keep the order "more query words found, then closer spelling, then
//! proximity, then coverage" among words of equal rarity for queries of up to
//! four words: one matched word is worth at least 0.6 of its weight. A rare word
//! outweighs common ones (`profiler for free` prefers the profiler over `Monads
//! for free`). Relevance was flat (±0.005 MRR) for proximity and coverage weights
//! from half to double these, so they are round numbers rather than fitted ones.

/// Weight of one query word's match quality.
pub(super) const MATCH_WEIGHT: f32 = 1.0;
/// Proximity credit for a consecutive query-word pair found adjacent, in order.
pub(super) const ADJACENT: f32 = 0.12;
/// ... found adjacent but in swapped order.
pub(super) const SWAPPED: f32 = 0.06;
/// ... found in order with other words between.
pub(super) const IN_ORDER: f32 = 0.05;
/// Weight of title coverage.
pub(super) const COVERAGE: f32 = 0.1;

/// How strongly rarity weighs: a query word's weight is its inverse document
/// frequency relative to that of a word in [`RARE_SHARE`] of the titles, to this
/// power (0 would weigh every word alike).
pub(super) const RARITY: f32 = 1.0;
/// Words in at most this share of the titles all weigh 1.0: only common words
/// (`for`, `the`, `js`, `plugin`) are discounted, so that among rarer words
/// spelling and proximity decide as before. (Measured on the four query sets:
/// a reference of one title, i.e. weighing every distinction of rarity, cost
/// the first sets 0.004–0.005 MRR@50; 1% kept them and most of the gain on the
/// `noise_word` queries.)
pub(super) const RARE_SHARE: f32 = 0.01;
/// The weight of a word found in every title.
pub(super) const MIN_WEIGHT: f32 = 0.1;

/// Significant binary digits of the corpus size that word rarity is measured
/// against (see [`size_class`]).
pub const SIZE_CLASS_BITS: u32 = 6;

/// The corpus size word rarity is measured against for a corpus of `n` titles:
/// `n` with all but its [`SIZE_CLASS_BITS`] leading binary digits cleared (so
/// `n` itself below 64, then classes 1/32 to 1/64 of `n` wide: 2,048 titles
/// wide at 100,000, 16,384 at a million), at most 3.2% below `n`.
///
/// Why: a create or an archive anywhere changes `n`, and with it the weight of
/// every common word, hence the score of every cached result holding one. Measured
/// against the class, a write that matches none of a query's words leaves its
/// weights, and so its result, exactly as they were until the class moves (once
/// in 2,048 creates at 100,000 titles). This is what lets the result cache carry
/// entries across writes (docs/spec.md, "The cache survives writes"). Within a
/// class the weights are those of a corpus up to 3.2% smaller.
pub fn size_class(n: usize) -> usize {
    let bits = usize::BITS - n.leading_zeros();
    if bits <= SIZE_CLASS_BITS {
        return n;
    }
    let cleared = bits - SIZE_CLASS_BITS;
    n >> cleared << cleared
}

/// Weight in `MIN_WEIGHT..=1.0` of a query word that matched `df` of `n` titles
/// (through any of its matches: typos, prefixes, splits, joins): BM25's inverse
/// document frequency `idf(D) = ln(1 + (N − D + ½) / (D + ½))` over
/// `idf(max(1, RARE_SHARE · N))`, to the power [`RARITY`], where `N` is the
/// corpus size class ([`size_class`] of `n`) and `D` the document frequency's
/// class (`size_class` of `df`: exact below 64, then at most 3.2% low; `N` never
/// below it). A word that matched nothing weighs 1.0. Computed per query from
/// the postings, so it is exact for any index state (nothing corpus-wide is
/// stored).
///
/// Why classes for `df` too: a create that matches a common query word moves
/// its `df` by one, and with an exact `df` every cached result of that word
/// would score differently. With the class, its weight moves once per class
/// width of such creates (16 at a `df` of 1,000, 64 at 4,000; only words above
/// 1% of the titles weigh below 1.0 at all), so the
/// cache can patch the new title into a result instead of scoring it again
/// (`rank::patch`).
pub(super) fn weight(df: usize, n: usize) -> f32 {
    if df == 0 || n <= 1 {
        return 1.0;
    }
    let df = size_class(df);
    let n = size_class(n).max(df) as f32;
    let idf = |df: f32| (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
    let reference = (RARE_SHARE * n).max(1.0);
    (idf(df as f32) / idf(reference))
        .powf(RARITY)
        .clamp(MIN_WEIGHT, 1.0)
}

/// Coverage part for a title of `title_words` words of which `matched` query words
/// were found (an upper bound of how many title words are accounted for).
pub(super) fn coverage(title_words: u32, matched: u32) -> f32 {
    COVERAGE / (1 + title_words.saturating_sub(matched)) as f32
}

/// The highest raw score a query with these word weights can reach (used to map
/// raw scores to `0..=100`).
pub(super) fn max_raw(weights: &[f32]) -> f32 {
    MATCH_WEIGHT * weights.iter().sum::<f32>()
        + ADJACENT * weights.len().saturating_sub(1) as f32
        + COVERAGE
}

/// Upper bound of the raw score of a title, from what the first pass knows:
/// the weighted best quality per query word (`quality_sum`), which query words
/// matched (`matched`, bit `i` for query word `i`), and the title's length. The
/// exact score differs only in proximity, which is at most [`ADJACENT`] per
/// pair of consecutive query words that both matched (a split's built-in credit
/// is one of those; a query word without a match breaks the chain). Plus
/// [`BOUND_SLACK`], since the exact score adds the same terms in another order.
pub(super) fn upper_bound(quality_sum: f32, matched: u32, title_words: u32) -> f32 {
    let pairs = (matched & (matched >> 1)).count_ones();
    MATCH_WEIGHT * quality_sum
        + ADJACENT * pairs as f32
        + coverage(title_words, matched.count_ones())
        + BOUND_SLACK
}

/// Margin for float rounding between a bound and the exact score it bounds
/// (sums of at most 32 terms below 2 each differ by far less): without it, a
/// title whose exact score ties the last row's could be skipped or not
/// depending on the order titles are visited in.
const BOUND_SLACK: f32 = 1e-4;

/// Proximity credit for a query word at title position `next` after the
/// previous query word at `prev`.
fn proximity(prev: u32, next: u32) -> f32 {
    if next == prev + 1 {
        ADJACENT
    } else if next + 1 == prev {
        SWAPPED
    } else if next > prev {
        IN_ORDER
    } else {
        0.0
    }
}

/// One way a run of query words matches in a title: query words
/// `start..end` (one, or two for a split) at title positions `first..=last` as
/// far as proximity is concerned (`first` faces the previous query word, `last`
/// the next; they differ only for a join, and may then be in either order).
#[derive(Debug, Clone, Copy)]
pub(super) struct Unit {
    pub start: u32,
    pub end: u32,
    pub first: u32,
    pub last: u32,
    /// Match part of the score (including a split's built-in [`ADJACENT`]).
    pub gain: f32,
}

impl Unit {
    /// Query words `words` matched within the one title word at `position` (a
    /// word, or a split: two query words in one title word).
    #[inline]
    pub fn within(words: std::ops::Range<usize>, position: u32, gain: f32) -> Unit {
        Unit {
            start: words.start as u32,
            end: words.end as u32,
            first: position,
            last: position,
            gain,
        }
    }
}

/// Buffers reused by [`align`] across titles.
#[derive(Debug, Default)]
pub(super) struct AlignScratch {
    score: Vec<f32>,
    start_at: Vec<usize>,
}

/// Best match + proximity part of the raw score over all ways to choose
/// non-overlapping units covering query words left to right. `units` must be
/// sorted by `start`; `m` is the number of query words. Dynamic programming
/// along the query: a unit's best total is its gain plus the best of the chains
/// ending where it starts (with proximity credit) or of any earlier chain (a
/// query word without a unit breaks the chain).
pub(super) fn align(units: &[Unit], m: usize, scratch: &mut AlignScratch) -> f32 {
    let AlignScratch { score, start_at } = scratch;
    score.clear();
    score.resize(units.len(), 0.0);
    // start_at[s] = first unit whose start is at least s.
    start_at.clear();
    let mut u = 0;
    for s in 0..=m + 1 {
        while u < units.len() && (units[u].start as usize) < s {
            u += 1;
        }
        start_at.push(u);
    }
    let ending_at = |b: usize| {
        let lo = start_at[b.saturating_sub(2)];
        let hi = start_at[b];
        (lo..hi).filter(move |&v| units[v].end as usize == b)
    };
    let mut free = 0.0f32; // best total of chains that ended at or before b
    for b in 0..m {
        for v in ending_at(b) {
            free = free.max(score[v]);
        }
        for u in start_at[b]..start_at[b + 1] {
            let mut from = free;
            for v in ending_at(b) {
                from = from.max(score[v] + proximity(units[v].last, units[u].first));
            }
            score[u] = from + units[u].gain;
        }
    }
    score.iter().copied().fold(free, f32::max)
}
