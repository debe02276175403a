//! Relevance and speed of `search::rank` next to a plain RapidFuzz full scan (SPEC §6).
//!
//! ```text
//! cargo run --release --example relevance -- CORPUS.jsonl[.gz] QUERIES.jsonl[.gz]
//! ```
//!
//! * `CORPUS.jsonl`: one page a line, `{"slug", "title", ...}` (gzip-compressed
//!   when the name ends in `.gz`, as the million-page corpus ships); titles are loaded as
//!   the service loads candidates: a title that is empty after trimming or longer
//!   than 200 chars is skipped; page ids are 1-based line numbers.
//! * `QUERIES.jsonl`: `{"q", "kind", "relevant": [slug, ...]}`; `q` is turned into
//!   its match copy with `normalize` as the service does.
//!
//! Metrics, over queries (overall and per `kind`), from the top 50 rows:
//! MRR@50 = mean of 1/rank of the first relevant row (0 if none in the top 50);
//! recall@k = share of queries with a relevant row in the top k. Time is wall
//! clock per query on one thread, scoring only (the query's `normalize` excluded).
//! The reference ranks every title by
//! `rapidfuzz::distance::indel::BatchComparator::normalized_similarity` (equal to
//! Python's `fuzz.ratio`) over normalized titles, ties by lower page id.
//! `RELEVANCE_MISSES=1` also lists the queries whose first relevant row is not
//! first, with what came first; `RELEVANCE_SLOW_MS=N` lists the queries that took
//! N ms of CPU time or more; `RELEVANCE_NO_REFERENCE=1` skips the reference scan (a minute at
//! a million titles); `RELEVANCE_LIMIT=500` ranks 500 rows as the service does
//! (`SEARCH_RESULT_LIMIT` × 10 pages; the metrics still read the first 50).
//! Times are also given as thread CPU time (`cpu` columns), which other
//! processes on the machine do not inflate.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use agent_pages::search::normalize::normalize;
use agent_pages::search::rank::{rank, RankIndex};
use serde::Deserialize;

#[path = "support/indel_reference.rs"]
mod indel_reference;

/// SPEC §3: a title is 1–200 chars after trimming.
const MAX_TITLE_CHARS: usize = 200;
/// SPEC §2 `SEARCH_RESULT_LIMIT` default; MRR is cut at this depth.
const LIMIT: usize = 50;

#[derive(Deserialize)]
struct Page {
    slug: String,
    title: String,
}

#[derive(Deserialize)]
struct Query {
    q: String,
    kind: String,
    relevant: Vec<String>,
}

#[derive(Default, Clone)]
struct Tally {
    queries: usize,
    reciprocal_rank: f64,
    at1: usize,
    at10: usize,
}

impl Tally {
    fn add(&mut self, first_relevant: Option<usize>) {
        self.queries += 1;
        if let Some(r) = first_relevant {
            self.reciprocal_rank += 1.0 / r as f64;
            self.at1 += usize::from(r == 1);
            self.at10 += usize::from(r <= 10);
        }
    }

    fn cells(&self) -> String {
        let n = self.queries.max(1) as f64;
        format!(
            "{:>6.3} {:>6.3} {:>6.3}",
            self.reciprocal_rank / n,
            self.at1 as f64 / n,
            self.at10 as f64 / n
        )
    }
}

/// Metrics of one ranker, overall and by query kind, plus per-query times.
#[derive(Default)]
struct Report {
    overall: Tally,
    by_kind: BTreeMap<String, Tally>,
    times: Vec<Duration>,
    /// Thread CPU time per query, ms.
    cpu: Vec<f64>,
}

impl Report {
    fn add(&mut self, kind: &str, first_relevant: Option<usize>, took: Duration, cpu: f64) {
        self.cpu.push(cpu);
        self.overall.add(first_relevant);
        self.by_kind
            .entry(kind.to_owned())
            .or_default()
            .add(first_relevant);
        self.times.push(took);
    }

    /// Median, mean, 95th and 99th percentile and maximum of the per-query
    /// wall-clock times (or with `cpu`, thread CPU times), in ms.
    fn ms(&self, cpu: bool) -> (f64, f64, f64, f64, f64) {
        let mut t: Vec<f64> = if cpu {
            self.cpu.clone()
        } else {
            self.times.iter().map(|d| d.as_secs_f64() * 1e3).collect()
        };
        t.sort_by(f64::total_cmp);
        let at = |q: f64| {
            t.get(((t.len() as f64 * q) as usize).min(t.len().saturating_sub(1)))
                .copied()
                .unwrap_or(0.0)
        };
        let mean = t.iter().sum::<f64>() / t.len().max(1) as f64;
        (
            at(0.5),
            mean,
            at(0.95),
            at(0.99),
            t.last().copied().unwrap_or(0.0),
        )
    }
}

