//! Storage faults that only a real process shows (SPEC §10), against the binary
//! as an operator runs it:
//!
//! - database files made immutable under a running server (`chattr +i`) are
//!   answered 503 and never kill it, a search on all four columns of the outcome
//!   matrix's `503-storage` row (SQLite maps the `-shm` WAL index with `mmap`;
//!   a write fault on an immutable file's page is `SIGBUS`);
//! - a write acknowledged after another process (the `sqlite3` shell, as an operator
//!   reading the database or taking a `.backup`) opened and closed the database is
//!   kept (closing a descriptor of a database file drops the POSIX locks SQLite
//!   holds on it: the other process then found itself alone, checkpointed and
//!   deleted the WAL the server still wrote into).
//!
//! `chattr` needs root and a filesystem with the immutable attribute (ext4, xfs,
//! btrfs) under `CARGO_TARGET_TMPDIR`: without them the test prints `SKIPPED …`
//! and why on the run's stderr and checks nothing; without `chattr` (e2fsprogs,
//! which `.ci/run` installs) it fails.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

#[path = "support/mod.rs"]
mod support;

const BIN: &str = env!("CARGO_BIN_EXE_agent-pages");

/// `agent-pages` with only the database of `dir` set.
fn agent_pages(db: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AGENT_PAGES_DATABASE", db)
        .env("RUST_LOG", "warn");
    cmd
}

/// A running `serve`, killed on drop.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(db: &Path) -> Self {
        let mut child = agent_pages(db)
            .arg("serve")
            .env("AGENT_PAGES_BIND", "127.0.0.1:0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        for line in BufReader::new(stdout).lines() {
            if let Some(url) = line.unwrap().split("listening on ").nth(1) {
                return Self {
                    url: url.trim().to_owned(),
                    child,
                };
            }
        }
        panic!("serve exited without a ready line");
    }

    /// Still running?
    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// (status, `type` of the problem or "", `Retry-After`) of one request.
struct Answer {
    status: u16,
    kind: String,
    retry_after: Option<String>,
    /// It carried `RateLimit` (the request reached the budget).
    rate_limited: bool,
}

/// Blocking HTTP for these synchronous tests.
struct Http {
    rt: tokio::runtime::Runtime,
    client: reqwest::Client,
}

impl Http {
    fn new() -> Self {
        Self {
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            client: reqwest::Client::new(),
        }
    }

    fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        self.rt.block_on(async {
            let r = request
                .header("Accept", "application/json")
                .send()
                .await
                .expect("the server answers");
            let status = r.status().as_u16();
            let retry_after = r
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned());
            let rate_limited = r.headers().contains_key("ratelimit");
            let text = r.text().await.unwrap();
            let kind = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v["type"].as_str().map(str::to_owned))
                .unwrap_or_default();
            Answer {
                status,
                kind,
                retry_after,
                rate_limited,
            }
        })
    }

    fn get(&self, url: String) -> Answer {
        self.send(self.client.get(url))
    }

    fn publish(&self, server: &Server, title: &str) -> Answer {
        self.send(
            self.client
                .post(format!("{}/api/pages", server.url))
                .json(&serde_json::json!({ "title": title })),
        )
    }

    fn search(&self, server: &Server, q: &str) -> Answer {
        self.send(
            self.client
                .get(format!("{}/search", server.url))
                .query(&[("q", q)]),
        )
    }
}

/// `chattr +i` on files, taken back (`chattr -i`) on drop, also when the test
/// fails: an immutable file cannot even be deleted by root.
struct Immutable(Vec<PathBuf>);

impl Immutable {
    /// Makes `files` immutable, or says why it cannot.
    fn set(files: Vec<PathBuf>) -> Result<Self, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("chattr +i needs root (CI runs the tests as root)".into());
        }
        let chattr = support::require_program("chattr", "CHATTR", "e2fsprogs");
        let out = Command::new(chattr)
            .arg("+i")
            .args(&files)
            .output()
            .unwrap();
        if !out.status.success() {
            return Err(format!(
                "this filesystem has no immutable attribute: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Self(files))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").args(&self.0).status();
    }
}

/// A folder on the disk the build is on (often not a tmpfs like /tmp), holding a
/// migrated database with one page.
fn database() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let db = dir.path().join("pages.sqlite3");
    let out = agent_pages(&db).arg("migrate").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    (dir, db)
}

