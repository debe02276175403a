//! Scoring time for one query over a whole corpus (SPEC §6 "Speed"), next to a
//! reference run in the same invocation: a plain rapidfuzz full scan
//! (`indel::BatchComparator::normalized_similarity`, i.e. `fuzz.ratio`, over every
//! normalized title, then the top 50). The ratio of the two is the figure to read.
//!
//! ```text
//! AGENT_PAGES_BENCH_CORPUS=path/to/pages.jsonl \
//! AGENT_PAGES_BENCH_QUERIES=a.jsonl,b.jsonl cargo bench --bench scoring
//! ```
//!
//! * The corpus defaults to `../shared/data/npm-pages.jsonl` beside the crate root
//!   (100,000 npm package descriptions); when it is missing the bench says so and
//!   uses a synthetic corpus of 100,000 titles instead (pseudo-words with a
//!   skewed frequency, 2–12 a title). Titles are loaded as the service loads
//!   candidates (trimmed, 1–200 chars).
//! * Query sets (`{"q", ...}` a line) default to `../shared/bench/relevance-npm.jsonl`
//!   and `../shared/bench/hard-npm.jsonl`; missing ones are skipped. For each set
//!   the bench first prints the distribution over its queries (median, p99, max)
//!   of one query's time, for `rank` (median of 5 runs per query) and the indel
//!   scan (one run per query), both in wall-clock and in thread CPU time (the
//!   latter is not inflated when other processes share the cores). Criterion then
//!   times a few fixed queries, the index build, applying one changed page to the
//!   built index (`RankIndex::upsert` of a new title, `remove` + `upsert` of a
//!   page) and cloning the index (the price of copy-on-write under an `Arc`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use agent_pages::search::normalize::normalize;
use agent_pages::search::rank::{rank, RankIndex};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};

#[path = "../examples/support/indel_reference.rs"]
mod indel_reference;
use indel_reference::indel_full_scan;

/// Typo queries of the kinds searchers type: a misspelled word, swapped letters,
/// shuffled words, an unfinished last word, a common short word; then words
/// written together or apart (issue 12).
const QUERIES: &[&str] = &[
    "reatc compnent library",
    "typescirpt definitions for",
    "webpack lpugin loader",
    "http clients cach",
    "for",
    "typegenerator",
    "a json lint plugin",
    "processpool implementation",
];

const LIMIT: usize = 50;

/// Runs of `rank` per query in the distribution pass (their median counts).
const RANK_RUNS: usize = 5;

fn crate_relative(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn corpus_path() -> PathBuf {
    std::env::var_os("AGENT_PAGES_BENCH_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_relative("../shared/data/npm-pages.jsonl"))
}

fn query_paths() -> Vec<PathBuf> {
    match std::env::var("AGENT_PAGES_BENCH_QUERIES") {
        Ok(list) => list.split(',').map(PathBuf::from).collect(),
        Err(_) => ["relevance-npm.jsonl", "hard-npm.jsonl"]
            .iter()
            .map(|f| crate_relative(&format!("../shared/bench/{f}")))
            .collect(),
    }
}

fn load_titles(path: &Path) -> Option<Vec<(i64, String)>> {
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

/// `n` titles of 2–12 pseudo-words drawn from 30,000 with a skewed (roughly
/// Zipf) frequency, deterministic.
fn synthetic_titles(n: usize) -> Vec<(i64, String)> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    const SYLLABLES: &[&str] = &[
        "ba", "ko", "ri", "ta", "ne", "lo", "mu", "sa", "pe", "di", "gu", "fa", "zo", "xi", "che",
        "tra", "pro", "ser", "vin", "lex",
    ];
    let vocabulary: Vec<String> = (0..30_000)
        .map(|_| {
            (0..1 + next() % 4)
                .map(|_| SYLLABLES[next() % SYLLABLES.len()])
                .collect()
        })
        .collect();
    (1..=n as i64)
        .map(|id| {
            let words = 2 + next() % 11;
            let title = (0..words)
                .map(|_| {
                    // The square of a uniform draw favours low indexes.
                    let u = (next() % 10_000) as f64 / 10_000.0;
                    vocabulary[(u * u * vocabulary.len() as f64) as usize].as_str()
                })
                .collect::<Vec<_>>()
                .join(" ");
            (id, title)
        })
        .collect()
}

fn load_queries(path: &Path) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(path).ok()?;
    let queries = text
        .lines()
        .filter_map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).ok()?;
            Some(normalize(value.get("q")?.as_str()?))
        })
        .filter(|q| q.chars().count() >= 2)
        .collect();
    Some(queries)
}

/// CPU time used by the calling thread, in ms.
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}

