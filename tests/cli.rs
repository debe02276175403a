//! The binary as an operator runs it: `--help`, start-up errors, `migrate`, `import`,
//! and `serve` printing its address when ready.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_agent-pages");

fn agent_pages(dir: &std::path::Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AGENT_PAGES_DATABASE", dir.join("db").join("pages.sqlite3"))
        .env("RUST_LOG", "warn");
    cmd
}

/// A running server, killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `serve` with `args` and returns it with the URL from its ready line.
fn serve(cmd: Command, args: &[&str]) -> (Server, String) {
    serve_logging_to(cmd, args, Stdio::null())
}

/// [`serve`] with its log lines (stderr) going to `log`.
fn serve_logging_to(mut cmd: Command, args: &[&str], log: Stdio) -> (Server, String) {
    let mut child = cmd
        .arg("serve")
        .args(args)
        .env("AGENT_PAGES_BIND", "127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(url) = line.split("listening on ").nth(1) {
            return (server, url.trim().to_owned());
        }
    }
    panic!("serve exited without a ready line");
}

#[test]
fn every_subcommand_has_help() {
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["import", "--help"],
        &["migrate", "--help"],
        &["mcp", "--help"],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{args:?}"
        );
    }
}

#[test]
fn a_bad_setting_stops_start_up_with_one_line_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    for (var, value) in [
        ("SEARCH_CONCURRENCY", "0"),
        ("TRUSTED_PROXY_CIDRS", "10.0.0.0/33"),
        ("SEARCH_RATE_PER_MINUTE", "many"),
        ("AGENT_PAGES_BIND", "nowhere"),
        ("AGENT_PAGES_LOG_FORMAT", "xml"),
        ("AGENT_PAGES_MCP_ALLOWED_ORIGINS", "app.example"),
        ("AGENT_PAGES_PUBLIC_URL", "https://pages.example/app"),
    ] {
        let out = agent_pages(dir.path())
            .arg("serve")
            .env(var, value)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{var}={value}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{var}: {stderr}");
        assert!(
            stderr.starts_with(&format!("agent-pages: invalid configuration: {var}: ")),
            "{var}: {stderr}"
        );
    }
}

#[test]
fn migrate_creates_the_database_and_its_folders_and_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let out = agent_pages(dir.path()).arg("migrate").output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let recorded = |file: &str| -> i64 {
        rusqlite::Connection::open(dir.path().join("db").join(file))
            .unwrap()
            .query_row("SELECT COUNT(*) FROM schema_migrations", [], |r| r.get(0))
            .unwrap()
    };
    let files = |folder: &str| {
        std::fs::read_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(folder))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension() == Some("sql".as_ref()))
            .count() as i64
    };
    // One row per migration file, in each database's own record.
    assert_eq!(recorded("pages.sqlite3"), files("migrations"));
    assert_eq!(recorded("pages.budget.sqlite3"), files("migrations/budget"));
    // The budget file goes where AGENT_PAGES_BUDGET_DATABASE says.
    let elsewhere = dir.path().join("counters").join("budget.sqlite3");
    let out = agent_pages(dir.path())
        .arg("migrate")
        .env("AGENT_PAGES_BUDGET_DATABASE", &elsewhere)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(elsewhere.exists());
}

#[test]
fn import_reports_bad_lines_by_number_and_loads_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pages.jsonl");
    std::fs::write(
        &file,
        "{\"slug\":\"one\",\"title\":\"First page\"}\n{\"title\":\"\"}\n{broken\n{\"title\":\"Second page\",\"pin\":\"123456\"}\n",
    )
    .unwrap();
    let out = agent_pages(dir.path())
        .arg("import")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 2") && stderr.contains("line 3"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("2 new") && stdout.contains("2 skipped"),
        "{stdout}"
    );
    let conn = rusqlite::Connection::open(dir.path().join("db/pages.sqlite3")).unwrap();
    let pin: String = conn
        .query_row(
            "SELECT pin_hash FROM pages WHERE slug = 'second-page'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(pin.starts_with("$argon2id$"));
}

#[test]
fn import_reads_gzip_and_skips_a_byte_order_mark_in_files_and_on_stdin() {
    use std::io::Write as _;
    let lines = "{\"slug\":\"one\",\"title\":\"First page\"}\n{\"slug\":\"two\",\"title\":\"Second page\"}\n";
    let bom = |text: &str| [&b"\xef\xbb\xbf"[..], text.as_bytes()].concat();
    let gzip = |bytes: &[u8]| {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    };
    for (name, bytes, said) in [
        ("bom.jsonl", bom(lines), " (UTF-8 BOM skipped): "),
        // The name does not matter: the magic bytes do.
        ("pages.jsonl", gzip(lines.as_bytes()), " (gzip): "),
        (
            "pages.jsonl.gz",
            gzip(&bom(lines)),
            " (gzip, UTF-8 BOM skipped): ",
        ),
    ] {
        for stdin in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join(name);
            std::fs::write(&file, &bytes).unwrap();
            let mut cmd = agent_pages(dir.path());
            cmd.arg("import")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let out = if stdin {
                let mut child = cmd.arg("-").stdin(Stdio::piped()).spawn().unwrap();
                child.stdin.take().unwrap().write_all(&bytes).unwrap();
                child.wait_with_output().unwrap()
            } else {
                cmd.arg(&file).output().unwrap()
            };
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{name} stdin={stdin}: {stderr}");
            assert!(stderr.trim().is_empty(), "{name} stdin={stdin}: {stderr}");
            assert!(
                stdout.contains(said) && stdout.contains("2 new") && stdout.contains("0 skipped"),
                "{name} stdin={stdin}: {stdout}"
            );
            let conn = rusqlite::Connection::open(dir.path().join("db/pages.sqlite3")).unwrap();
            let titles: Vec<String> = conn
                .prepare("SELECT title FROM pages ORDER BY slug")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert_eq!(
                titles,
                ["First page", "Second page"],
                "{name} stdin={stdin}"
            );
        }
    }
}

