//! Placeholder ranking (plain indel ratio over whole titles); replaced by the token
//! index ranking.

use crate::search::normalize::normalize;
use rapidfuzz::distance::indel;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoredRow {
    pub page_id: i64,
    pub score: f32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    pub rows: Vec<ScoredRow>,
    pub total: usize,
    pub truncated: bool,
}

pub struct RankIndex {
    titles: Vec<(i64, String)>,
}

impl RankIndex {
    pub fn build<'a>(titles: impl IntoIterator<Item = (i64, &'a str)>) -> RankIndex {
        RankIndex {
            titles: titles
                .into_iter()
                .map(|(id, t)| (id, normalize(t)))
                .collect(),
        }
    }
    pub fn len(&self) -> usize {
        self.titles.len()
    }
    pub fn is_empty(&self) -> bool {
        self.titles.is_empty()
    }
}

pub fn rank(index: &RankIndex, query: &str, limit: usize) -> SearchResult {
    let cmp = indel::BatchComparator::new(query.chars());
    let mut rows: Vec<ScoredRow> = index
        .titles
        .iter()
        .map(|(id, t)| ScoredRow {
            page_id: *id,
            score: (cmp.normalized_similarity(t.chars()) * 100.0) as f32,
        })
        .filter(|r| r.score >= 50.0)
        .collect();
    rows.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.page_id.cmp(&b.page_id)));
    let total = rows.len();
    rows.truncate(limit);
    SearchResult {
        truncated: total > rows.len(),
        rows,
        total,
    }
}
