//! The write path of the search snapshot at a large corpus, *while a scoring
//! holds the snapshot* (issue 22): `Snapshot::apply` of one changed page to a
//! snapshot that another holder still reads, so every chunk the page touches is
//! copied rather than changed in place. This is the work one API write adds to
//! the next search.
//!
//! ```text
//! AGENT_PAGES_BENCH_CORPUS=path/to/million-pages.jsonl.gz cargo bench --bench snapshot_write
//! ```
//!
//! The corpus (`{"slug", "title", ...}` a line, gzip-compressed when the name
//! ends in `.gz`) is loaded as the service loads candidates: page ids are
//! 1-based line numbers, titles trimmed, 1–200 chars. Without
//! `AGENT_PAGES_BENCH_CORPUS` the bench prints why and measures nothing.
//!
//! Benches: `create` (a new page), `retitle` (an existing page's title
//! changed), `remove` (a page leaving the candidates); `clone_only` (the copy
//! of the chunk pointers every write makes, for scale); and, outside
//! criterion, the build of the whole snapshot once.

use std::io::Read;
use std::sync::Arc;
use std::time::Instant;

use agent_pages::page_store::Candidate;
use agent_pages::search::corpus::Snapshot;
use agent_pages::search::rank::rank;
use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn load(path: &str) -> Vec<Candidate> {
    let file = std::fs::File::open(path).expect("opening AGENT_PAGES_BENCH_CORPUS");
    let mut text = String::new();
    if path.ends_with(".gz") {
        flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .expect("reading the corpus");
    } else {
        std::io::BufReader::new(file)
            .read_to_string(&mut text)
            .expect("reading the corpus");
    }
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let value: serde_json::Value = serde_json::from_str(line).ok()?;
            let title = value.get("title")?.as_str()?.trim();
            let slug = value.get("slug")?.as_str()?;
            (!title.is_empty() && title.chars().count() <= 200).then(|| Candidate {
                id: i as i64 + 1,
                version: 1,
                slug: slug.to_owned(),
                title: title.to_owned(),
                updated_at: 0,
            })
        })
        .collect()
}

fn snapshot_write(c: &mut Criterion) {
    let Ok(path) = std::env::var("AGENT_PAGES_BENCH_CORPUS") else {
        eprintln!(
            "snapshot_write: set AGENT_PAGES_BENCH_CORPUS to a corpus (.jsonl or .jsonl.gz) \
             to measure; nothing measured"
        );
        return;
    };
    let pages = load(&path);
    let n = pages.len();
    let started = Instant::now();
    let snapshot = Arc::new(Snapshot::build(1, pages));
    eprintln!(
        "snapshot_write: {n} pages from {path}; snapshot built in {:.0} ms, index ~{:.1} MB",
        started.elapsed().as_secs_f64() * 1e3,
        snapshot.index.heap_bytes() as f64 / 1e6
    );
    // A scoring holds the snapshot for as long as the benches run: the writes
    // below may never change what it reads.
    let scoring = snapshot.clone();
    let before = rank(&scoring.index, "python client library", 50);

    let mut group = c.benchmark_group(format!("snapshot_write_{n}_pages"));
    group.sample_size(50);
    let mut k = 0i64;
    group.bench_function("create", |b| {
        b.iter(|| {
            k += 1;
            let page = Candidate {
                id: n as i64 + 1 + k,
                version: 1,
                slug: format!("bench-page-{k}"),
                title: format!("Loadgen stream page {k} written under load"),
                updated_at: 1,
            };
            black_box(snapshot.apply(2, &[(page.id, Some(page))]))
        })
    });
    let mut k = 0usize;
    group.bench_function("retitle", |b| {
        b.iter(|| {
            k += 1;
            let id = (k * 7919 % n) as i64 + 1;
            let old = snapshot.page(id).expect("a page").to_candidate();
            let page = Candidate {
                version: old.version + 1,
                title: format!("{} revised {k}", old.title),
                ..old
            };
            black_box(snapshot.apply(2, &[(id, Some(page))]))
        })
    });
    let mut k = 0usize;
    group.bench_function("remove", |b| {
        b.iter(|| {
            k += 1;
            let id = (k * 7919 % n) as i64 + 1;
            black_box(snapshot.apply(2, &[(id, None)]))
        })
    });
    group.bench_function("clone_only", |b| {
        b.iter(|| black_box(snapshot.apply(2, &[])))
    });
    group.finish();
    assert_eq!(rank(&scoring.index, "python client library", 50), before);
}

criterion_group! {
    name = benches;
    config = Criterion::default().configure_from_args();
    targets = snapshot_write
}
criterion_main!(benches);
