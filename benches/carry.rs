//! What the result cache's carry rule costs per write (issue 35): the Cache
//! actor's check of every entry it looks at when the corpus moves, for a write of
//! one page (a create: one title; a retitle: two), at 256 entries (the default
//! `SEARCH_CACHE_ENTRIES`) and at 512 (`carry::CARRY_CHECKS`, the most one move
//! checks, whatever the entry bound; past it entries are left to the LRU order).
//! The re-keying that follows is a hash-map move per carried entry, under the
//! view's write lock, and is not timed here.
//!
//! ```text
//! cargo bench --bench carry
//! ```
//!
//! Cached queries: the 40 popular two-word queries of `scripts/popular-queries.txt`,
//! then queries of two or three words of the bundled demo titles (Debian), as the
//! relevance sets make them; the changed titles are other demo titles. The cost does
//! not depend on the corpus: the check ranks each query over the changed titles
//! alone.

use std::io::Read as _;

use agent_pages::search::cache::carry::{Probe, CARRY_CHECKS};
use agent_pages::search::corpus::{Fingerprint, Move};
use agent_pages::search::normalize::normalize;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};

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

fn moved(titles: Vec<String>) -> Move {
    Move {
        from: Fingerprint([0; 32]),
        to: Fingerprint([1; 32]),
        len_from: 100_000,
        len_to: 100_001,
        titles,
    }
}

fn carry(c: &mut Criterion) {
    let titles = demo_titles();
    let all = queries(&titles, CARRY_CHECKS);
    let mut group = c.benchmark_group("carry check per write");
    for entries in [256, CARRY_CHECKS] {
        let cached = &all[..entries];
        for (kind, changed) in [
            ("create", vec![titles[1001].clone()]),
            ("retitle", vec![titles[2002].clone(), titles[3003].clone()]),
            // A page many cached queries match: each of those entries is dropped
            // (and scored again by its next search).
            (
                "retitle-matching-many",
                vec![
                    titles[4004].clone(),
                    "React component, JSON parser, HTTP client and CLI tool".to_owned(),
                ],
            ),
        ] {
            let m = moved(changed);
            let carried = {
                let probe = Probe::new(&m);
                cached.iter().filter(|q| probe.unaffected(q)).count()
            };
            eprintln!("{kind} at {entries} entries: {carried} carried");
            group.bench_with_input(BenchmarkId::new(kind, entries), &m, |b, m| {
                b.iter(|| {
                    let probe = Probe::new(m);
                    black_box(cached.iter().filter(|q| probe.unaffected(q)).count())
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, carry);
criterion_main!(benches);
