//! Scoring time for one query over a whole corpus (SPEC §6 "Speed"), next to a
//! reference run in the same invocation: a plain rapidfuzz full scan
//! (`indel::BatchComparator::normalized_similarity`, i.e. `fuzz.ratio`, over every
//! normalized title, then the top 50). The ratio of the two is the figure to read.
//!
//! ```text
//! AGENT_PAGES_BENCH_CORPUS=path/to/pages.jsonl cargo bench --bench scoring
//! ```
//!
//! The corpus defaults to `../shared/data/npm-pages.jsonl` beside the crate root
//! (100,000 npm package descriptions); when it is missing the bench says so and
//! measures nothing. Titles are loaded as the service loads candidates (trimmed,
//! 1–200 chars).

use std::path::PathBuf;

use agent_pages::search::normalize::normalize;
use agent_pages::search::rank::{rank, RankIndex};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};

#[path = "../examples/support/indel_reference.rs"]
mod indel_reference;
use indel_reference::indel_full_scan;

/// Typo queries of the kinds searchers type: a misspelled word, swapped letters,
/// shuffled words, an unfinished last word, a common short word.
const QUERIES: &[&str] = &[
    "reatc compnent library",
    "typescirpt definitions for",
    "webpack lpugin loader",
    "http clients cach",
    "for",
];

const LIMIT: usize = 50;

fn corpus_path() -> PathBuf {
    std::env::var_os("AGENT_PAGES_BENCH_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/npm-pages.jsonl")
        })
}

fn load_titles(path: &PathBuf) -> Option<Vec<(i64, String)>> {
    let text = std::fs::read_to_string(path).ok()?;
    let titles = text
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let value: serde_json::Value = serde_json::from_str(line).ok()?;
            let title = value.get("title")?.as_str()?.trim();
            (!title.is_empty() && title.chars().count() <= 200)
                .then(|| (i as i64 + 1, title.to_owned()))
        })
        .collect();
    Some(titles)
}

fn scoring(c: &mut Criterion) {
    let path = corpus_path();
    let Some(titles) = load_titles(&path) else {
        eprintln!(
            "scoring bench skipped: no corpus at {} (set AGENT_PAGES_BENCH_CORPUS)",
            path.display()
        );
        return;
    };
    let index = RankIndex::build(titles.iter().map(|(id, t)| (*id, t.as_str())));
    let normalized: Vec<(i64, Vec<char>)> = titles
        .iter()
        .map(|(id, t)| (*id, normalize(t).chars().collect()))
        .collect();
    eprintln!(
        "scoring bench: {} titles from {}",
        titles.len(),
        path.display()
    );

    let mut group = c.benchmark_group(format!("score_{}_titles", titles.len()));
    group.sample_size(20);
    for query in QUERIES {
        let match_copy = normalize(query);
        group.bench_with_input(BenchmarkId::new("rank", query), &match_copy, |b, q| {
            b.iter(|| rank(black_box(&index), black_box(q), LIMIT))
        });
        group.bench_with_input(
            BenchmarkId::new("indel_full_scan", query),
            &match_copy,
            |b, q| b.iter(|| indel_full_scan(black_box(&normalized), black_box(q), LIMIT)),
        );
    }
    group.finish();

    // Built once per candidate snapshot, not per query; shown for scale.
    let mut group = c.benchmark_group("build");
    group.sample_size(10);
    group.bench_function(format!("rank_index_{}_titles", titles.len()), |b| {
        b.iter(|| RankIndex::build(titles.iter().map(|(id, t)| (*id, t.as_str()))))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().configure_from_args();
    targets = scoring
}
criterion_main!(benches);
