//! Fuzzy title ranking (SPEC §5 "Gate 5", §6 relevance bar): word-level typo
//! tolerant matching over a per-corpus index.
//!
//! Method, in the order a query flows:
//!
//! 1. The query's match copy and every title are accent-folded (`fold`: Latin and
//!    Greek marks dropped, other scripts' marks kept) and split into words.
//! 2. Each query word is compared once with each distinct corpus word of plausible
//!    length (`lookup`): OSA distance (a swap of two adjacent letters is one edit)
//!    within a budget that grows with word length (0 edits up to 2 chars, 1 up to 6,
//!    2 beyond); the last query word also matches words it is a prefix of (with
//!    a smaller budget). Words written together on one side and apart on the
//!    other match too (`compound`): two adjacent query words joined are looked up
//!    as one word (`frame work` → `framework`), and a query word is cut where both
//!    parts are corpus words (`arcadegames` → `arcade` + `games`).
//! 3. Titles are gathered from the postings of the matched words; a first pass
//!    records which query words each title matches and their best qualities, and
//!    weighs each query word by how many titles it matched (common words such as
//!    `for` count less), which bounds the title's final score from above.
//! 4. Titles are scored exactly in order of that bound (`score`: matched words,
//!    their rarity and similarity, then word proximity and order, then how much of
//!    the title the query covers) until no remaining bound can enter the top
//!    `limit`.
//!
//! Rank order (deterministic): higher score, then fewer title words, then lower
//! page id.
//!
//! Module map: `fold` (accent folding), `index` (the per-corpus index),
//! `lookup` (query word → lexicon words), `compound` (splits and joins),
//! `gather` (steps 2–3), `score` (one title's score), `select` (step 4, the top
//! rows), `highlight` (which parts of a shown title matched).

mod compound;
mod fold;
mod gather;
mod highlight;
mod index;
mod lexicon;
mod lookup;
mod patch;
mod postings;
#[cfg(test)]
mod reference;
mod score;
mod select;

pub use highlight::{highlight, marks, Marks};
pub use index::{IndexBuilder, RankIndex};
use lookup::QueryWord;
pub use patch::{patch, Changes};
pub use score::size_class;

/// One ranked row: page id and score in 0.0..=100.0 (higher is better), with
/// what its place in the rank order comes from (so that a cached result can be
/// patched when the corpus moves, see [`patch`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoredRow {
    pub page_id: i64,
    /// What is shown: `raw` over the best raw score the query could reach, × 100,
    /// rounded to two decimals.
    pub score: f32,
    /// The unrounded score the rank order is by.
    pub raw: f32,
    /// Words in the title (fewer goes first among equal raw scores).
    pub title_words: u32,
}

/// Immutable ranking output (cached by the service): rows in rank order, at most
/// `limit`; `total` = number of titles that matched at all (see [`rank`]);
/// `truncated` = `total > rows.len()`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchResult {
    pub rows: Vec<ScoredRow>,
    pub total: usize,
    pub truncated: bool,
    /// Per query word, the titles it matched (its document frequency) and the
    /// rarity weight it was scored with; empty when nothing could match (an empty
    /// query or corpus). What [`patch`] needs to tell whether a move changed them.
    pub df: Vec<usize>,
    pub weights: Vec<f32>,
    /// For the first `highlights.len()` rows, what matched in each title (see
    /// [`marks`]); empty until [`SearchResult::highlight_titles`] fills it. The
    /// scorer fills it for the first page of rows only; later pages are marked when
    /// first shown (see `CachedResult`). The result is keyed by the corpus
    /// fingerprint, so the titles it was computed on are the ones shown.
    pub highlights: Vec<Marks>,
}

impl SearchResult {
    /// Fills [`SearchResult::highlights`] with [`marks`] of the first `count` rows'
    /// titles for `query` (a match copy); a row whose title `title_of` does not
    /// know gets none.
    pub fn highlight_titles<'a>(
        &mut self,
        query: &str,
        count: usize,
        title_of: impl Fn(i64) -> Option<&'a str>,
    ) {
        self.highlights = self
            .rows
            .iter()
            .take(count)
            .map(|row| {
                title_of(row.page_id)
                    .map(|t| marks(t, query))
                    .unwrap_or_default()
            })
            .collect();
    }
}

