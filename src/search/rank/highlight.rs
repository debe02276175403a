//! Which parts of a displayed title the search matched, as byte ranges of the raw
//! title, for `<mark>` in the result table.
//!
//! The ranking works on the folded match copy, whose words do not line up with
//! the raw title byte for byte: NFKC and case folding change lengths (`ﬁ` → `fi`,
//! `ß` → `ss`, `İ` → `i̇`), accent folding drops marks, a compatibility char can
//! expand into letters and separators (`℃` → `°c`), and every Chinese or Japanese
//! char is a word of its own. So no offset arithmetic on the match copy is tried.
//! Instead the raw title is cut into **pieces**, byte ranges that each normalize
//! (`normalize`, then `fold`, exactly as the index does) to whole words of the
//! title and that together give all of them, in order:
//!
//! 1. The title is read as clusters (a char and the combining marks after it).
//!    A cluster is part of a word when its own match copy is not empty; maximal
//!    runs of such clusters are the word runs (what lies between normalizes to
//!    separators only).
//! 2. A run that folds to several words (a CJK run, `20℃`, half-width kana) is
//!    cut further at cluster boundaries where the words of the part before are
//!    exactly the run's next words; what cannot be cut that way stays one piece.
//!
//! The pieces then become a tiny [`RankIndex`] of their own (one "title" per
//! piece), and the query goes through the ranking's own word lookup
//! ([`gather::match_words`] with [`lookup`](super::lookup::lookup)), so a piece is
//! highlighted exactly when the ranking would count its word as matching a query
//! word: same folding, same typo budgets, same last-word prefix rule.

use std::ops::Range;

use rapidfuzz::distance::osa;
use unicode_normalization::char::is_combining_mark;

use super::compound::PartPositions;
use super::fold::fold;
use super::gather;
use super::index::RankIndex;
use super::lookup::{lookup, prefix_match, QueryWord, WordHit};
use super::query_words;
use crate::search::normalize::{is_default_ignorable, normalize};

/// A run folding to several words is cut only where a part of at most this many
/// clusters gives whole words; past that the rest of the run stays one piece
/// (this bounds the quadratic re-normalization of runs that never cut cleanly).
const MAX_PART_CLUSTERS: usize = 64;

/// Byte ranges of `title` (the raw display title, as stored) that the search
/// matched for `query` (a match copy, i.e. `normalize()`d), sorted,
/// non-overlapping, each on char boundaries; ranges that touch are merged (so
/// `数据库` found char by char is one range).
///
/// A title word is highlighted when it matches a query word under exactly the
/// ranking's rules (see [`rank`](super::rank)): after the same folding, within
/// the query word's typo budget, or — last query word only — by the prefix rule.
/// Every occurrence of a matching word is highlighted, not only the one the
/// score's alignment used.
///
/// **Prefix matches highlight the matched head only**, when the prefix rule gave
/// the word its match (its quality beat the whole-word rule's, if that matched
/// too): the head the rule accepted with the fewest edits (on a tie the one whose
/// length is nearest the typed word's, then the shorter), widened to whole raw
/// chars and marks — `stras` marks `Straß` of `Straße`, `cafe` marks `Café` of
/// `Cafés`. The whole word is highlighted instead when the head cannot be mapped
/// back (the word shares its piece with other words, or its raw prefixes do not
/// fold to prefixes of it).
///
/// Never panics; an empty title or query, or one without words, gives no ranges.
pub fn highlight(title: &str, query: &str) -> Vec<Range<usize>> {
    marks(title, query).ranges
}

/// What [`marks`] found in one title.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marks {
    /// The byte ranges to mark, as [`highlight`] gives them.
    pub ranges: Vec<Range<usize>>,
    /// Whether a marked word matched no query word exactly (after folding): it was
    /// found within a typo budget, or as a longer word the last query word begins.
    pub close: bool,
}

