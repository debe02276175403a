//! Requests of the agent API, and the captured log of this test binary.

use std::io::Write;
use std::sync::{Mutex, OnceLock};

use serde_json::{json, Value};

// The shared helpers (`tests/common`), reached through this module as every test
// binary reaches them: `crate::helpers`.
#[path = "../common/mod.rs"]
mod common;
pub use common::*;

/// The client the PIN-protected requests come from unless a test picks another
/// (the test app trusts 127.0.0.1 as a proxy, so `X-Forwarded-For` names it).
pub const AGENT: &str = "198.51.100.7";
pub const PIN: &str = "correct horse battery";

/// An answer, read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Reply {
    /// `r`, read whole.
    pub async fn of(r: reqwest::Response) -> Self {
        Self {
            status: r.status().as_u16(),
            headers: r.headers().clone(),
            text: r.text().await.unwrap(),
        }
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts this is the problem document of `status` and `kind` (the last part of
    /// its `type`) and returns it.
    #[track_caller]
    pub fn problem(&self, status: u16, kind: &str) -> Value {
        assert_eq!(self.status, status, "{}", self.text);
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json")
        );
        let p = self.json();
        assert_eq!(p["type"], format!("/problems/{kind}"), "{p}");
        assert_eq!(p["status"], status, "{p}");
        assert!(p["title"].is_string() && p["detail"].is_string(), "{p}");
        p
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// `POST /api/pages` with a JSON body.
    pub async fn create(&self, body: Value) -> Reply {
        Reply::of(
            self.client
                .post(self.url("/api/pages"))
                .header("X-Forwarded-For", AGENT)
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// Publishes `slug` with [`PIN`]; panics unless 201.
    pub async fn publish(&self, slug: &str, title: &str) {
        let r = self
            .create(json!({"slug": slug, "title": title, "body": "text", "pin": PIN}))
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }

    /// `PUT /api/pages/{slug}` from `client`, with `X-Page-Pin` when `pin` is given.
    pub async fn put_page(
        &self,
        slug: &str,
        pin: Option<&str>,
        client: &str,
        body: Value,
    ) -> Reply {
        let mut r = self
            .client
            .put(self.url(&format!("/api/pages/{slug}")))
            .header("X-Forwarded-For", client)
            .json(&body);
        if let Some(pin) = pin {
            r = r.header("X-Page-Pin", pin);
        }
        Reply::of(r.send().await.unwrap()).await
    }

    /// `POST /api/pages/{slug}/{action}` (`archive` or `claim`) from `client`.
    pub async fn act(&self, slug: &str, action: &str, pin: Option<&str>, client: &str) -> Reply {
        let mut r = self
            .client
            .post(self.url(&format!("/api/pages/{slug}/{action}")))
            .header("X-Forwarded-For", client);
        if let Some(pin) = pin {
            r = r.header("X-Page-Pin", pin);
        }
        Reply::of(r.send().await.unwrap()).await
    }

    /// `GET path`, read whole.
    pub async fn fetch(&self, path: &str) -> Reply {
        Reply::of(self.get(path).await).await
    }

    /// `(version, title, body)` of `slug` as stored, in any state.
    pub fn stored(&self, slug: &str) -> (i64, String, String) {
        let rows = self.sql_rows(&format!(
            "SELECT current_version, title, body FROM pages WHERE slug = '{}'",
            slug.replace('\'', "''")
        ));
        let row = rows.first().unwrap_or_else(|| panic!("no page {slug}"));
        (
            row[0].as_deref().unwrap().parse().unwrap(),
            row[1].clone().unwrap(),
            row[2].clone().unwrap(),
        )
    }
}

/// Everything this test binary logged so far (all tests share one subscriber, so
/// a check on it covers every test that ran before it too).
pub fn logs() -> String {
    String::from_utf8_lossy(&LOG.get().expect("capture_logs ran").lock().unwrap()).into_owned()
}

static LOG: OnceLock<Mutex<Vec<u8>>> = OnceLock::new();

/// Sends every log line of the app (debug and up, through the product's own filter)
/// to [`logs`]. Idempotent.
pub fn capture_logs() {
    if LOG.set(Mutex::new(Vec::new())).is_ok() {
        tracing_subscriber::fmt()
            .with_env_filter(agent_pages::telemetry::capped(
                tracing_subscriber::EnvFilter::new("debug"),
            ))
            .with_writer(|| Capture)
            .with_ansi(false)
            .init();
    }
}

struct Capture;

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOG.get().unwrap().lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a raw exchange read: the status line's code, the header block and whatever
/// came after it, until the server closed the connection.
#[derive(Debug)]
pub struct RawReply {
    pub status: u16,
    pub head: String,
    pub after_head: Vec<u8>,
}

impl RawReply {
    /// The value of header `name` (case-insensitive), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

impl TestApp {
    /// Opens a TCP connection to the app, sends `bytes` exactly as given and keeps
    /// the connection open for more (the caller may stall it).
    pub async fn raw_connect(&self, bytes: &[u8]) -> tokio::net::TcpStream {
        use tokio::io::AsyncWriteExt as _;
        let addr = self.address.trim_start_matches("http://");
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(bytes).await.unwrap();
        stream
    }

    /// Sends `bytes` on a fresh connection and reads everything until the server
    /// closes it. Fails the test if the server keeps it open for 60 s.
    pub async fn raw_exchange(&self, bytes: &[u8]) -> RawReply {
        read_until_closed(self.raw_connect(bytes).await).await
    }
}

/// Reads `stream` until the server closes it; fails the test after 60 s (a server
/// that never closes is the fault some tests look for).
pub async fn read_until_closed(mut stream: tokio::net::TcpStream) -> RawReply {
    use tokio::io::AsyncReadExt as _;
    let mut all = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(60), async {
        let mut buf = [0u8; 8192];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("the server kept the connection open for 60 s");
    let split = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no complete head: {:?}", String::from_utf8_lossy(&all)));
    let head = String::from_utf8_lossy(&all[..split]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {head}"));
    RawReply {
        status,
        head,
        after_head: all[split + 4..].to_vec(),
    }
}

impl TestApp {
    /// Pages stored, in any state.
    pub fn stored_count(&self) -> i64 {
        self.sql_i64("SELECT COUNT(*) FROM pages")
    }
}

impl TestApp {
    /// Publishes `slug` with [`PIN`] and no body; panics unless 201.
    pub async fn publish_locked(&self, slug: &str) {
        let r = self
            .create(json!({"slug": slug, "title": slug, "pin": PIN}))
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
}
