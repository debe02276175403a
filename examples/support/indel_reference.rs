//! The reference ranking both the relevance example and the scoring benchmark put
//! next to `search::rank`: a plain rapidfuzz full scan with
//! `indel::BatchComparator::normalized_similarity` (Python's `fuzz.ratio`).
//! Included by `#[path]` from both targets, so the two always measure the same scan.

use rapidfuzz::distance::indel;

/// The top `limit` `(similarity 0–1, page id)` over `titles` (normalized, as chars),
/// best first, ties by lower page id.
pub fn indel_full_scan(
    titles: &[(i64, Vec<char>)],
    match_copy: &str,
    limit: usize,
) -> Vec<(f64, i64)> {
    let comparator = indel::BatchComparator::new(match_copy.chars());
    let mut scored: Vec<(f64, i64)> = titles
        .iter()
        .map(|(id, t)| (comparator.normalized_similarity(t.iter().copied()), *id))
        .collect();
    let order = |a: &(f64, i64), b: &(f64, i64)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if scored.len() > limit {
        scored.select_nth_unstable_by(limit, order);
        scored.truncate(limit);
    }
    scored.sort_unstable_by(order);
    scored
}