/// The whole text of `path`, gunzipped when its name ends in `.gz`.
fn read_text(path: &str) -> std::io::Result<String> {
    if path.ends_with(".gz") {
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(std::fs::File::open(path)?),
            &mut text,
        )?;
        Ok(text)
    } else {
        std::fs::read_to_string(path)
    }
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [corpus_path, queries_path] = &args[..] else {
        eprintln!("usage: relevance CORPUS.jsonl[.gz] QUERIES.jsonl[.gz]");
        std::process::exit(2);
    };
    let show_misses = std::env::var_os("RELEVANCE_MISSES").is_some();
    let limit: usize = std::env::var("RELEVANCE_LIMIT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(LIMIT)
        .max(LIMIT);
    let slow_ms: Option<f64> = std::env::var("RELEVANCE_SLOW_MS")
        .ok()
        .and_then(|v| v.parse().ok());

    let mut titles: Vec<(i64, String)> = Vec::new();
    let mut id_of_slug: HashMap<String, i64> = HashMap::new();
    for (line_no, line) in read_text(corpus_path)?.lines().enumerate() {
        let page: Page = serde_json::from_str(line)?;
        let title = page.title.trim();
        if title.is_empty() || title.chars().count() > MAX_TITLE_CHARS {
            continue;
        }
        let id = line_no as i64 + 1;
        id_of_slug.insert(page.slug, id);
        titles.push((id, title.to_owned()));
    }
    let queries: Vec<Query> = read_text(queries_path)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;

    let started = Instant::now();
    let index = RankIndex::build(titles.iter().map(|(id, t)| (*id, t.as_str())));
    let build_time = started.elapsed();
    let title_of: HashMap<i64, &str> = titles.iter().map(|(id, t)| (*id, t.as_str())).collect();

    // Reference: normalized titles as chars, scanned in full for every query.
    let reference_titles: Vec<(i64, Vec<char>)> = titles
        .iter()
        .map(|(id, t)| (*id, normalize(t).chars().collect()))
        .collect();

    // Each ranker runs over all queries in its own pass, so neither evicts the
    // other's data from the caches between queries.
    let relevant_of = |query: &Query| -> Vec<i64> {
        query
            .relevant
            .iter()
            .filter_map(|s| id_of_slug.get(s).copied())
            .collect()
    };
    let first_relevant = |ids: &[i64], relevant: &[i64]| {
        ids.iter()
            .position(|id| relevant.contains(id))
            .map(|p| p + 1)
    };
    let mut ours = Report::default();
    for query in &queries {
        let match_copy = normalize(&query.q);
        let relevant = relevant_of(query);
        let (started, cpu) = (Instant::now(), thread_cpu_ms());
        let result = rank(&index, &match_copy, limit);
        let (took, cpu) = (started.elapsed(), thread_cpu_ms() - cpu);
        let ids: Vec<i64> = result.rows.iter().take(LIMIT).map(|r| r.page_id).collect();
        let found = first_relevant(&ids, &relevant);
        ours.add(&query.kind, found, took, cpu);
        if slow_ms.is_some_and(|ms| cpu >= ms) {
            println!(
                "slow {:?} [{}] {:.3} cpu ms, total {}",
                query.q, query.kind, cpu, result.total
            );
        }
        if show_misses && found != Some(1) {
            println!(
                "miss {:?} [{}] first relevant at {:?}, total {}",
                query.q, query.kind, found, result.total
            );
            println!("      want {:?}", relevant.first().map(|id| title_of[id]));
            for r in result.rows.iter().take(3) {
                println!("      {:6.2} {}", r.score, title_of[&r.page_id]);
            }
        }
    }
    let mut reference = Report::default();
    let skip_reference = std::env::var_os("RELEVANCE_NO_REFERENCE").is_some();
    for query in queries.iter().filter(|_| !skip_reference) {
        let match_copy = normalize(&query.q);
        let (started, cpu) = (Instant::now(), thread_cpu_ms());
        let ids: Vec<i64> = indel_reference::indel_full_scan(&reference_titles, &match_copy, LIMIT)
            .into_iter()
            .map(|(_, id)| id)
            .collect();
        let (took, cpu) = (started.elapsed(), thread_cpu_ms() - cpu);
        reference.add(
            &query.kind,
            first_relevant(&ids, &relevant_of(query)),
            took,
            cpu,
        );
    }

    println!(
        "corpus {corpus_path}: {} titles, index built in {:.0} ms, ~{:.1} MB",
        index.len(),
        build_time.as_secs_f64() * 1e3,
        index.heap_bytes() as f64 / 1e6
    );
    println!("queries {queries_path}: {}", queries.len());
    println!();
    println!(
        "{:<22} {:<15} {:>6} {:>6} {:>6}  {:>9} {:>9} {:>9} {:>9} {:>9}",
        "ranker",
        "kind",
        "MRR@50",
        "R@1",
        "R@10",
        "median ms",
        "mean ms",
        "p95 ms",
        "p99 ms",
        "max ms"
    );
    let reports = [("search::rank", &ours), ("indel ratio (ref)", &reference)];
    for (name, report) in reports.into_iter().filter(|(_, r)| !r.times.is_empty()) {
        let (median, mean, p95, p99, max) = report.ms(false);
        println!(
            "{name:<22} {:<15} {}  {median:>9.3} {mean:>9.3} {p95:>9.3} {p99:>9.3} {max:>9.3}",
            "all",
            report.overall.cells()
        );
        let (median, mean, p95, p99, max) = report.ms(true);
        println!(
            "{:<22} {:<15} {:>20}  {median:>9.3} {mean:>9.3} {p95:>9.3} {p99:>9.3} {max:>9.3}",
            "", "(cpu ms)", ""
        );
        for (kind, tally) in &report.by_kind {
            println!("{:<22} {kind:<15} {}", "", tally.cells());
        }
    }
    Ok(())
}