/// [`highlight`], and whether any marked word is a close (typo-corrected or
/// prefix) match rather than one of the query's words as typed (case and accents
/// aside): a marked piece is exact when some query word matched one of its words
/// with full quality.
pub fn marks(title: &str, query: &str) -> Marks {
    let words = query_words(query);
    let pieces = pieces(title);
    if words.is_empty() || pieces.is_empty() {
        return Marks::default();
    }
    let index = RankIndex::numbered(pieces.iter().map(|r| &title[r.clone()]));
    let matches = gather::match_words(&index, &words);

    let mut marks = vec![Mark::None; pieces.len()];
    let mut exact = vec![false; pieces.len()];
    let m = matches.m;
    // Plain words and splits: every piece holding a word the column matched.
    for column in matches.columns[..m + m.saturating_sub(1)].iter() {
        let heads = HeadRule::new(&index, &column.word);
        for hit in &column.hits {
            if hit.quality >= 1.0 {
                for &p in index.postings(hit.word).flatten() {
                    exact[p as usize] = true;
                }
            }
            let head = heads.head(&index, hit);
            for &p in index.postings(hit.word).flatten() {
                let single = index.words(p).len() == 1;
                let mark = &mut marks[p as usize];
                *mark = match (head, *mark) {
                    (_, Mark::Whole) => Mark::Whole,
                    (Some(head), _) if single => Mark::Head(head),
                    _ => Mark::Whole,
                };
            }
        }
    }
    // Joins: both pieces of every pair the ranking would count.
    if !matches.joins.is_empty() {
        let mut flat_words = Vec::new();
        let mut piece_of = Vec::new();
        for p in 0..pieces.len() as u32 {
            for &w in index.words(p) {
                flat_words.push(w);
                piece_of.push(p as usize);
            }
        }
        let mut parts = PartPositions::default();
        for join in &matches.joins {
            matches.find_parts_in_words(&flat_words, join, &mut parts);
            parts.best_pairs(join.head_len, join.tail_len, |head, tail, _| {
                // Both parts are spelled exactly: a join is not a close match.
                for piece in [piece_of[head as usize], piece_of[tail as usize]] {
                    marks[piece] = Mark::Whole;
                    exact[piece] = true;
                }
            });
        }
    }

    let mut out: Vec<Range<usize>> = Vec::new();
    let mut close = false;
    for (p, (piece, mark)) in pieces.iter().zip(&marks).enumerate() {
        if !matches!(mark, Mark::None) && !exact[p] {
            close = true;
        }
        let range = match *mark {
            Mark::None => continue,
            Mark::Whole => piece.clone(),
            Mark::Head(head) => {
                let word = index.lexicon.word(index.words(p as u32)[0]);
                piece.start..head_end(title, piece.clone(), word, head)
            }
        };
        match out.last_mut() {
            Some(prev) if prev.end == range.start => prev.end = range.end,
            _ => out.push(range),
        }
    }
    Marks { ranges: out, close }
}

/// Which head of a word a prefix column's hit highlights.
struct HeadRule {
    word: QueryWord,
    /// The same word looked up by the whole-word rule only.
    whole_hits: Vec<WordHit>,
    comparator: osa::BatchComparator<char>,
}

impl HeadRule {
    fn new(index: &RankIndex, word: &QueryWord) -> Self {
        let mut whole_hits = Vec::new();
        if word.prefix {
            let whole = QueryWord {
                chars: word.chars.clone(),
                prefix: false,
            };
            lookup(&index.lexicon, &whole, &mut whole_hits);
        }
        HeadRule {
            word: word.clone(),
            whole_hits,
            comparator: osa::BatchComparator::new(word.chars.iter().copied()),
        }
    }

    /// The number of folded chars to highlight when the prefix rule gave `hit`
    /// its match (its quality beat the whole-word rule's, if that matched too);
    /// `None` for a whole-word match. The lookup keeps the better of the two
    /// rules, so this compares with a whole-word-only lookup of the same word.
    fn head(&self, index: &RankIndex, hit: &WordHit) -> Option<usize> {
        if !self.word.prefix {
            return None;
        }
        let whole = self.whole_hits.iter().find(|w| w.word == hit.word);
        if whole.is_some_and(|w| w.quality >= hit.quality) {
            return None;
        }
        let word = index.lexicon.word(hit.word);
        (word.len() > self.word.chars.len())
            .then(|| prefix_match(&self.comparator, &self.word.chars, word))
            .flatten()
            .map(|(_, head)| head)
    }
}

/// How a piece is highlighted.
#[derive(Debug, Clone, Copy)]
enum Mark {
    None,
    Whole,
    /// Its only word matched the prefix rule only: the first `n` folded chars.
    Head(usize),
}