fn beside(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Every counter row of the budget file beside `db` (the default layout), by
/// bucket: (window start, count).
fn budget_counters(db: &Path) -> std::collections::BTreeMap<String, (i64, i64)> {
    let conn = rusqlite::Connection::open(db.with_file_name("pages.budget.sqlite3")).unwrap();
    let mut query = conn
        .prepare("SELECT bucket, window_start, count FROM rate_limit_counters")
        .unwrap();
    let rows = query
        .query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// Between `before` and `after` exactly the two windows (minute, hour) of one
/// client moved, each by `n` spends (or, had a window ended meanwhile, a new one
/// holds at most `n`).
fn assert_spent(
    before: &std::collections::BTreeMap<String, (i64, i64)>,
    after: &std::collections::BTreeMap<String, (i64, i64)>,
    n: i64,
) {
    let moved: Vec<_> = after
        .iter()
        .filter(|(bucket, row)| before.get(*bucket) != Some(row))
        .collect();
    assert_eq!(
        moved.len(),
        2,
        "both windows spent: {before:?} then {after:?}"
    );
    for (bucket, (start, count)) in moved {
        match before.get(bucket) {
            Some((old_start, old)) if old_start == start => {
                assert_eq!(*count, old + n, "{bucket}")
            }
            _ => assert!((1..=n).contains(count), "{bucket}: {count}"),
        }
    }
}

/// With `files(db)` made immutable under a running server: every search, write
/// and page read is 503 `storage-unavailable`, readiness fails, liveness holds, the
/// process lives; made writable again, everything answers again.
fn immutable_files_are_answered_503(test: &str, files: fn(&Path) -> Vec<PathBuf>) {
    let (_dir, db) = database();
    let mut server = Server::start(&db);
    let http = Http::new();
    assert_eq!(http.publish(&server, "Kubernetes guide").status, 201);
    assert_eq!(http.search(&server, "kubernetes").status, 200);
    let files = files(&db);
    assert!(files.iter().all(|f| f.exists()), "{files:?}");
    let immutable = match Immutable::set(files) {
        Ok(guard) => guard,
        Err(why) => {
            support::skipped(test, &why);
            return;
        }
    };
    // Written back to disk, the WAL index's pages are write-protected again: the
    // next write into them asks the filesystem, which refuses an immutable file
    // with SIGBUS.
    assert!(Command::new("sync").status().unwrap().success());

    // The `503-storage` row of the outcome matrix (docs/search.md), all four
    // columns: status, problem type, `Retry-After: 5`, and the budget spent (both
    // windows +1 per search) with nothing cached (the repeated query is no hit).
    let counters = budget_counters(&db);
    for q in ["kubernetes", "guide", "kubernetes"] {
        let a = http.search(&server, q);
        assert_eq!(
            (a.status, a.kind.as_str()),
            (503, "/problems/storage-unavailable"),
            "search {q}"
        );
        assert_eq!(a.retry_after.as_deref(), Some("5"));
        assert!(a.rate_limited, "search {q}: the answer reached the budget");
    }
    assert_spent(&counters, &budget_counters(&db), 3);
    for i in 0..3 {
        let a = http.publish(&server, &format!("Written while immutable {i}"));
        assert_eq!(
            (a.status, a.kind.as_str()),
            (503, "/problems/storage-unavailable")
        );
        assert!(a.retry_after.is_some());
    }
    assert_eq!(http.get(format!("{}/", server.url)).status, 503);
    assert_eq!(http.get(format!("{}/readyz", server.url)).status, 503);
    assert_eq!(http.get(format!("{}/healthz", server.url)).status, 200);
    assert!(server.alive());

    // Writable again: answers again, without a restart.
    drop(immutable);
    assert_eq!(http.get(format!("{}/readyz", server.url)).status, 200);
    assert_eq!(http.publish(&server, "Written afterwards").status, 201);
    assert_eq!(http.search(&server, "written afterwards").status, 200);
    assert!(server.alive());
}

#[test]
fn an_immutable_wal_index_is_answered_503_and_never_ends_the_server() {
    // Before: the next search died of SIGBUS (exit 135).
    immutable_files_are_answered_503("an_immutable_wal_index_is_answered_503", |db| {
        vec![beside(db, "-shm")]
    });
}

#[test]
fn immutable_database_files_are_answered_503_and_never_end_the_server() {
    immutable_files_are_answered_503("immutable_database_files_are_answered_503", |db| {
        vec![db.to_owned(), beside(db, "-wal"), beside(db, "-shm")]
    });
}

#[test]
fn a_write_acknowledged_after_another_process_closed_the_database_is_kept() {
    let (_dir, db) = database();
    let server = Server::start(&db);
    let http = Http::new();
    assert_eq!(http.publish(&server, "Written first").status, 201);
    // Another process reads the database and closes it: its last connection
    // closes with a checkpoint, and deletes the WAL when no other process holds a
    // lock on the database file.
    let sqlite3 = support::require_program("sqlite3", "SQLITE3", "sqlite3");
    let out = Command::new(sqlite3)
        .arg(&db)
        .arg("SELECT COUNT(*) FROM pages")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");
    assert_eq!(http.publish(&server, "Written second").status, 201);
    drop(server); // SIGKILL: nothing more is written
    let titles: Vec<String> = rusqlite::Connection::open(&db)
        .unwrap()
        .prepare("SELECT title FROM pages ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(titles, ["Written first", "Written second"]);
}