#[test]
fn import_never_prints_a_rejected_pin() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pages.jsonl");
    std::fs::write(
        &file,
        concat!(
            "{\"title\":\"x\",\"pin\":987654321}\n",
            "{\"title\":\"y\",\"pin\":\"24680\"}\n",
            "{\"title\":\"z\",\"pin\":\"135 \\u0007 79\"}\n",
            "{\"title\":\"w\",\"pin\":[864209753]}\n",
        ),
    )
    .unwrap();
    let out = agent_pages(dir.path())
        .arg("import")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("4 skipped"), "{all}");
    for secret in ["987654321", "24680", "135", "864209753"] {
        assert!(!all.contains(secret), "{secret} in {all}");
    }
}

#[test]
fn serve_prints_its_address_when_ready_and_answers_health_checks() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = serve(agent_pages(dir.path()), &[]);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let body = reqwest::blocking_get(&format!("{url}/healthz"));
    assert_eq!(body, "ok\n");
    // Ready as soon as it says so: the search snapshot is built before the line.
    let ready = reqwest::blocking_get(&format!("{url}/readyz"));
    assert!(ready.contains("\"ready\":true"), "{ready}");
}

#[test]
fn serve_demo_loads_the_bundled_corpus_into_an_empty_database() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = serve(agent_pages(dir.path()), &["--demo"]);
    let ledger = reqwest::blocking_get(&format!("{url}/"));
    assert!(
        ledger.contains("63,672 pages · page 1 of 1,274"),
        "{}",
        &ledger[..ledger.len().min(3000)]
    );
}

mod reqwest {
    /// A tiny blocking GET over a fresh runtime (the tests here are synchronous).
    pub fn blocking_get(url: &str) -> String {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async { ::reqwest::get(url).await.unwrap().text().await.unwrap() })
    }
}