/// The folded words of `s`, split as the index splits titles.
fn folded_words(s: &str) -> Vec<String> {
    fold(&normalize(s))
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Byte ranges of `title`'s clusters: a char that is not a combining mark and the
/// combining marks and invisible chars after it (marks at the very start form a
/// cluster of their own). An invisible char (`normalize` removes it) belongs to its
/// neighbour, so a word it sits inside (`Kuber\u{200B}netes`) stays one run.
fn clusters(title: &str) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for (at, c) in title.char_indices() {
        let end = at + c.len_utf8();
        match out.last_mut() {
            Some(last) if is_combining_mark(c) || is_default_ignorable(c) => last.end = end,
            _ => out.push(at..end),
        }
    }
    out
}

/// Whether a cluster belongs to a word: its match copy is not empty. ASCII is
/// decided without normalizing (letters and digits are words, the rest is not).
fn is_wordy(cluster: &str) -> bool {
    match cluster.as_bytes() {
        [b] if b.is_ascii() => b.is_ascii_alphanumeric(),
        _ => !normalize(cluster).is_empty(),
    }
}

/// The title cut into pieces (see the module docs), in order.
fn pieces(title: &str) -> Vec<Range<usize>> {
    let clusters = clusters(title);
    let mut out = Vec::new();
    let mut start = 0;
    while start < clusters.len() {
        if !is_wordy(&title[clusters[start].clone()]) {
            start += 1;
            continue;
        }
        let mut end = start + 1;
        while end < clusters.len() && is_wordy(&title[clusters[end].clone()]) {
            end += 1;
        }
        split_run(title, &clusters[start..end], &mut out);
        start = end;
    }
    out
}

/// Appends the pieces of one word run (`run` = its clusters, at least one).
fn split_run(title: &str, run: &[Range<usize>], out: &mut Vec<Range<usize>>) {
    let span = |a: usize, b: usize| run[a].start..run[b - 1].end;
    let words = folded_words(&title[span(0, run.len())]);
    if words.len() <= 1 {
        out.push(span(0, run.len()));
        return;
    }
    let (mut a, mut w) = (0, 0);
    while a < run.len() {
        // The shortest part run[a..b] whose words are exactly the next words of
        // the run (and all of them exactly when it reaches the run's end).
        let cut = (a + 1..=run.len().min(a + MAX_PART_CLUSTERS)).find_map(|b| {
            let part = folded_words(&title[span(a, b)]);
            let fits = !part.is_empty()
                && words[w..].starts_with(&part)
                && (b == run.len()) == (w + part.len() == words.len());
            fits.then_some((b, part.len()))
        });
        match cut {
            Some((b, n)) => {
                out.push(span(a, b));
                a = b;
                w += n;
            }
            None => {
                out.push(span(a, run.len()));
                return;
            }
        }
    }
}

/// End (byte offset in `title`) of the shortest cluster-aligned head of the
/// one-word `piece` that folds to a prefix of `word` of at least `head` chars;
/// the piece's end when there is none.
fn head_end(title: &str, piece: Range<usize>, word: &[char], head: usize) -> usize {
    let s = &title[piece.clone()];
    for cluster in clusters(s) {
        let folded = folded_words(&s[..cluster.end]);
        let [part] = folded.as_slice() else {
            continue;
        };
        let part: Vec<char> = part.chars().collect();
        if !word.starts_with(&part) {
            continue;
        }
        if part.len() >= head {
            return piece.start + cluster.end;
        }
    }
    piece.end
}

