//! A write acknowledged 201/200 is never lost (SPEC §9): when the database file at
//! the configured path is gone or replaced, writes answer 503 + Retry-After and
//! `/readyz` says so, while `/healthz` (liveness) stays 200. A full disk is a
//! storage fault like any other (SPEC §10): 503, never 500, and recovery without a
//! restart (these tests mount a tmpfs, so they need root; they say so and pass
//! without it).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::helpers::spawn_app_in_folder;
use crate::helpers::support::{ChildGuard, Tmpfs};
use crate::helpers::{spawn_app, AGENT, PIN};

#[actix_web::test]
async fn writes_are_refused_and_readiness_fails_once_the_data_folder_is_deleted() {
    let app = spawn_app().await;
    app.publish("before", "Written before").await;
    let ready = app.fetch("/readyz").await;
    assert_eq!(ready.status, 200, "{}", ready.text);
    assert_eq!(ready.json()["ready"], true);

    let folder = app.db_path.parent().unwrap().to_owned();
    std::fs::remove_dir_all(&folder).unwrap();

    let r = app.create(json!({"title": "Into the void"})).await;
    r.problem(503, "storage-unavailable");
    assert_eq!(r.header("retry-after"), Some("5"));
    app.put_page("before", Some(PIN), AGENT, json!({"body": "lost?"}))
        .await
        .problem(503, "storage-unavailable");
    app.act("before", "archive", Some(PIN), AGENT)
        .await
        .problem(503, "storage-unavailable");

    assert_eq!(app.fetch("/healthz").await.status, 200);
    let ready = app.fetch("/readyz").await;
    assert_eq!(ready.status, 503, "{}", ready.text);
    let body = ready.json();
    assert_eq!(body["ready"], false);
    assert_eq!(body["database"], "the database file is gone", "{body}");
    assert_eq!(body["snapshot"], "ok", "{body}");

    // Another database created at the same path is not the one the server has
    // open: still no write is acknowledged.
    let mut conn = agent_pages::sqlite::open(&app.db_path).unwrap();
    agent_pages::sqlite::migrations::run(&mut conn).unwrap();
    app.create(json!({"title": "Into the wrong file"}))
        .await
        .problem(503, "storage-unavailable");
    let body = app.fetch("/readyz").await.json();
    assert_eq!(body["database"], "the database file is replaced", "{body}");
    let pages: i64 = conn
        .query_row("SELECT COUNT(*) FROM pages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(pages, 0);
}

/// A tmpfs of `bytes` for a test of a full disk, or `None` (and a line saying
/// why the test is skipped) when this user cannot mount one.
fn small_disk(test: &str, bytes: u64) -> Option<Tmpfs> {
    match Tmpfs::mount(bytes) {
        Ok(tmpfs) => Some(tmpfs),
        Err(why) => {
            crate::helpers::support::skipped(test, &why);
            None
        }
    }
}

/// Fills the free space of `dir` with a file; returns its path.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).unwrap();
    let block = vec![0u8; 64 * 1024];
    while file.write_all(&block).is_ok() {}
    // The last partial block, byte by byte.
    while file.write_all(&[0]).is_ok() {}
    path
}

fn assert_ok(conn: &rusqlite::Connection) {
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
}