#[test]
fn a_kill_9_right_after_a_burst_of_answers_loses_none_of_their_counts() {
    // Spends are group-committed: each answer is sent only after the commit of the
    // batch that counted it, so killing the process at once loses nothing.
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = agent_pages(dir.path());
    cmd.env("SEARCH_RATE_PER_MINUTE", "1000")
        .env("SEARCH_RATE_PER_HOUR", "100000");
    let (mut server, url) = serve(cmd, &[]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answered = runtime.block_on(async {
        let client = ::reqwest::Client::new();
        let burst = (0..200).map(|i| {
            let request = client
                .get(format!("{url}/search"))
                .query(&[("q", format!("burst {}", i % 10))]);
            // Spent: a 200, or a 503 that reached the budget (it carries RateLimit;
            // a 503 of the admission gate does not).
            async move {
                request
                    .send()
                    .await
                    .map(|r| r.status() == 200 || r.headers().contains_key("ratelimit"))
            }
        });
        futures_util::future::join_all(burst).await
    });
    server.0.kill().unwrap(); // SIGKILL
    server.0.wait().unwrap();
    let spent = answered.iter().filter(|s| matches!(s, Ok(true))).count() as i64;
    assert!(spent > 0, "{answered:?}");
    let conn = rusqlite::Connection::open(dir.path().join("db/pages.budget.sqlite3")).unwrap();
    let counted: i64 = conn
        .query_row("SELECT MAX(count) FROM rate_limit_counters", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(counted, spent, "every answered search is counted on disk");
}

#[test]
fn sigterm_lets_requests_in_flight_finish_and_drops_those_still_busy_when_the_drain_ends() {
    // `startup::SHUTDOWN_DRAIN`: after SIGTERM the server takes no new connection,
    // a request already in hand may finish, and one that is still busy when the
    // drain ends is dropped, so the process exits rather than waiting for it.
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = agent_pages(dir.path());
    // A body may take an hour: only the drain's end can stop the stalled request.
    cmd.env("AGENT_PAGES_BODY_TIMEOUT_SECS", "3600");
    let (mut server, url) = serve(cmd, &[]);
    let addr = url.trim_start_matches("http://").to_owned();
    let body = br#"{"title": "Finished during the drain"}"#;
    let begin = |len: usize| {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        write!(
            stream,
            "POST /api/pages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: {len}\r\nExpect: 100-continue\r\n\r\n"
        )
        .unwrap();
        // The interim answer: the server holds the request and waits for its body.
        let mut interim = [0u8; 25];
        stream.read_exact(&mut interim).unwrap();
        assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
        stream
    };
    let mut finishing = begin(body.len());
    let mut stalled = begin(1000);
    stalled.write_all(b"{").unwrap();

    // SAFETY: a plain signal to the child this test started.
    assert_eq!(
        unsafe { libc::kill(server.0.id() as i32, libc::SIGTERM) },
        0
    );
    // The stop has begun once a new connection is refused.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(&addr).is_ok() {
        assert!(std::time::Instant::now() < deadline, "still accepting");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    // The request goes on for 3 s into the drain (actix checks a drain's end every
    // second, so a drain of 0 or 1 s would have dropped it), then its body arrives.
    std::thread::sleep(std::time::Duration::from_secs(3));
    finishing.write_all(body).unwrap();
    let mut answer = String::new();
    finishing.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");

    // The stalled request never ends by itself; the drain's end drops it.
    let exit = loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline + std::time::Duration::from_secs(60),
            "the process waited for the stalled request past its drain"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(exit.success(), "{exit:?}");
    let mut rest = Vec::new();
    let _ = stalled.read_to_end(&mut rest);
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
    let conn = rusqlite::Connection::open(dir.path().join("db/pages.sqlite3")).unwrap();
    let titles: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM pages WHERE title = 'Finished during the drain'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(titles, 1);
}

#[test]
fn at_a_normal_rate_every_search_is_logged_once_and_no_line_is_dropped() {
    // Log lines go through a bounded queue to a writer thread (`telemetry`): 2,000
    // searches from 8 connections at once, then SIGTERM. The log must hold one
    // search event per answer, written before the process exits, and the metric
    // of dropped lines must say 0.
    const SEARCHES: usize = 2_000;
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("serve.log");
    let mut cmd = agent_pages(dir.path());
    cmd.env("RUST_LOG", "info")
        .env("AGENT_PAGES_LOG_FORMAT", "json")
        .env("SEARCH_RATE_PER_MINUTE", "1000000")
        .env("SEARCH_RATE_PER_HOUR", "100000000")
        .env("AGENT_PAGES_METRICS_BIND", "127.0.0.1:0");
    let log = std::fs::File::create(&log_path).unwrap();
    let (mut server, url) = serve_logging_to(cmd, &["--demo"], Stdio::from(log));
    let lines = |text: &str| -> Vec<serde_json::Value> {
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
            .collect()
    };
    let message = |line: &serde_json::Value| line["fields"]["message"].as_str().map(str::to_owned);
    // Its address is in the log, written a moment after `listening on`.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let metrics = loop {
        let text = std::fs::read_to_string(&log_path).unwrap();
        // Only whole lines: the writer may be in the middle of one.
        let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        if let Some(at) = lines(whole)
            .iter()
            .filter_map(message)
            .find_map(|m| m.strip_prefix("metrics on ").map(str::to_owned))
        {
            break at;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no metrics line: {text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (statuses, dropped) = runtime.block_on(async {
        let client = ::reqwest::Client::new();
        let mut statuses = Vec::new();
        let connections = (0..8).map(|c| {
            let client = client.clone();
            let url = url.clone();
            async move {
                let mut answered = Vec::new();
                for i in 0..SEARCHES / 8 {
                    let q = format!("debian tools {}", (c * 7 + i) % 40);
                    let response = client
                        .get(format!("{url}/search"))
                        .query(&[("q", q)])
                        .send()
                        .await
                        .unwrap();
                    answered.push(response.status().as_u16());
                }
                answered
            }
        });
        for answered in futures_util::future::join_all(connections).await {
            statuses.extend(answered);
        }
        let scrape = client
            .get(&metrics)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let dropped = scrape
            .lines()
            .find(|l| l.starts_with("agent_pages_log_lines_dropped_total "))
            .map(str::to_owned);
        (statuses, dropped)
    });
    assert_eq!(statuses.len(), SEARCHES);
    assert_eq!(
        dropped.as_deref(),
        Some("agent_pages_log_lines_dropped_total 0")
    );
    // SAFETY: a plain signal to the child this test started.
    assert_eq!(
        unsafe { libc::kill(server.0.id() as i32, libc::SIGTERM) },
        0
    );
    assert!(server.0.wait().unwrap().success());
    let text = std::fs::read_to_string(&log_path).unwrap();
    // One whole line per answer, its status the one the client saw.
    let mut logged: Vec<u16> = lines(&text)
        .iter()
        .filter(|l| l["target"] == "agent_pages::search")
        .map(|l| l["fields"]["status"].as_u64().expect("a status") as u16)
        .collect();
    let mut seen = statuses.clone();
    logged.sort_unstable();
    seen.sort_unstable();
    assert_eq!(logged, seen);
}

#[test]
fn the_mcp_bridge_without_a_service_fails_naming_the_url() {
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let dir = tempfile::tempdir().unwrap();
    let out = agent_pages(dir.path())
        .args(["mcp", "--url", &url])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.is_empty(),
        "stdout is the protocol: nothing else on it"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&url), "{stderr}");
}
