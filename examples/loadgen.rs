//! A small load generator for `/search` that splits latency by outcome, which
//! general tools (wrk, oha) cannot: they report one latency distribution for all
//! statuses. Used for the figures in README and the issue notes; never run in CI.
//!
//! ```sh
//! cargo run --release --example loadgen -- --url http://127.0.0.1:8080 \
//!     --mode distinct --concurrency 32 --requests 2000 --clients 1000
//! ```
//!
//! Outcome classes: `200-hit`, `200-miss`, `200-join` (from `X-Search-Cache`),
//! `429`, `503-busy` (the budget was spent: `RateLimit` header present),
//! `503-admission` (no `RateLimit` header: refused before the budget), others by status.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use tokio::sync::Mutex;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Mode {
    /// Every request searches the same query.
    Same,
    /// Every request searches a query no other request used (a cache miss).
    Distinct,
    /// Three of four requests search `--query` (hits), the fourth a new query (a miss).
    Mixed,
    /// Requests search the lines of `--queries` in turn, over and over (a fixed
    /// set of popular queries: hits, unless a write dropped their entries).
    Cycle,
}

#[derive(Debug, Parser)]
struct Args {
    /// Base URL of the server (or of a proxy in front of it).
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    url: String,
    #[arg(long, value_enum, default_value = "same")]
    mode: Mode,
    /// The query for `--mode same`; the stem for `--mode distinct`.
    #[arg(long, default_value = "kubrenetes")]
    query: String,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Requests in all.
    #[arg(long, default_value_t = 1000)]
    requests: usize,
    /// Distinct X-Forwarded-For client addresses to rotate through (0 sends none;
    /// only a server that trusts the peer as a proxy honours them).
    #[arg(long, default_value_t = 0)]
    clients: u32,
    /// Start all requests together after every connection is warm (a burst).
    #[arg(long)]
    burst: bool,
    /// Page writes a second while searching (0 = no writes); see `--writes`. The
    /// server's publish budget must allow it.
    #[arg(long, default_value_t = 0.0)]
    write_rate: f64,
    /// What a write is: `update` publishes `--update-pages` pages with a PIN, then
    /// updates them round robin (an argon2 PIN check each); `create` publishes a
    /// new page without a PIN each time (the corpus grows).
    #[arg(long, value_enum, default_value = "update")]
    writes: Writes,
    /// Pages `--writes update` publishes and then updates round robin (1: an update
    /// storm on one page, whose history then holds the newest versions only).
    #[arg(long, default_value_t = 20)]
    update_pages: usize,
    /// Fresh queries, one a line, used in order by `--mode distinct` and the
    /// fresh quarter of `--mode mixed` (instead of `--query` plus a made-up
    /// word); past the end they repeat with a made-up word appended.
    #[arg(long)]
    queries: Option<std::path::PathBuf>,
    /// Stop after this many seconds instead of after `--requests`.
    #[arg(long)]
    duration: Option<f64>,
    /// Titles for `--writes create`, taken in order from this JSON Lines file's
    /// `title` fields (real titles, say another corpus), instead of made-up ones.
    #[arg(long)]
    titles: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Writes {
    Update,
    Create,
}

/// Publishes `pages` pages, then updates one every `1/rate` seconds until `stop`
/// (or, for [`Writes::Create`], publishes a new page each time); records each
/// write's latency as `write-<status>`.
async fn write_stream(
    client: reqwest::Client,
    url: String,
    rate: f64,
    writes: Writes,
    pages: usize,
    results: Arc<Mutex<BTreeMap<String, Vec<Duration>>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    titles: Vec<String>,
) {
    const PIN: &str = "loadgen-pin-1234";
    if let Writes::Create = writes {
        let run = std::process::id();
        let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
        let mut k = 0usize;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            tick.tick().await;
            let t = Instant::now();
            let title = match titles.get(k % titles.len().max(1)) {
                Some(title) => title.clone(),
                None => format!("Loadgen stream page {run} {k} written under load"),
            };
            let answer = client
                .post(format!("{url}/api/pages"))
                .json(&serde_json::json!({ "title": title }))
                .send()
                .await;
            record_write(&results, t, answer).await;
            k += 1;
        }
        return;
    }
    let mut slugs = Vec::new();
    for n in 0..pages.max(1) {
        let r = client
            .post(format!("{url}/api/pages"))
            .json(&serde_json::json!({"title": format!("Loadgen page {n} written under load"), "pin": PIN}))
            .send()
            .await
            .expect("publish");
        let created: serde_json::Value = r.json().await.expect("publish answer");
        slugs.push(created["slug"].as_str().expect("a slug").to_owned());
    }
    // Each update is sent at its tick on a task of its own, so the rate holds while
    // updates take longer than a tick (an argon2 PIN check each).
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    let mut k = 0usize;
    let mut sent = Vec::new();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        tick.tick().await;
        let slug = slugs[k % slugs.len()].clone();
        let (client, url, results) = (client.clone(), url.clone(), results.clone());
        sent.push(tokio::spawn(async move {
            let t = Instant::now();
            let answer = client
                .put(format!("{url}/api/pages/{slug}"))
                .header("X-Page-Pin", PIN)
                .json(&serde_json::json!({
                    "title": format!("Loadgen page {k} revision {k}"),
                    // About 1 KiB of body a version, so that a history's size shows.
                    "body": format!("Revision {k}. {}", "Written under load. ".repeat(50)),
                }))
                .send()
                .await;
            record_write(&results, t, answer).await;
        }));
        k += 1;
    }
    for task in sent {
        let _ = task.await;
    }
}