/// SPEC §10: a full disk is a storage fault, never a 500. The page database on a
/// 6 MiB tmpfs, 250 KiB bodies until one is refused: every write is then 503
/// `storage-unavailable` with `Retry-After`, searches still answer, `/readyz`
/// fails; 10 MiB more and writes are kept again at once, with no restart, nothing
/// acknowledged lost and what the WAL held checkpointed.
///
/// What the product does today on a full disk: a write SQLite cannot commit is
/// rolled back whole and answered 503 (nothing of it kept); a small update may still
/// fit in the database's free pages, and then it is committed and answered 200 (on
/// this disk, filled by 250 KiB bodies, the three small updates are 503 too). So
/// the test records the last body acknowledged (201/200) for every page, whichever
/// way each write went, and checks each against a fresh read through the server, the
/// file itself, and another server process started on the file (what a restart
/// reads): an update acknowledged on the full disk and then lost fails it.
#[actix_web::test]
async fn a_full_disk_is_answered_503_and_writes_are_kept_again_once_space_is_back() {
    let Some(tmpfs) = small_disk("a_full_disk_is_answered_503", 6 << 20) else {
        return;
    };
    let elsewhere = tempfile::tempdir().unwrap();
    let app = spawn_app_in_folder(tmpfs.path(), |s| {
        s.publish_budget.set_limit("minute", 1000);
        s.publish_budget.set_limit("hour", 1000);
        s.budgets =
            agent_pages::budget::open::BudgetsAt::Sqlite(elsewhere.path().join("budget.sqlite3"));
    })
    .await;
    let body = "x".repeat(250 * 1024);
    // slug → the last body the server acknowledged for it.
    let mut acknowledged = std::collections::BTreeMap::new();
    let refused = loop {
        let slug = format!("big-{}", acknowledged.len());
        let r = app
            .create(json!({"slug": slug, "title": format!("Big page {slug}"), "body": body, "pin": PIN}))
            .await;
        if r.status != 201 {
            break r;
        }
        acknowledged.insert(slug, body.clone());
        assert!(acknowledged.len() < 40, "6 MiB never filled");
    };
    assert!(acknowledged.len() >= 2);
    refused.problem(503, "storage-unavailable");
    assert_eq!(refused.header("retry-after"), Some("5"));
    app.create(json!({"title": "A small page"}))
        .await
        .problem(503, "storage-unavailable");
    let slugs: Vec<String> = acknowledged.keys().cloned().collect();
    for (i, slug) in slugs.iter().take(3).enumerate() {
        let small = format!("a body too many, {i}");
        let update = app
            .put_page(slug, Some(PIN), AGENT, json!({ "body": small }))
            .await;
        if update.status == 200 {
            acknowledged.insert(slug.clone(), small);
        } else {
            update.problem(503, "storage-unavailable");
        }
    }
    for i in 0..4 {
        let (status, _, body) = app
            .search_json(
                ["kubernetes", "big page"][i % 2],
                &format!("198.51.100.{i}"),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(app.fetch("/").await.status, 200, "the ledger is read");
    let ready = app.fetch("/readyz").await;
    assert_eq!(ready.status, 503, "{}", ready.text);
    assert_eq!(ready.json()["database"], "the database's disk is full");

    tmpfs.resize(16 << 20);
    let ready = app.fetch("/readyz").await;
    assert_eq!(ready.status, 200, "{}", ready.text);
    let r = app
        .create(json!({"slug": "after", "title": "Written once space was back", "body": body, "pin": PIN}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    acknowledged.insert("after".into(), body.clone());
    let r = app
        .put_page(
            &slugs[1],
            Some(PIN),
            AGENT,
            json!({"body": "updated once space was back"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    acknowledged.insert(slugs[1].clone(), "updated once space was back".into());

    let restarted = Restarted::start(&app.db_path, elsewhere.path());
    for (slug, acked) in &acknowledged {
        let read = app.fetch(&format!("/api/pages/{slug}")).await;
        assert_eq!(read.status, 200, "{slug}: {}", read.text);
        assert!(
            read.json()["body"] == acked.as_str(),
            "{slug}: the server reads another body than it acknowledged"
        );
        assert!(
            app.stored(slug).2 == *acked,
            "{slug}: the file holds another body than was acknowledged"
        );
        assert!(
            restarted.body(slug).await == *acked,
            "{slug}: a restarted server reads another body than was acknowledged"
        );
    }
    drop(restarted);
    assert_ok(&app.conn());
    // What the WAL held when the disk filled (megabytes that could not be
    // checkpointed into the full database file) is checkpointed and the WAL
    // truncated: it holds at most the one write since.
    let wal = format!("{}-wal", app.db_path.display());
    let wal_bytes = || std::fs::metadata(&wal).map_or(0, |m| m.len());
    for _ in 0..3000 {
        if wal_bytes() < 1 << 20 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the WAL still holds {} bytes", wal_bytes());
}

/// Another `agent-pages serve` process on the database file `db` (its budget and
/// output in `dir`): it knows only what is on disk, as a restarted server would.
/// Killed on drop (by its [`ChildGuard`]).
struct Restarted {
    _process: ChildGuard,
    url: String,
}

impl Restarted {
    fn start(db: &Path, dir: &Path) -> Self {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_agent-pages"));
        command
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("AGENT_PAGES_DATABASE", db)
            .env(
                "AGENT_PAGES_BUDGET_DATABASE",
                dir.join("restarted-budget.sqlite3"),
            )
            .env("AGENT_PAGES_BIND", "127.0.0.1:0")
            .env("RUST_LOG", "warn");
        let mut process = ChildGuard::spawn("restarted", command, dir);
        let line = process.wait_for_line("listening on ");
        let url = line
            .split("listening on ")
            .nth(1)
            .unwrap()
            .trim()
            .to_owned();
        Self {
            _process: process,
            url,
        }
    }

    /// The body of `slug` as this server reads it.
    async fn body(&self, slug: &str) -> String {
        let url = format!("{}/api/pages/{slug}", self.url);
        let r = reqwest::get(&url).await.unwrap();
        assert_eq!(r.status(), 200, "{url}");
        let page: serde_json::Value = r.json().await.unwrap();
        page["body"].as_str().unwrap().to_owned()
    }
}

/// SPEC §10: a search whose budget cannot be written is 503 `budget-unavailable`,
/// never 500. Both databases on a small tmpfs (the default layout), filled to
/// the last byte: searches and writes are 200 or 503 `budget-unavailable`,
/// `/readyz` fails; the space freed, both answer again.
#[actix_web::test]
async fn a_full_disk_under_the_budget_answers_503_budget_unavailable_never_500() {
    let Some(tmpfs) = small_disk("a_full_disk_under_the_budget_answers_503", 6 << 20) else {
        return;
    };
    let app =
        spawn_app_in_folder(tmpfs.path(), |s| s.search_budget.set_limit("minute", 1000)).await;
    assert_eq!(app.search("kubernetes", AGENT).await.status(), 200);
    let filler = fill(tmpfs.path());
    let mut refused = 0;
    for i in 0..40 {
        let (status, headers, body) = app.search_json("kubernetes", AGENT).await;
        if status == 503 {
            assert_eq!(body["type"], "/problems/budget-unavailable", "{body}");
            assert!(headers.contains_key("retry-after"));
            refused += 1;
        } else {
            assert_eq!(status, 200, "search {i}: {body}");
        }
    }
    assert!(refused > 0, "no budget write met the full disk");
    let r = app.create(json!({"title": "A small page"})).await;
    assert_eq!(r.status, 503, "{}", r.text);
    let ready = app.fetch("/readyz").await;
    assert_eq!(ready.status, 503, "{}", ready.text);

    std::fs::remove_file(filler).unwrap();
    let ready = app.fetch("/readyz").await;
    assert_eq!(ready.status, 200, "{}", ready.text);
    assert_eq!(app.search("kubernetes", AGENT).await.status(), 200);
    assert_eq!(
        app.create(json!({"title": "A small page"})).await.status,
        201
    );
    assert_ok(&app.conn());
    assert_ok(&app.budget_conn());
}