/// Wall-clock and thread CPU time of one call of `f`, in ms.
fn time_ms<T>(f: impl FnOnce() -> T) -> (f64, f64) {
    let (wall, cpu) = (Instant::now(), thread_cpu_ms());
    black_box(f());
    (wall.elapsed().as_secs_f64() * 1e3, thread_cpu_ms() - cpu)
}

/// "median / p99 / max" of `times` (sorted here), in ms.
fn summary(times: &mut [f64]) -> String {
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    format!(
        "median {:>6.2}  p99 {:>6.2}  max {:>6.2}",
        at(0.5),
        at(0.99),
        times[times.len() - 1]
    )
}

/// Per-query time distribution of `rank` and the indel scan over one query set.
fn distribution(
    name: &str,
    queries: &[String],
    index: &RankIndex,
    normalized: &[(i64, Vec<char>)],
) {
    let (mut rank_wall, mut rank_cpu) = (Vec::new(), Vec::new());
    let (mut scan_wall, mut scan_cpu) = (Vec::new(), Vec::new());
    for q in queries {
        let mut runs: Vec<(f64, f64)> = (0..RANK_RUNS)
            .map(|_| time_ms(|| rank(index, q, LIMIT)))
            .collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        rank_wall.push(runs[RANK_RUNS / 2].0);
        runs.sort_by(|a, b| a.1.total_cmp(&b.1));
        rank_cpu.push(runs[RANK_RUNS / 2].1);
        let (wall, cpu) = time_ms(|| indel_full_scan(normalized, q, LIMIT));
        scan_wall.push(wall);
        scan_cpu.push(cpu);
    }
    eprintln!("query set {name}: {} queries, ms per query", queries.len());
    eprintln!("  rank             wall {}", summary(&mut rank_wall));
    eprintln!("  rank             cpu  {}", summary(&mut rank_cpu));
    eprintln!("  indel_full_scan  wall {}", summary(&mut scan_wall));
    eprintln!("  indel_full_scan  cpu  {}", summary(&mut scan_cpu));
}

fn scoring(c: &mut Criterion) {
    let path = corpus_path();
    let (titles, source) = match load_titles(&path) {
        Some(titles) => (titles, path.display().to_string()),
        None => {
            eprintln!(
                "no corpus at {} (set AGENT_PAGES_BENCH_CORPUS): using a synthetic one",
                path.display()
            );
            (synthetic_titles(100_000), "a synthetic corpus".to_owned())
        }
    };
    let index = RankIndex::build(titles.iter().map(|(id, t)| (*id, t.as_str())));
    let normalized: Vec<(i64, Vec<char>)> = titles
        .iter()
        .map(|(id, t)| (*id, normalize(t).chars().collect()))
        .collect();
    eprintln!(
        "scoring bench: {} titles from {source}; index heap ~{:.1} MB",
        titles.len(),
        index.heap_bytes() as f64 / 1e6
    );
    for queries_path in query_paths() {
        match load_queries(&queries_path) {
            Some(queries) if !queries.is_empty() => distribution(
                &queries_path.display().to_string(),
                &queries,
                &index,
                &normalized,
            ),
            _ => eprintln!("query set {} skipped: not found", queries_path.display()),
        }
    }

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

    apply_one_page(c, &titles);
}

/// Applying one changed page to an index of the whole corpus: the cost a page
/// write adds when the snapshot is updated in place instead of rebuilt.
fn apply_one_page(c: &mut Criterion, titles: &[(i64, String)]) {
    let mut index = RankIndex::build(titles.iter().map(|(id, t)| (*id, t.as_str())));
    let mut group = c.benchmark_group(format!("apply_one_page_{}_titles", titles.len()));
    group.sample_size(50);
    // Each iteration changes the next page's title (its first word dropped and
    // a new word added) and the following iteration on that page puts it back,
    // so the index stays the same size while every change is a real one.
    let mut turn = 0usize;
    group.bench_function("upsert_changed_title", |b| {
        b.iter(|| {
            let (id, title) = &titles[(turn / 2 * 7919) % titles.len()];
            if turn % 2 == 0 {
                let changed = match title.split_once(' ') {
                    Some((_, rest)) => format!("{rest} revised"),
                    None => format!("{title} revised"),
                };
                index.upsert(*id, black_box(&changed));
            } else {
                index.upsert(*id, black_box(title));
            }
            turn += 1;
        })
    });
    let mut turn = 0usize;
    group.bench_function("remove_then_upsert", |b| {
        b.iter(|| {
            let (id, title) = &titles[(turn * 7919) % titles.len()];
            index.remove(black_box(*id));
            index.upsert(*id, black_box(title));
            turn += 1;
        })
    });
    group.sample_size(10);
    group.bench_function("clone_index", |b| b.iter(|| black_box(&index).clone()));
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().configure_from_args();
    targets = scoring
}
criterion_main!(benches);