/// Query words beyond this many are ignored (a 64-char match copy has at most 32,
/// and matched query words are kept as bits of a `u32`).
const MAX_QUERY_WORDS: usize = 32;

/// Ranks the titles of `index` for `query`, a match copy (already `normalize()`d;
/// the service guarantees 2..=64 chars, but any string is accepted). Pure and
/// deterministic: the same index and query always give the same result.
///
/// A title **matches** when at least one of its words matches at least one query
/// word: the same word after folding, a word within the query word's typo budget
/// (OSA edits: 0 for words of 1–2 chars, 1 for 3–6, 2 for longer), or, for the
/// last query word (2 chars or more, possibly unfinished), a longer word whose
/// beginning is within the prefix budget (0 edits up to 4 chars, 1 for 5–8, 2 for
/// longer). Two adjacent query words also match one title word as if typed
/// together (the budget of the joined length but at most one edit, with fewer
/// edits than the shorter of the two has chars; an unfinished second word's head
/// exactly), and one query word of 4+ chars also matches
/// two title words (anywhere in the title, best side by side) when it is their
/// concatenation exactly (the second part may be a head of a longer word for
/// the last query word). `total` counts matching titles; titles that match
/// nothing never appear.
///
/// Rows come in rank order: higher score, then fewer title words, then lower page
/// id. The score is the title's raw score (see `score`) over the best raw score
/// the query could reach, × 100, rounded to two decimals: 100.0 means every query
/// word found exactly, in order, and nothing else in the title.
pub fn rank(index: &RankIndex, query: &str, limit: usize) -> SearchResult {
    let words = query_words(query);
    if words.is_empty() || index.is_empty() {
        return SearchResult::default();
    }
    let matches = gather::match_words(index, &words);
    let (sets, top) = with_scratch(|scratch| {
        let sets = gather::word_sets(index, &matches, scratch);
        let top = select::top_rows(index, &matches, &sets, limit, scratch);
        (sets, top)
    });
    let max_raw = score::max_raw(&sets.weights);
    let rows: Vec<ScoredRow> = top.into_iter().map(|r| r.shown(max_raw)).collect();
    SearchResult {
        truncated: sets.total > rows.len(),
        rows,
        total: sets.total,
        df: sets.df,
        weights: sets.weights,
        highlights: Vec::new(),
    }
}

thread_local! {
    /// The ranking buffers of this thread (a scorer thread keeps one set, sized
    /// for the corpus, for its whole life).
    static SCRATCH: std::cell::RefCell<gather::Scratch> = Default::default();
}

/// Grows this thread's ranking buffers to `slots` title slots now (zeroed, so
/// touched), rather than in its first ranking over a snapshot that large.
pub fn warm_scratch(slots: usize) {
    with_scratch(|scratch| scratch.reserve(slots));
}

/// Runs `f` with this thread's ranking buffers (fresh ones if they are in use:
/// a ranking inside a ranking).
fn with_scratch<R>(f: impl FnOnce(&mut gather::Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => f(&mut scratch),
        Err(_) => f(&mut gather::Scratch::default()),
    })
}

