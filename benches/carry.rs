//! What the result cache's carry rule costs per write (issue 35): the Cache
//! actor's check of every entry it looks at when the corpus moves, for a write of
//! one page (a create: one title; a retitle: two), at 256 entries (the default
//! `SEARCH_CACHE_ENTRIES`) and at 512 (`carry::CARRY_CHECKS`, the most one move
//! checks, whatever the entry bound; past it entries are left to the LRU order).
//! An entry the move affects is patched when the changed titles alone tell its
//! new result (`rank::patch`), and that is timed too; the re-keying that follows
//! is a hash-map move per carried or patched entry, under the view's write
//! lock, and is not timed here.
//!
//! ```text
//! cargo bench --bench carry
//! ```
//!
//! Cached queries: the 40 popular two-word queries of `scripts/popular-queries.txt`,
//! then queries of two or three words of the bundled demo titles (Debian), as the
//! relevance sets make them; the changed titles are other demo titles. The cost does
//! not depend on the corpus: the check ranks each query over the changed titles
//! alone (the corpus is built once, for the cached results only).

use std::io::Read as _;

use agent_pages::search::cache::carry::{Probe, Verdict, CARRY_CHECKS};
use agent_pages::search::cache::MAX_PAGES;
use agent_pages::search::corpus::{ChangedTitle, Fingerprint, Move};
use agent_pages::search::normalize::normalize;
use agent_pages::search::rank::{self, RankIndex, SearchResult};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};

/// Rows a cached result keeps at the default `SEARCH_RESULT_LIMIT` (50 a page).
const LIMIT: usize = 50 * MAX_PAGES;

fn demo_titles() -> Vec<String> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(agent_pages::import::DEMO_CORPUS_GZ)
        .read_to_string(&mut text)
        .unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| Some(v.get("title")?.as_str()?.to_owned()))
        .collect()
}

/// `n` match copies: the popular queries, then words of demo titles.
fn queries(titles: &[String], n: usize) -> Vec<String> {
    let mut out: Vec<String> = include_str!("../scripts/popular-queries.txt")
        .lines()
        .map(normalize)
        .collect();
    for (k, title) in titles.iter().enumerate().step_by(37) {
        if out.len() >= n {
            break;
        }
        let words: Vec<&str> = title.split_whitespace().collect();
        if words.len() >= 2 {
            let take = 2 + k % 2;
            out.push(normalize(&words[..take.min(words.len())].join(" ")));
        }
    }
    out.truncate(n);
    assert_eq!(out.len(), n);
    out
}

/// A move of `changed` (page id, title before, title after) over `n` titles.
fn moved(n: usize, changed: &[(i64, Option<&str>, Option<&str>)]) -> Move {
    let created = changed.iter().filter(|c| c.1.is_none()).count();
    Move {
        from: Fingerprint([0; 32]),
        to: Fingerprint([1; 32]),
        len_from: n,
        len_to: n + created,
        changed: changed
            .iter()
            .map(|&(page_id, before, after)| ChangedTitle {
                page_id,
                before: before.map(str::to_owned),
                after: after.map(str::to_owned),
            })
            .collect(),
    }
}

fn carry(c: &mut Criterion) {
    let titles = demo_titles();
    let all = queries(&titles, CARRY_CHECKS);
    // Each query's result over the demo corpus (page ids from 1), as the cache
    // holds it: the verdict of an affected entry patches that result.
    let index = RankIndex::build(
        titles
            .iter()
            .enumerate()
            .map(|(i, t)| (i as i64 + 1, t.as_str())),
    );
    let results: Vec<(String, SearchResult)> = all
        .iter()
        .map(|q| (q.clone(), rank::rank(&index, q, LIMIT)))
        .collect();
    let n = titles.len();
    let title = |i: usize| Some(titles[i - 1].as_str());
    let mut group = c.benchmark_group("carry check per write");
    for entries in [256, CARRY_CHECKS] {
        let cached = &results[..entries];
        for (kind, changed) in [
            ("create", vec![(n as i64 + 1, None, title(1001))]),
            ("retitle", vec![(2002, title(2002), title(3003))]),
            // A page many cached queries match: each of those entries is patched
            // or dropped (and then scored again by its next search).
            (
                "retitle-matching-many",
                vec![(
                    4004,
                    title(4004),
                    Some("React component, JSON parser, HTTP client and CLI tool"),
                )],
            ),
        ] {
            let m = moved(n, &changed);
            let count = |probe: &Probe| {
                let mut counts = [0usize; 3];
                for (q, result) in cached {
                    counts[match probe.verdict(q, result, LIMIT) {
                        Verdict::Unaffected => 0,
                        Verdict::Patched(_) => 1,
                        Verdict::Affected => 2,
                    }] += 1;
                }
                counts
            };
            let [carried, patched, dropped] = count(&Probe::new(&m));
            eprintln!(
                "{kind} at {entries} entries: {carried} carried, {patched} patched, {dropped} dropped"
            );
            group.bench_with_input(BenchmarkId::new(kind, entries), &m, |b, m| {
                b.iter(|| black_box(count(&Probe::new(m))))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, carry);
criterion_main!(benches);