#[cfg(test)]
// `[0..10]` here is the expected list of one byte range, not a mistyped array.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use crate::search::rank::rank;
    use crate::search::testing::Lcg;

    /// The highlighted substrings of `title` for the (raw) query `query`.
    fn marked<'a>(title: &'a str, query: &str) -> Vec<&'a str> {
        let ranges = highlight(title, &normalize(query));
        assert_well_formed(title, &ranges);
        ranges.into_iter().map(|r| &title[r]).collect()
    }

    fn assert_well_formed(title: &str, ranges: &[Range<usize>]) {
        for r in ranges {
            assert!(r.start < r.end, "{title:?}: empty range {r:?}");
            assert!(r.end <= title.len(), "{title:?}: {r:?} out of bounds");
            assert!(title.is_char_boundary(r.start) && title.is_char_boundary(r.end));
        }
        for pair in ranges.windows(2) {
            assert!(
                pair[0].end < pair[1].start,
                "{title:?}: {ranges:?} not sorted, disjoint and merged"
            );
        }
    }

    #[test]
    fn a_misspelled_query_word_highlights_the_intended_word() {
        let title = "Kubernetes container orchestration";
        assert_eq!(highlight(title, "kubrenetes"), [0..10]);
        assert_eq!(
            marked(title, "kubrenetes orchestraiton"),
            ["Kubernetes", "orchestration"]
        );
        // Two edits in a ten-letter word is within budget, three is not.
        assert_eq!(marked(title, "cnotainer"), ["container"]);
        assert!(highlight(title, "kxbxrxetes").is_empty());
    }

    #[test]
    fn accents_fold_both_ways_and_offsets_cover_the_accented_bytes() {
        let title = "Café crème";
        assert_eq!(highlight(title, "cafe"), [0..5]);
        assert_eq!(&title[0..5], "Café");
        assert_eq!(highlight(title, &normalize("CAFÉ CREME")), [0..5, 6..12]);
        assert_eq!(&title[6..12], "crème");
        // A decomposed accent (e + U+0301) is part of its word.
        let decomposed = "Cafe\u{301} noir";
        assert_eq!(highlight(decomposed, "cafe"), [0..6]);
    }

    #[test]
    fn multi_byte_titles_give_exact_byte_ranges() {
        // ß (2 bytes) folds to "ss".
        let title = "Die Straße entlang";
        assert_eq!(highlight(title, "strasse"), [4..11]);
        assert_eq!(&title[4..11], "Straße");
        assert_eq!(marked(title, "STRASSE"), ["Straße"]);
        // An emoji (4 bytes) is no word and shifts the offsets.
        let title = "🚀 Rocket launch 🚀";
        assert_eq!(highlight(title, "launch"), [12..18]);
        assert_eq!(highlight(title, "rocket launch"), [5..11, 12..18]);
        assert_eq!(marked(title, "rocket launch"), ["Rocket", "launch"]);
        // Devanagari keeps its marks; each char is 3 bytes.
        let title = "हिन्दी व्याकरण";
        assert_eq!(highlight(title, &normalize("व्याकरण")), [19..40]);
        assert_eq!(&title[19..40], "व्याकरण");
        assert!(highlight(title, &normalize("हनद")).is_empty());
        // Each CJK char is a word; neighbours found together make one range.
        let title = "データベース管理ツール";
        assert_eq!(highlight(title, &normalize("管理")), [18..24]);
        assert_eq!(&title[18..24], "管理");
        assert_eq!(marked("数据库 tools", "数据库"), ["数据库"]);
        // The ligature ﬁ (3 bytes) is "fi"; İ folds to "i" plus a dropped dot.
        let title = "\u{FB01}le İstanbul";
        assert_eq!(highlight(title, "file istanbul"), [0..5, 6..15]);
        assert_eq!(&title[0..5], "\u{FB01}le");
        assert_eq!(&title[6..15], "İstanbul");
    }

    #[test]
    fn invisible_chars_go_with_their_word() {
        assert_eq!(
            marked("Kuber\u{200B}netes tools", "kubernetes"),
            ["Kuber\u{200B}netes"]
        );
        assert_eq!(marked("⭐️ star chart", "star"), ["star"]);
        assert!(marked("⭐️ star chart", "").is_empty());
        assert_pieces_cover_the_title_words("a\u{FE0F}b \u{00AD}c\u{2060}d ❤️");
    }

    #[test]
    fn nfkc_expansions_inside_a_run_map_to_the_right_chars() {
        // U+2103 DEGREE CELSIUS is "°c": "20℃" is the two words "20" and "c".
        assert_eq!(marked("Heat to 20℃ now", "20"), ["20"]);
        // Half-width katakana compose (ﾃ + ﾞ → デ) and split into chars.
        let title = "ﾃﾞｰﾀ tool";
        assert_eq!(highlight(title, &normalize("データ")), [0..12]);
        assert_eq!(marked(title, "タ"), ["ﾀ"]);
        assert_eq!(marked(title, "デ"), ["ﾃﾞ"]);
        // ™ becomes letters that join the word before it, as in the ranking.
        assert_eq!(marked("Acme™ widgets", "acmetm"), ["Acme™"]);
        assert!(marked("Acme™ widgets", "tm").is_empty());
    }

    #[test]
    fn the_last_word_highlights_only_the_typed_prefix() {
        let title = "Kubernetes deployment guide";
        assert_eq!(marked(title, "kubernetes deplo"), ["Kubernetes", "deplo"]);
        // A typo in an unfinished word: the head with the fewest edits, nearest
        // the typed length ("deploy" and "deplo" are both one edit from "deplyo").
        assert_eq!(marked(title, "kubernetes deplyo"), ["Kubernetes", "deploy"]);
        // Only the last word is a prefix: in front, "deplo" matches nothing.
        assert_eq!(marked(title, "deplo kubernetes"), ["Kubernetes"]);
        // Two letters are the shortest prefix.
        assert_eq!(marked(title, "gu"), ["gu"]);
        assert!(marked(title, "g").is_empty());
        // The prefix rule beats the whole-word rule's one typo ("cafe" vs
        // "cafes"), and the head is widened to whole raw chars.
        assert_eq!(marked("Cafés of Paris", "cafe"), ["Café"]);
        assert_eq!(marked("Die Straße entlang", "stras"), ["Straß"]);
        assert_eq!(marked("\u{FB01}le manager", "fi"), ["\u{FB01}"]);
        assert_eq!(marked("İstanbul", "ista"), ["İsta"]);
        // A whole-word match wins over the prefix rule.
        assert_eq!(marked("guide to cooking", "guide"), ["guide"]);
    }

    #[test]
    fn a_joined_query_word_highlights_both_title_words() {
        assert_eq!(
            marked("Debian's arcade games", "arcadegames"),
            ["arcade", "games"]
        );
        assert_eq!(
            marked(
                "process pool implementation for OCaml",
                "processpool implementation"
            ),
            ["process", "pool", "implementation"]
        );
        // Apart, both still marked; one part alone marks nothing.
        assert_eq!(
            marked("TypeScript type predicate generator", "typegenerator"),
            ["type", "generator"]
        );
        assert!(marked("arcade machines", "arcadegames").is_empty());
    }

    #[test]
    fn a_split_query_highlights_the_one_title_word() {
        assert_eq!(
            marked("A jsonlint plugin for Gulp", "a json lint plugin"),
            ["A", "jsonlint", "plugin"]
        );
        assert_eq!(
            marked(
                "A CodeMirror mode for the Elixir language",
                "a code mirror mode"
            ),
            ["A", "CodeMirror", "mode"]
        );
        // The last query word may be unfinished: only the typed head is marked.
        assert_eq!(marked("Framework for apps", "frame wo"), ["Framewo"]);
    }

    #[test]
    fn a_word_matching_nothing_is_not_highlighted() {
        let title = "Kubernetes deployment guide";
        assert_eq!(marked(title, "kubernetes cooking"), ["Kubernetes"]);
        assert!(highlight(title, "zzqxj wvvq").is_empty());
        // Short words need an exact match.
        assert!(marked("to be or not", "tx").is_empty());
        assert_eq!(marked("to be or not", "or"), ["or"]);
    }

    #[test]
    fn close_tells_typo_corrected_and_prefix_matches_from_exact_ones() {
        let title = "Kubernetes deployment guide";
        let exact = |q: &str| !marks(title, &normalize(q)).close;
        assert!(exact("kubernetes guide"));
        assert!(exact("KUBERNETES"));
        assert!(exact("Kubernetes cooking"));
        assert!(!exact("kubrenetes"));
        assert!(!exact("kubernetes deplo"));
        assert!(!exact("guide kubrenetes"));
        assert!(exact("zzqxj"), "nothing marked, nothing close");
        // Folded accents are exact.
        assert!(!marks("Café crème", "cafe creme").close);
        assert!(marks("Cafés of Paris", "cafe").close);
    }

    #[test]
    fn every_occurrence_of_a_matching_word_is_highlighted() {
        let title = "data, more data; DATA!";
        assert_eq!(highlight(title, "data"), [0..4, 11..15, 17..21]);
    }

    #[test]
    fn ranges_are_sorted_disjoint_and_merged() {
        let title = "c b a c b a";
        let ranges = highlight(title, "a b c");
        assert_eq!(ranges, [0..1, 2..3, 4..5, 6..7, 8..9, 10..11]);
        assert_well_formed(title, &ranges);
        let ranges = highlight("数据库管理系统", &normalize("系统 数据"));
        assert_eq!(ranges, [0..6, 15..21]);
    }

    #[test]
    fn odd_input_never_panics() {
        for title in [
            "",
            " ",
            "!!! --- ???",
            "\u{301}\u{301}",
            "=\u{338} x",
            "🚀🚀🚀",
            "\u{FDFA}",
            "½½½½",
            "한글",
        ] {
            for query in ["", "x", "kubernetes", "ab", "\u{301}"] {
                let ranges = highlight(title, &normalize(query));
                assert_well_formed(title, &ranges);
            }
        }
        assert!(highlight("!!! --- ???", "a").is_empty());
        assert!(highlight("", "a").is_empty());
        assert!(highlight("some title", "").is_empty());

        let long = "word ".repeat(10_000);
        let ranges = highlight(&long, "word");
        assert_eq!(ranges.len(), 10_000);
        assert_well_formed(&long, &ranges);
        let long_word = "a".repeat(5_000);
        assert_eq!(highlight(&long_word, "aa"), [0..2]);
        let long_cjk = "数据".repeat(2_000);
        assert_eq!(
            highlight(&long_cjk, &normalize("数据")),
            [0..long_cjk.len()]
        );
        let long_odd = "½".repeat(2_000);
        assert_well_formed(&long_odd, &highlight(&long_odd, "1"));
    }

    /// The folded words of the pieces, in order, are the title's words as the
    /// index sees them.
    fn assert_pieces_cover_the_title_words(title: &str) {
        let from_pieces: Vec<String> = pieces(title)
            .into_iter()
            .flat_map(|r| folded_words(&title[r]))
            .collect();
        assert_eq!(from_pieces, folded_words(title), "{title:?}");
    }

    #[test]
    fn highlighting_agrees_with_the_ranking_on_generated_titles() {
        const PARTS: &[&str] = &[
            "data",
            "Café",
            "ß",
            "Straße",
            "ﬁ",
            "İ",
            "e\u{301}",
            "数",
            "据",
            "ﾃﾞ",
            "ｰ",
            "℃",
            "½",
            "™",
            "🚀",
            "हिन्दी",
            "\u{301}",
            "=\u{338}",
            "하",
            "Ελλάδα",
            "Łódź",
            "æ",
            "20",
            " ",
            " ",
            " ",
            "-",
            ".",
            "'",
        ];
        let mut rng = Lcg(0x9e37_79b9);
        let (mut found, mut missed) = (0, 0);
        for _ in 0..1500 {
            let n = 1 + rng.below(8);
            let title: String = (0..n).map(|_| *rng.pick(PARTS)).collect();
            assert_pieces_cover_the_title_words(&title);
            let index = RankIndex::build([(1, title.as_str())]);
            let other = *rng.pick(PARTS);
            // The title's match copy with one char dropped and two swapped.
            let mut typo: Vec<char> = normalize(&title).chars().collect();
            if typo.len() > 2 {
                let at = rng.below(typo.len() - 1);
                typo.swap(at, at + 1);
                typo.remove(rng.below(typo.len()));
            }
            let typo: String = typo.into_iter().collect();
            // Two words joined (a join), and a word cut in two (a split).
            let match_copy = normalize(&title);
            let joined = match_copy.replacen(' ', "", 1 + rng.below(2));
            let cut = match_copy
                .char_indices()
                .nth(2 + rng.below(4))
                .map_or(match_copy.clone(), |(at, _)| {
                    format!("{} {}", &match_copy[..at], &match_copy[at..])
                });
            for query in [
                title.clone(),
                format!("{other} {title}"),
                other.to_owned(),
                typo,
                joined,
                cut,
            ] {
                let query = normalize(&query);
                let ranges = highlight(&title, &query);
                assert_well_formed(&title, &ranges);
                let ranked = rank(&index, &query, 1).total == 1;
                assert_eq!(!ranges.is_empty(), ranked, "{title:?} / {query:?}");
                if ranked {
                    found += 1;
                } else {
                    missed += 1;
                }
            }
        }
        assert!(
            found > 1000 && missed > 500,
            "{found} found, {missed} missed"
        );
    }
}
