//! Searches and publishes against a running server while `agent-pages import` writes
//! a large corpus into the same database from another process (issue 20 item 5:
//! budget writes must never queue behind page writes). Reports the latency of the
//! requests that were sent while the import ran and for `--tail-secs` after it
//! (when its changes reach the snapshot), split by outcome, and every answer that
//! was not a 200/201. Never run in CI; `scripts/import-beside.sh` runs
//! it against a release build.
//!
//! ```sh
//! cargo run --release --example import_beside -- --url http://127.0.0.1:8080 \
//!     --bin target/release/agent-pages --database /tmp/x/pages.sqlite3 \
//!     --corpus ../shared/data/debian-pages.jsonl
//! ```
//!
//! The server must trust the peer as a proxy (`TRUSTED_PROXY_CIDRS=127.0.0.1`):
//! each search comes from its own `X-Forwarded-For` address, so no budget runs out.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;

#[derive(Debug, Parser)]
struct Args {
    /// Base URL of the server.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    url: String,
    /// The `agent-pages` binary that runs the import.
    #[arg(long)]
    bin: PathBuf,
    /// The database the server serves (the import writes into it).
    #[arg(long)]
    database: PathBuf,
    /// The JSON Lines corpus to import.
    #[arg(long)]
    corpus: PathBuf,
    /// Searches in flight at once.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Seconds to go on measuring after the import exits, so that the searches
    /// that apply its changes to the snapshot are counted too.
    #[arg(long, default_value_t = 3.0)]
    tail_secs: f64,
    /// Publishes a second through the API while the import runs (each one moves
    /// the corpus, so the next searches of each query are misses again).
    #[arg(long, default_value_t = 2.0)]
    publish_rate: f64,
}

/// Latencies by outcome, of requests sent while the import ran.
type Results = Arc<Mutex<BTreeMap<String, Vec<Duration>>>>;

/// Queries whose answers are cached before the import starts, so the searches
/// measure the gates (budget, generation read, cache), not scoring slots.
const QUERIES: [&str; 8] = [
    "kubernetes",
    "python library",
    "web server",
    "database",
    "compiler",
    "text editor",
    "network tool",
    "fonts",
];

/// `search-200-hit` (by `X-Search-Cache`), or the status and the last part of the
/// problem type (`search-503-budget-unavailable`).
fn classify(status: u16, cache: Option<&str>, body: &[u8]) -> String {
    match (status, cache) {
        (200, Some(c)) => format!("search-200-{c}"),
        (s, _) => {
            let kind = serde_json::from_slice::<serde_json::Value>(body)
                .ok()
                .and_then(|p| p["type"].as_str().map(|t| t.replace("/problems/", "")))
                .unwrap_or_default();
            format!("search-{s}-{kind}")
        }
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
        .pool_max_idle_per_host(args.concurrency + 4)
        .build()
        .unwrap();
    for (i, q) in QUERIES.iter().enumerate() {
        let r = client
            .get(format!("{}/search", args.url))
            .query(&[("q", q)])
            .header("X-Forwarded-For", format!("10.255.0.{i}"))
            .send()
            .await
            .expect("warm-up search");
        assert_eq!(r.status(), 200, "warm-up search for {q}");
    }

    let running = Arc::new(AtomicBool::new(true));
    let results: Results = Arc::default();
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..args.concurrency {
        let (client, url, running, results, next) = (
            client.clone(),
            args.url.clone(),
            running.clone(),
            results.clone(),
            next.clone(),
        );
        tasks.push(tokio::spawn(async move {
            while running.load(Ordering::Relaxed) {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let request = client
                    .get(format!("{url}/search"))
                    .header("Accept", "application/json")
                    .query(&[("q", QUERIES[n % QUERIES.len()])])
                    .header(
                        "X-Forwarded-For",
                        format!("10.{}.{}.{}", (n >> 16) & 255, (n >> 8) & 255, n & 255),
                    );
                let t = Instant::now();
                let class = match request.send().await {
                    Ok(r) => {
                        let status = r.status().as_u16();
                        let cache = r
                            .headers()
                            .get("x-search-cache")
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned);
                        let body = r.bytes().await.unwrap_or_default();
                        classify(status, cache.as_deref(), &body)
                    }
                    Err(_) => "search-error".into(),
                };
                if running.load(Ordering::Relaxed) {
                    results
                        .lock()
                        .unwrap()
                        .entry(class)
                        .or_default()
                        .push(t.elapsed());
                }
            }
        }));
    }
    {
        let (client, url, running, results) = (
            client.clone(),
            args.url.clone(),
            running.clone(),
            results.clone(),
        );
        let period = Duration::from_secs_f64(1.0 / args.publish_rate);
        tasks.push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            let mut n = 0u32;
            while running.load(Ordering::Relaxed) {
                tick.tick().await;
                n += 1;
                let t = Instant::now();
                let class = match client
                    .post(format!("{url}/api/pages"))
                    .header(
                        "X-Forwarded-For",
                        format!("10.254.{}.{}", (n >> 8) & 255, n & 255),
                    )
                    .json(&serde_json::json!({"title": format!("Published beside an import {n}")}))
                    .send()
                    .await
                {
                    Ok(r) => {
                        let status = r.status().as_u16();
                        let body = r.text().await.unwrap_or_default();
                        if status != 201 {
                            eprintln!("publish {n}: {status} {body}");
                        }
                        format!("publish-{status}")
                    }
                    Err(_) => "publish-error".into(),
                };
                if running.load(Ordering::Relaxed) {
                    results
                        .lock()
                        .unwrap()
                        .entry(class)
                        .or_default()
                        .push(t.elapsed());
                }
            }
        }));
    }

    let started = Instant::now();
    let import = tokio::process::Command::new(&args.bin)
        .arg("import")
        .arg(&args.corpus)
        .env("AGENT_PAGES_DATABASE", &args.database)
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::null())
        .output()
        .await
        .expect("running the import");
    let took = started.elapsed();
    tokio::time::sleep(Duration::from_secs_f64(args.tail_secs)).await;
    running.store(false, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    println!(
        "import: {} in {:.2} s: {}",
        import.status,
        took.as_secs_f64(),
        String::from_utf8_lossy(&import.stdout).trim()
    );
    println!(
        "{:<22} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "outcome", "count", "p50 ms", "p90 ms", "p99 ms", "max ms"
    );
    let results = results.lock().unwrap();
    for (class, latencies) in results.iter() {
        let mut sorted = latencies.clone();
        sorted.sort();
        println!(
            "{:<22} {:>7} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            class,
            sorted.len(),
            percentile(&sorted, 0.5),
            percentile(&sorted, 0.9),
            percentile(&sorted, 0.99),
            percentile(&sorted, 1.0)
        );
    }
    let mut searches: Vec<Duration> = results
        .iter()
        .filter(|(class, _)| class.starts_with("search-"))
        .flat_map(|(_, l)| l.iter().copied())
        .collect();
    searches.sort();
    if !searches.is_empty() {
        println!(
            "all searches: {} sent while the import ran (and {:.0} s after), p99 {:.2} ms, max {:.2} ms",
            searches.len(),
            args.tail_secs,
            percentile(&searches, 0.99),
            percentile(&searches, 1.0)
        );
    }
}