/// Records the latency of a write sent at `started` as `write-<status>`
/// (`write-error` when no answer came).
async fn record_write(
    results: &Mutex<BTreeMap<String, Vec<Duration>>>,
    started: Instant,
    answer: reqwest::Result<reqwest::Response>,
) {
    let status = answer
        .map(|r| r.status().as_u16().to_string())
        .unwrap_or_else(|_| "error".into());
    results
        .lock()
        .await
        .entry(format!("write-{status}"))
        .or_default()
        .push(started.elapsed());
}

/// Ordinal word for distinct queries: a different word per request, so each is a
/// miss, from a fixed alphabet so queries stay valid and realistic in length.
fn distinct_query(stem: &str, i: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ne", "pu", "ra", "si", "to", "vu", "ze", "bo", "di", "fa", "gu", "ha",
        "je",
    ];
    let mut word = String::new();
    let mut n = i;
    loop {
        word.push_str(SYLLABLES[n % 16]);
        n /= 16;
        if n == 0 {
            break;
        }
    }
    format!("{stem} {word}")
}

fn classify(response: &reqwest::Response) -> String {
    let status = response.status().as_u16();
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok());
    match status {
        200 => match header("x-search-cache") {
            Some(c) => format!("200-{c}"),
            None => "200".into(),
        },
        503 if header("ratelimit").is_some() => "503-busy".into(),
        503 => "503-admission".into(),
        s => s.to_string(),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .build()
        .unwrap();
    let results: Arc<Mutex<BTreeMap<String, Vec<Duration>>>> = Arc::default();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let barrier = Arc::new(tokio::sync::Barrier::new(args.concurrency));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let titles: Vec<String> = match &args.titles {
        Some(path) => std::fs::read_to_string(path)
            .expect("reading --titles")
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| Some(v.get("title")?.as_str()?.to_owned()))
            .collect(),
        None => Vec::new(),
    };
    let writer = (args.write_rate > 0.0).then(|| {
        tokio::spawn(write_stream(
            client.clone(),
            args.url.clone(),
            args.write_rate,
            args.writes,
            args.update_pages,
            results.clone(),
            stop.clone(),
            titles,
        ))
    });
    let fresh: Arc<Vec<String>> = Arc::new(match &args.queries {
        Some(path) => std::fs::read_to_string(path)
            .expect("reading --queries")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect(),
        None => Vec::new(),
    });
    assert!(
        !matches!(args.mode, Mode::Cycle) || !fresh.is_empty(),
        "--mode cycle needs --queries"
    );
    let deadline = args.duration.map(Duration::from_secs_f64);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..args.concurrency {
        let (client, results, next, barrier, fresh) = (
            client.clone(),
            results.clone(),
            next.clone(),
            barrier.clone(),
            fresh.clone(),
        );
        let (url, query, mode, clients, burst, total) = (
            args.url.clone(),
            args.query.clone(),
            args.mode,
            args.clients,
            args.burst,
            args.requests,
        );
        tasks.push(tokio::spawn(async move {
            if burst {
                // Warm this worker's connection first, so the burst is not a connect storm.
                let _ = client.get(format!("{url}/healthz")).send().await;
                barrier.wait().await;
            }
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let over = match deadline {
                    Some(d) => started.elapsed() >= d,
                    None => i >= total,
                };
                if over {
                    break;
                }
                let new_query = |n: usize| {
                    if fresh.is_empty() {
                        distinct_query(&query, n)
                    } else if n < fresh.len() {
                        fresh[n].clone()
                    } else {
                        distinct_query(&fresh[n % fresh.len()], n / fresh.len())
                    }
                };
                let q = match mode {
                    Mode::Same => query.clone(),
                    Mode::Distinct => new_query(i),
                    Mode::Mixed if i % 4 == 0 => new_query(i / 4),
                    Mode::Mixed => query.clone(),
                    Mode::Cycle => fresh[i % fresh.len()].clone(),
                };
                let mut request = client.get(format!("{url}/search")).query(&[("q", q)]);
                if clients > 0 {
                    let n = i as u32 % clients;
                    request = request.header(
                        "X-Forwarded-For",
                        format!("10.{}.{}.{}", (n >> 16) & 255, (n >> 8) & 255, n & 255),
                    );
                }
                let t = Instant::now();
                let class = match request.send().await {
                    Ok(r) => {
                        let class = classify(&r);
                        let _ = r.bytes().await;
                        class
                    }
                    Err(_) => "error".into(),
                };
                results
                    .lock()
                    .await
                    .entry(class)
                    .or_default()
                    .push(t.elapsed());
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(w) = writer {
        w.await.unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let results = results.lock().await;
    let total: usize = results.values().map(Vec::len).sum();
    let searches = results
        .iter()
        .filter(|(class, _)| !class.starts_with("write-"))
        .map(|(_, l)| l.len())
        .sum::<usize>();
    println!(
        "{} requests, concurrency {}, mode {:?}, {:.2} s, {:.0} req/s",
        searches,
        args.concurrency,
        args.mode,
        elapsed,
        searches as f64 / elapsed
    );
    println!(
        "{:<14} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "outcome", "count", "share", "p50 ms", "p90 ms", "p99 ms", "max ms"
    );
    for (class, latencies) in results.iter() {
        let mut sorted = latencies.clone();
        sorted.sort();
        print_row(class, &sorted, total);
    }
    // Every search whatever its outcome (the writes left out): the figure a
    // visitor waits for, which issue 35 compares with the hit p99 of a run
    // without writes.
    let mut all: Vec<Duration> = results
        .iter()
        .filter(|(class, _)| !class.starts_with("write-"))
        .flat_map(|(_, l)| l.iter().copied())
        .collect();
    all.sort();
    print_row("all-searches", &all, total);
}

/// One row of the outcome table: `sorted` latencies of `name`, their share of all
/// `total` requests, and their p50/p90/p99/max in ms.
fn print_row(name: &str, sorted: &[Duration], total: usize) {
    println!(
        "{:<14} {:>7} {:>6.1}% {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
        name,
        sorted.len(),
        100.0 * sorted.len() as f64 / total.max(1) as f64,
        percentile(sorted, 0.5),
        percentile(sorted, 0.9),
        percentile(sorted, 0.99),
        percentile(sorted, 1.0)
    );
}