/// The folded query split into words; the last one may be unfinished.
fn query_words(query: &str) -> Vec<QueryWord> {
    let folded = fold::fold(query);
    let mut words: Vec<QueryWord> = folded
        .split(' ')
        .filter(|w| !w.is_empty())
        .take(MAX_QUERY_WORDS)
        .map(|w| QueryWord {
            chars: w.chars().collect(),
            prefix: false,
        })
        .collect();
    if let Some(last) = words.last_mut() {
        last.prefix = true;
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::normalize::normalize;
    use crate::search::testing::{demo_titles, Lcg, NEAR_QUERIES, NEAR_WORDS};
    use reference::Reference;
    use std::collections::HashMap;

    fn corpus(titles: &[&str]) -> RankIndex {
        RankIndex::build(titles.iter().enumerate().map(|(i, t)| (i as i64 + 1, *t)))
    }

    fn ids(index: &RankIndex, query: &str) -> Vec<i64> {
        rank(index, &normalize(query), 50)
            .rows
            .iter()
            .map(|r| r.page_id)
            .collect()
    }

    /// Asserts that each `(query, page)`'s first row is that page.
    fn assert_first(index: &RankIndex, cases: &[(&str, i64)]) {
        for &(query, page) in cases {
            assert_eq!(ids(index, query).first(), Some(&page), "{query:?}");
        }
    }

    const TITLES: &[&str] = &[
        "Kubernetes deployment guide",   // 1
        "Kubernetes operators in depth", // 2
        "Deploying a static site",       // 3
        "X cursor management library",   // 4
        "Tool to query DNSBL servers",   // 5
        "Rest API client for NodeJS",    // 6
        "Video mode extension library",  // 7
        "Café crème recipes",            // 8
        "हिन्दी व्याकरण",                  // 9
        "Guide to cooking",              // 10
    ];

    #[test]
    fn a_misspelled_word_finds_the_intended_title_first() {
        let index = corpus(TITLES);
        assert_eq!(ids(&index, "kubrenetes")[..2], [1, 2]);
        assert_first(
            &index,
            &[("kubrenetes deploymnet", 1), ("query dnsbl sdervers", 5)],
        );
    }

    #[test]
    fn a_swap_of_two_adjacent_letters_costs_one_edit() {
        let index = corpus(TITLES);
        // "mdoe" is two Levenshtein edits from "mode" but one OSA edit, within the
        // budget of a four-letter word.
        assert_eq!(ids(&index, "vdieo mdoe"), [7]);
    }

    #[test]
    fn the_last_word_matches_as_a_prefix() {
        let index = corpus(TITLES);
        assert_first(
            &index,
            &[
                ("cursor managem", 4),
                ("kubernetes dep", 1),
                // An unfinished word of 5+ chars may hold a typo too.
                ("kubernetes deplyo", 1),
                ("cooking gui", 10),
            ],
        );
        // A shorter one must be typed right: "dpe" is no head of "deploy…".
        assert_eq!(rank(&index, "dpe", 50).total, 0);
        // Only the last word is a prefix: in front, "managem" is a typo budget
        // away from nothing, so only "cursor" counts.
        let front = rank(&index, "managem cursor", 50);
        let back = rank(&index, "cursor managem", 50);
        assert_eq!(front.rows[0].page_id, 4);
        assert!(front.rows[0].score < back.rows[0].score);
    }

    #[test]
    fn word_order_is_not_required_but_rewarded() {
        let index = corpus(&["client for the rest api", "api rest client"]);
        let result = rank(&index, "rest api client", 50);
        assert_eq!(result.total, 2);
        assert_eq!(result.rows[0].page_id, 2);
    }

    #[test]
    fn ties_go_to_the_shorter_title_then_the_lower_page_id() {
        let index = RankIndex::build([
            (7, "alpha beta"),
            (5, "alpha gamma"),
            (3, "alpha gamma delta"),
        ]);
        let result = rank(&index, "alpha", 50);
        assert_eq!(
            result.rows.iter().map(|r| r.page_id).collect::<Vec<_>>(),
            [5, 7, 3]
        );
        assert_eq!(result.rows[0].score, result.rows[1].score);
    }

    #[test]
    fn case_and_accents_are_folded() {
        let index = corpus(TITLES);
        assert_eq!(ids(&index, "CAFE CREME"), [8]);
        assert_eq!(ids(&index, "café crème"), [8]);
        let index = corpus(&["cafe au lait"]);
        assert_eq!(ids(&index, "Café"), [1]);
    }

    #[test]
    fn a_devanagari_title_still_matches() {
        let index = corpus(TITLES);
        assert_eq!(ids(&index, "हिन्दी"), [9]);
        assert_eq!(ids(&index, "व्याकरण हिन्दी"), [9]);
    }

    #[test]
    fn chinese_and_japanese_titles_match_inside_a_run_of_chars() {
        let index = corpus(&["データベース管理ツール", "数据库管理系统", "管理者ガイド"]);
        assert_eq!(ids(&index, "数据库"), [2]);
        // All three hold 管理: shortest title first (coverage).
        assert_eq!(ids(&index, "管理"), [3, 2, 1]);
        assert_eq!(ids(&index, "ツール"), [1]);
    }

    #[test]
    fn an_empty_or_unmatched_query_gives_total_zero() {
        let index = corpus(TITLES);
        for q in ["", "zzqxj wvvq", "!!"] {
            let result = rank(&index, &normalize(q), 50);
            assert_eq!(
                (result.rows, result.total, result.truncated),
                (vec![], 0, false)
            );
        }
        let empty = RankIndex::build(std::iter::empty());
        assert!(empty.is_empty());
        assert_eq!(rank(&empty, "kubernetes", 50).total, 0);
    }

    #[test]
    fn limit_truncates_rows_but_not_total() {
        let index = corpus(TITLES);
        let result = rank(&index, "library", 1);
        assert_eq!(result.total, 2);
        assert_eq!(result.rows.len(), 1);
        assert!(result.truncated);
        let none = rank(&index, "library", 0);
        assert_eq!((none.rows.len(), none.total, none.truncated), (0, 2, true));
    }

    #[test]
    fn exact_title_scores_100_and_ranks_first() {
        let index = corpus(TITLES);
        let result = rank(&index, &normalize("Guide to cooking"), 50);
        assert_eq!(result.rows[0].page_id, 10);
        assert_eq!(result.rows[0].score, 100.0);
        assert!(result.rows[1..].iter().all(|r| r.score < 100.0));
    }

    #[test]
    fn pruned_top_rows_equal_the_head_of_the_full_ranking() {
        // A deterministic pseudo-random corpus over a small vocabulary, so that
        // many titles tie or nearly tie and the bound-based pruning is exercised.
        let vocab = [NEAR_WORDS, &["to", "of"]].concat();
        let mut rng = Lcg(0x2545_f491);
        let titles: Vec<String> = (0..3000)
            .map(|_| {
                let n = 1 + rng.below(7);
                rng.words(&vocab, n)
            })
            .collect();
        pruned_rows_equal_the_full_ranking(&titles, NEAR_QUERIES, &[1, 7, 50]);
    }

    /// For each of `queries`, over an index of `titles` (pages 0, 1, 2, …): the
    /// rows `rank` keeps at each of `limits` are the head of the reference
    /// ranking (see [`assert_ranks_as_the_reference`]).
    fn pruned_rows_equal_the_full_ranking(titles: &[String], queries: &[&str], limits: &[usize]) {
        let index = RankIndex::numbered(titles.iter().map(String::as_str));
        let reference = numbered_reference(titles);
        for &query in queries {
            assert_ranks_as_the_reference(&index, &reference, query, limits);
        }
    }

    fn numbered_reference(titles: &[String]) -> Reference {
        Reference::new(
            titles
                .iter()
                .enumerate()
                .map(|(i, t)| (i as i64, t.as_str())),
        )
    }

    /// Asserts that `rank(index, query, limit)` is the head of the reference
    /// ranking of the same corpus (`reference`), for each of `limits` and
    /// unbounded: the same total, document frequencies and weights; rows in
    /// rank order, as many as the limit allows; each row's raw score and word
    /// count the reference's for that page, and the `k`-th row's raw score the
    /// reference's `k`-th (raw scores equal up to `reference::EPSILON`, so that
    /// titles whose scores tie up to float rounding may come in either order).
    /// Returns how many limits cut the rows short.
    fn assert_ranks_as_the_reference(
        index: &RankIndex,
        reference: &Reference,
        query: &str,
        limits: &[usize],
    ) -> usize {
        let want = reference.rank(query);
        let by_page: HashMap<i64, &reference::RefRow> =
            want.rows.iter().map(|r| (r.page_id, r)).collect();
        let close = |a: f32, b: f32| (a - b).abs() <= reference::EPSILON;
        let mut cut = 0;
        for &limit in limits.iter().chain([&usize::MAX]) {
            let got = rank(index, query, limit);
            let context = format!("{query:?} limit {limit}");
            assert_eq!(got.total, want.rows.len(), "{context}");
            assert_eq!(got.truncated, got.total > got.rows.len(), "{context}");
            if got.total > 0 {
                assert_eq!(got.df, want.df, "{context}");
                assert_eq!(got.weights, want.weights, "{context}");
            }
            assert_eq!(got.rows.len(), limit.min(want.rows.len()), "{context}");
            let in_order = got
                .rows
                .windows(2)
                .all(|w| select::Ranked::of(&w[0]) < select::Ranked::of(&w[1]));
            assert!(in_order, "{context}: {:?}", got.rows);
            for (k, row) in got.rows.iter().enumerate() {
                let expected = by_page
                    .get(&row.page_id)
                    .unwrap_or_else(|| panic!("{context}: page {} matches nothing", row.page_id));
                assert!(
                    close(row.raw, expected.raw) && close(row.raw, want.rows[k].raw),
                    "{context}: row {k} {row:?}, the reference has {expected:?} and {:?} {k}th",
                    want.rows[k]
                );
                assert_eq!(row.title_words, expected.title_words, "{context}");
            }
            cut += usize::from(want.rows.len() > limit);
        }
        cut
    }

    #[test]
    fn leaving_common_words_out_of_the_candidates_keeps_the_full_ranking() {
        // Common words in most titles, rarer ones in a few hundred or a few
        // dozen, so that the rows are decided by the rarer words and the common
        // ones are only looked up (see `select::top_rows`).
        const COMMON: &[&str] = &["for", "the", "a", "library", "tool", "fo"];
        const RARE: &[&str] = &[
            "camera",
            "kamera",
            "parser",
            "webcam",
            "markswift",
            "cameras",
        ];
        let mut rng = Lcg(0x51ab_1e5e);
        let titles: Vec<String> = (0..6000)
            .map(|_| {
                let mut words: Vec<&str> =
                    (0..1 + rng.below(5)).map(|_| *rng.pick(COMMON)).collect();
                if rng.below(8) == 0 {
                    words.insert(rng.below(words.len() + 1), *rng.pick(RARE));
                }
                if rng.below(40) == 0 {
                    words.push("markswift");
                }
                words.join(" ")
            })
            .collect();
        pruned_rows_equal_the_full_ranking(
            &titles,
            &[
                "camera for the",
                "the kamera",
                "a library for webcam",
                "markswift for",
                "for the a",
                "tool parser fo",
                "coient for the markswift",
                "cameras the fo",
            ],
            &[1, 5, 50, 500],
        );
    }

    /// Titles from the hard query sets' misses (issue 12), with neighbours that
    /// share their common words.
    const COMPOUND_TITLES: &[&str] = &[
        "Debian's arcade games",                                   // 1
        "Trivial Database - development files",                    // 2
        "TypeScript Type Predicate Generator for type safe code",  // 3
        "process pool implementation for OCaml",                   // 4
        "NNTP implementation",                                     // 5
        "A jsonlint plugin for Gulp",                              // 6
        "A CodeMirror mode for the Elixir language",               // 7
        "A JSON plugin for a lint mode",                           // 8
        "Monads for free",                                         // 9
        "heap memory profiler for Linux",                          // 10
        "Documentation for free software",                         // 11
        "Free fonts for the desktop",                              // 12
        "Tools for free games",                                    // 13
        "A function that adds customizeable indents to JSON data", // 14
        "Adds custom color settings",                              // 15
        "Mode for the code editor",                                // 16
        "Database tools for developers",                           // 17
    ];

    #[test]
    fn a_one_word_joined_query_finds_the_title_that_writes_it_apart() {
        let index = corpus(COMPOUND_TITLES);
        assert_first(
            &index,
            &[
                ("arcadegames", 1),
                ("trivialdatabase", 2),
                // The parts need not be adjacent, only both present.
                ("typegenerator", 3),
                // The last word may be unfinished after the cut too.
                ("arcadegam", 1),
            ],
        );
    }

    #[test]
    fn a_joined_word_inside_a_longer_query_outweighs_the_other_words() {
        let index = corpus(COMPOUND_TITLES);
        assert_eq!(ids(&index, "processpool implementation")[..2], [4, 5]);
    }

    #[test]
    fn two_query_words_match_the_title_word_that_joins_them() {
        let index = corpus(COMPOUND_TITLES);
        assert_first(
            &index,
            &[
                ("a json lint plugin", 6),
                ("a code mirror mode", 7),
                // Joined, they get the typo budget of the longer word.
                ("a code mirorr mode", 7),
            ],
        );
        // A join that is only the longer part under a typo does not count: "a"
        // + "json" is one edit from "json", which is already matched alone.
        let result = rank(&index, "a json", 50);
        assert_eq!(result.rows[0].page_id, 8);
    }

    #[test]
    fn two_query_words_joined_allow_one_typo_and_an_exact_unfinished_head() {
        let index = corpus(&["framework", "frame", "work"]);
        let found = |q: &str| ids(&index, q).contains(&1);
        // One edit over the joined word: a substitution, or a transposition.
        assert!(found("frame wprk"));
        assert!(found("frame wrok"));
        // Unfinished, the head of the joined word is exact.
        assert!(found("frame wor"));
        // Two edits over the joined word are two readings too many.
        assert!(!found("frme wrok"));
        // A typo in an unfinished joined head: `framewro` is two edits from
        // `framework` and one from its head `framewor`.
        assert!(!found("frame wro"));
    }

    #[test]
    fn a_rare_word_outweighs_common_ones() {
        let index = corpus(COMPOUND_TITLES);
        assert_eq!(ids(&index, "profiler for free")[0], 10);
    }

    #[test]
    fn an_unfinished_long_word_is_not_beaten_by_a_shorter_title() {
        let index = corpus(COMPOUND_TITLES);
        let found = ids(&index, "adds cus");
        assert!(found[..2].contains(&14), "{found:?}");
    }

    #[test]
    fn a_query_with_joins_ranks_alike_after_other_queries_on_the_same_thread() {
        // A thread keeps its ranking buffers, a join's titles among them: each
        // ranking must find its own. `arcadegames` and `processpool` are each
        // cut in two, both in the query's first join; `typescript` is a word of
        // its own, no join.
        let index = std::sync::Arc::new(corpus(COMPOUND_TITLES));
        let queries = [
            "arcadegames",
            "processpool implementation",
            "typescript predicate",
        ];
        let fresh: Vec<Vec<ScoredRow>> = queries
            .iter()
            .map(|&q| {
                let index = index.clone();
                let q = normalize(q);
                std::thread::spawn(move || rank(&index, &q, 50).rows)
                    .join()
                    .unwrap()
            })
            .collect();
        assert!(fresh.iter().all(|rows| !rows.is_empty()));
        for round in 0..2 {
            for (q, want) in queries.iter().zip(&fresh) {
                assert_eq!(&rank(&index, &normalize(q), 50).rows, want, "{q} {round}");
            }
        }
    }

    #[test]
    fn a_joined_or_split_title_still_scores_at_most_100() {
        let index = corpus(&["frame work", "framework", "frame", "work frame"]);
        let result = rank(&index, "frame work", 50);
        assert_eq!(result.rows[0].score, 100.0);
        assert!(result.rows.iter().all(|r| r.score <= 100.0));
        let result = rank(&index, "framework", 50);
        assert_eq!(result.rows[0].page_id, 2);
        assert!(result.rows[1].score < 100.0);
    }

    #[test]
    fn index_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<RankIndex>();
    }

    /// Queries made from the bundled demo corpus (real Debian titles) the way
    /// the relevance sets make theirs: two or three words of a title, in order
    /// or reordered, the last one unfinished, one with a typo, with common
    /// words added. Every 227th title gives one, the five shapes taken in turn
    /// (about 280 queries, 56 of each shape: every shape meets hundreds of
    /// titles, and the reference of each, about 0.1 s in a debug build, keeps
    /// the test under a minute).
    fn demo_queries(titles: &[String]) -> Vec<String> {
        const STEP: usize = 227;
        let mut queries = Vec::new();
        for (n, title) in titles.iter().enumerate().step_by(STEP) {
            let words: Vec<&str> = title.split_whitespace().collect();
            if words.len() < 2 {
                continue;
            }
            let (a, b) = (words[0], words[1]);
            let query = match (n / STEP) % 5 {
                0 => format!("{a} {b}"),
                1 => format!("{} {a}", words[words.len() - 1]),
                2 => format!("{a} {}", b.chars().take(4).collect::<String>()),
                3 => {
                    let mut typo: Vec<char> = words
                        .iter()
                        .max_by_key(|w| w.len())
                        .unwrap()
                        .chars()
                        .collect();
                    if typo.len() > 3 {
                        let k = n % (typo.len() - 1);
                        typo.swap(k, k + 1);
                    }
                    format!("{} for the", typo.iter().collect::<String>())
                }
                _ => words.iter().take(3).copied().collect::<Vec<_>>().join(" "),
            };
            queries.push(query);
        }
        queries
    }

    #[test]
    fn on_the_demo_corpus_the_top_rows_equal_the_head_of_the_reference() {
        // The reference (`reference`) scores every title from the rules'
        // definitions, with none of the lexicon walk, postings, bounds or
        // pruning `rank` takes its rows with.
        let titles = demo_titles(usize::MAX);
        assert!(titles.len() > 5_000, "{}", titles.len());
        let index = RankIndex::numbered(titles.iter().map(String::as_str));
        let reference = numbered_reference(&titles);
        let queries = demo_queries(&titles);
        assert!(queries.len() > 100, "{}", queries.len());
        let mut pruned_something = 0;
        for query in &queries {
            pruned_something +=
                assert_ranks_as_the_reference(&index, &reference, query, &[1, 10, 50]);
        }
        // The pruning paths were taken, not only the trivial ones.
        assert!(pruned_something > queries.len(), "{pruned_something}");
    }

    #[test]
    fn after_writes_the_top_rows_equal_the_head_of_the_reference_over_the_live_titles() {
        // Pages created, retitled and archived in turn: the index's postings,
        // lexicon and title lengths follow every write, and the weights count
        // live titles only.
        let vocab = [
            NEAR_WORDS,
            &["framework", "frame", "work", "into", "in", "to"],
        ]
        .concat();
        let mut rng = Lcg(0x0dd_ba11);
        let mut index = RankIndex::build(std::iter::empty());
        let mut live: HashMap<i64, String> = HashMap::new();
        for n in 0..2500i64 {
            // One write in six archives an earlier page, one retitles one.
            let mut choice = rng.below(6);
            if n == 0 {
                choice = choice.max(2); // nothing to archive or retitle yet
            }
            let page = if choice < 2 {
                rng.below(n as usize) as i64
            } else {
                n
            };
            if choice == 0 {
                index.remove(page);
                live.remove(&page);
            } else {
                let words = 1 + rng.below(6);
                let title = rng.words(&vocab, words);
                index.upsert(page, &title);
                live.insert(page, title);
            }
        }
        let reference = Reference::new(live.iter().map(|(&p, t)| (p, t.as_str())));
        let mut pruned = 0;
        for query in
            NEAR_QUERIES
                .iter()
                .chain(&["frame work", "intoo the", "jsonparser", "framewrok"])
        {
            pruned += assert_ranks_as_the_reference(&index, &reference, query, &[1, 5, 50]);
        }
        assert!(pruned > 10, "{pruned}");
    }

    #[test]
    fn titles_written_together_or_apart_rank_as_the_reference_ranks_them() {
        // Words that are parts of others (`frame` + `work`, `code` + `mirror`),
        // in random titles; queries join, split, misspell and cut them short, so
        // that splits, joins and prefix tails meet typos and common words.
        const VOCAB: &[&str] = &[
            "frame",
            "work",
            "framework",
            "code",
            "mirror",
            "codemirror",
            "in",
            "to",
            "into",
            "type",
            "script",
            "typescript",
            "for",
            "the",
            "a",
            "lint",
            "jsonlint",
            "json",
        ];
        let mut rng = Lcg(0x5b11_7ed5);
        let titles: Vec<String> = (0..3000)
            .map(|_| {
                let n = 1 + rng.below(6);
                rng.words(VOCAB, n)
            })
            .collect();
        let queries = [
            "frame work",
            "framework",
            "framewrok",
            "frame wo",
            "codemirror for",
            "code mirro",
            "intothe",
            "into the",
            "in to",
            "typescriptlint",
            "type scrip",
            "jsonlint the",
            "json lint",
            "jsonli",
            "fram ework",
            "the codemirr",
            "lint for the a",
            "scripttype",
            "workframe",
            "a json",
            // A join beside another word: the pair's proximity comes from
            // the join's parts.
            "workframe for",
            "the scripttype",
            "a workframe the",
            "for mirrorcode a",
        ];
        pruned_rows_equal_the_full_ranking(&titles, &queries, &[1, 3, 20]);
    }
}
