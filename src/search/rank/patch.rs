//! Patching a ranking across a corpus move: the result of a query over snapshot
//! `S`, turned into its result over `S'` (= `S` with a few pages changed) from
//! the changed pages' titles alone, when that can be shown exact; otherwise
//! nothing, and the caller scores again.
//!
//! Why it can be exact: matching is a property of one title and the query, so a
//! query word's document frequency moves by exactly the changed titles it
//! matches after the move minus those it matched before, and so does `total`.
//! When every query word's weight (which sees its document frequency and the
//! corpus size only through their classes, `score::weight`) is the same after
//! the move, every unchanged title keeps its raw score, the best reachable raw
//! score stays, and so does every shown score. The rows then are the old rows
//! without the changed pages, plus the changed pages' new titles that match
//! (scored with the same weights), in rank order, cut to the limit. That is the
//! new top only if nothing that was past the old cut could come up: when the
//! old result held every match (not truncated), or when at least `limit` rows
//! still rank at or above the old last row (every title past the old cut ranks
//! below it, and none of those changed).

use super::gather::{self, Scratch};
use super::index::RankIndex;
use super::select::{self, Ranked};
use super::{query_words, score, SearchResult};

/// The pages one corpus move changed, indexed on their own: their titles before
/// the move (the pages that were candidates) and after it (the pages that are).
/// A page whose title did not change (a body edit) is in both.
#[derive(Debug, Default)]
pub struct Changes {
    before: RankIndex,
    after: RankIndex,
    /// Every changed page id, ascending.
    ids: Vec<i64>,
}

impl Changes {
    /// From `(page id, title before, title after)` per changed page (`None`:
    /// not a candidate on that side). Cost proportional to the titles' words.
    pub fn new<'a>(
        pages: impl IntoIterator<Item = (i64, Option<&'a str>, Option<&'a str>)>,
    ) -> Self {
        let (mut before, mut after, mut ids) = (Vec::new(), Vec::new(), Vec::new());
        for (id, old, new) in pages {
            ids.push(id);
            before.extend(old.map(|t| (id, t)));
            after.extend(new.map(|t| (id, t)));
        }
        ids.sort_unstable();
        ids.dedup();
        Self {
            before: RankIndex::build(before),
            after: RankIndex::build(after),
            ids,
        }
    }

    /// Whether some changed title, before or after, matches `query` (a match
    /// copy) at all.
    pub fn match_any(&self, query: &str) -> bool {
        super::rank(&self.before, query, 0).total > 0
            || super::rank(&self.after, query, 0).total > 0
    }
}

/// What the query's words match among one side's changed titles.
struct Side {
    matches: gather::WordMatches,
    /// Per query word, the titles it matches, and the titles matching any.
    sets: gather::WordSets,
    /// The ranking buffers `sets` were made in (the top rows read them).
    scratch: Scratch,
}

/// `words` over `index` (`None` when it holds no title).
fn side(index: &RankIndex, words: &[super::QueryWord]) -> Option<Side> {
    if index.is_empty() {
        return None;
    }
    let matches = gather::match_words(index, words);
    let mut scratch = Scratch::default();
    let sets = gather::word_sets(index, &matches, &mut scratch);
    Some(Side {
        matches,
        sets,
        scratch,
    })
}

/// `result` (of `query`, a match copy, ranked with at most `limit` rows over a
/// snapshot) as ranking `query` over that snapshot with `changes` applied would
/// give it, when that can be shown from the changed titles alone (see the module
/// docs); `len_after` is the number of titles after the move. `None` when a
/// weight moved, when a row left a truncated result with no sure replacement,
/// or when `result` holds no weights (nothing could match when it was made).
/// Highlights are left empty (the caller marks what it shows).
pub fn patch(
    result: &SearchResult,
    query: &str,
    changes: &Changes,
    len_after: usize,
    limit: usize,
) -> Option<SearchResult> {
    let words = query_words(query);
    let m = words.len();
    if m == 0 || result.weights.len() != m || result.df.len() != m {
        return None;
    }
    let before = side(&changes.before, &words);
    let mut after = side(&changes.after, &words);
    let count = |s: &Option<Side>, i: usize| s.as_ref().map_or(0, |s| s.sets.df[i]);
    let mut weights = Vec::with_capacity(m);
    let mut df = Vec::with_capacity(m);
    for i in 0..m {
        let d = (result.df[i] + count(&after, i)).checked_sub(count(&before, i))?;
        let w = score::weight(d, len_after);
        if w.to_bits() != result.weights[i].to_bits() {
            return None;
        }
        df.push(d);
        weights.push(w);
    }
    let total_of = |s: &Option<Side>| s.as_ref().map_or(0, |s| s.sets.total);
    let total = (result.total + total_of(&after)).checked_sub(total_of(&before))?;

    let mut rows: Vec<Ranked> = result
        .rows
        .iter()
        .filter(|r| changes.ids.binary_search(&r.page_id).is_err())
        .map(Ranked::of)
        .collect();
    if let Some(side) = after.as_mut() {
        side.sets.weights.clone_from(&weights);
        rows.extend(select::top_rows(
            &changes.after,
            &side.matches,
            &side.sets,
            usize::MAX,
            &mut side.scratch,
        ));
    }
    rows.sort_unstable();
    if result.truncated {
        let last = Ranked::of(result.rows.last()?);
        if rows.iter().take_while(|r| **r <= last).count() < limit {
            return None;
        }
    } else if rows.len() != total {
        // Every match was a row and is one still: a count that disagrees means
        // this reasoning does not hold for this result; score again.
        return None;
    }
    rows.truncate(limit);
    let max_raw = score::max_raw(&weights);
    let rows: Vec<_> = rows.into_iter().map(|r| r.shown(max_raw)).collect();
    Some(SearchResult {
        truncated: total > rows.len(),
        rows,
        total,
        df,
        weights,
        highlights: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::rank::rank;

    /// Five titles about parsers among 600 others: 1% of the titles is 6, so
    /// every query word below weighs 1.0 however a few titles change.
    fn corpus(changed: &[(i64, Option<&str>)]) -> RankIndex {
        let mut titles: Vec<(i64, String)> = [
            (1, "json parser for node"),
            (2, "fast json parser"),
            (3, "json schema validator"),
            (4, "http client"),
            (5, "yaml parser"),
        ]
        .iter()
        .map(|&(id, t)| (id, t.to_owned()))
        .chain((100..700).map(|id| (id, format!("garden note {id}"))))
        .collect();
        for &(id, title) in changed {
            titles.retain(|(i, _)| *i != id);
            titles.extend(title.map(|t| (id, t.to_owned())));
        }
        titles.sort_unstable();
        RankIndex::build(titles.iter().map(|(id, t)| (*id, t.as_str())))
    }

    #[test]
    fn a_created_title_that_matches_is_patched_in_as_a_cold_ranking_would_place_it() {
        let old = rank(&corpus(&[]), "json parser", 50);
        let changes = Changes::new([(9, None, Some("json parser"))]);
        let patched = patch(&old, "json parser", &changes, 606, 50).expect("patched");
        assert_eq!(
            patched,
            rank(&corpus(&[(9, Some("json parser"))]), "json parser", 50)
        );
        assert_eq!(patched.rows[0].page_id, 9);
        assert_eq!(patched.total, old.total + 1);
    }

    #[test]
    fn an_archived_row_leaves_a_whole_result_and_a_truncated_one_is_given_up() {
        let whole = rank(&corpus(&[]), "parser", 50);
        let changes = Changes::new([(2, Some("fast json parser"), None)]);
        let patched = patch(&whole, "parser", &changes, 604, 50).expect("patched");
        assert_eq!(patched, rank(&corpus(&[(2, None)]), "parser", 50));
        // Cut to two rows, the third match could take the archived row's place:
        // unknown from the changes alone.
        let cut = rank(&corpus(&[]), "parser", 2);
        assert!(cut.truncated && cut.rows.iter().any(|r| r.page_id == 2));
        assert_eq!(patch(&cut, "parser", &changes, 604, 2), None);
    }

    #[test]
    fn a_new_title_below_the_cut_of_a_truncated_result_only_counts() {
        let cut = rank(&corpus(&[]), "parser", 2);
        let long = "a parser with many more words in it";
        let changes = Changes::new([(9, None, Some(long))]);
        let patched = patch(&cut, "parser", &changes, 606, 2).expect("patched");
        assert_eq!(patched, rank(&corpus(&[(9, Some(long))]), "parser", 2));
        assert_eq!(patched.rows, cut.rows);
        assert_eq!(patched.total, cut.total + 1);
    }

    #[test]
    fn a_retitle_within_a_truncated_result_that_keeps_its_row_is_patched() {
        let cut = rank(&corpus(&[]), "json", 2);
        assert_eq!(cut.rows[0].page_id, 2, "{cut:?}");
        let changes = Changes::new([(2, Some("fast json parser"), Some("json"))]);
        let patched = patch(&cut, "json", &changes, 605, 2).expect("patched");
        assert_eq!(patched, rank(&corpus(&[(2, Some("json"))]), "json", 2));
    }

    #[test]
    fn a_moved_weight_gives_up() {
        // Two titles: one more holding `json` weighs it differently.
        let small = RankIndex::build([(1, "json"), (2, "yaml")]);
        let old = rank(&small, "json", 50);
        let changes = Changes::new([(3, None, Some("json tools"))]);
        assert_eq!(patch(&old, "json", &changes, 3, 50), None);
    }
}
