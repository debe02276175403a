//! An MCP client over plain HTTP: one JSON-RPC request per POST, as the stateless
//! Streamable HTTP transport has it.

use serde_json::{json, Value};

// The shared helpers (`tests/common`), reached through this module as every test
// binary reaches them: `crate::helpers`.
#[path = "../common/mod.rs"]
mod common;
pub use common::*;

/// The client the calls come from unless a test picks another (the test app trusts
/// 127.0.0.1 as a proxy, so `X-Forwarded-For` names it).
pub const AGENT: &str = "198.51.100.7";
pub const PIN: &str = "correct horse battery";
/// The handshake revision the tests speak unless they pick another.
pub const VERSION: &str = "2025-11-25";

/// An answer to one POST.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }

    /// The JSON-RPC `result`; panics on an error or a non-200.
    #[track_caller]
    pub fn result(&self) -> Value {
        assert_eq!(self.status, 200, "{}", self.text);
        let message = self.json();
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        assert!(message.get("error").is_none(), "{message}");
        message["result"].clone()
    }
}

/// What a `tools/call` answered: the tool result.
#[derive(Debug)]
pub struct ToolResult(pub Value);

impl ToolResult {
    /// The structured content of a successful call; panics on a tool error.
    #[track_caller]
    pub fn ok(&self) -> Value {
        assert_ne!(self.0["isError"], true, "{}", self.0);
        let text = self.0["content"][0]["text"].as_str().unwrap_or("");
        assert!(!text.is_empty(), "a text for models: {}", self.0);
        self.0["structuredContent"].clone()
    }

    /// The problem document of a tool error of `status` and `kind` (the last part
    /// of its `type`); panics on success.
    #[track_caller]
    pub fn problem(&self, status: u16, kind: &str) -> Value {
        assert_eq!(self.0["isError"], true, "{}", self.0);
        let p = self.0["structuredContent"].clone();
        assert_eq!(p["type"], format!("/problems/{kind}"), "{p}");
        assert_eq!(p["status"], status, "{p}");
        let text = self.0["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(&format!("/problems/{kind}")), "{text}");
        p
    }

    /// The result's text for models.
    pub fn text(&self) -> &str {
        self.0["content"][0]["text"].as_str().unwrap_or("")
    }
}

impl TestApp {
    /// POSTs `message` to `/mcp` from `client` with the transport's headers and
    /// `MCP-Protocol-Version: version` (none when `None`), plus `extra` headers.
    pub async fn mcp_post(
        &self,
        message: &Value,
        client: &str,
        version: Option<&str>,
        extra: &[(&str, &str)],
    ) -> Answer {
        let mut r = self
            .client
            .post(format!("{}/mcp", self.address))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("X-Forwarded-For", client)
            .body(message.to_string());
        if let Some(version) = version {
            r = r.header("MCP-Protocol-Version", version);
        }
        for (name, value) in extra {
            r = r.header(*name, *value);
        }
        let r = r.send().await.unwrap();
        Answer {
            status: r.status().as_u16(),
            headers: r.headers().clone(),
            text: r.text().await.unwrap(),
        }
    }

    /// POSTs `body` to `/mcp` exactly as given (bytes a `Value` cannot hold: repeated
    /// keys, broken JSON), with the transport's headers plus `extra`.
    pub async fn mcp_post_text(&self, body: &str, extra: &[(&str, &str)]) -> Answer {
        let mut r = self
            .client
            .post(format!("{}/mcp", self.address))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("X-Forwarded-For", AGENT)
            .body(body.to_owned());
        for (name, value) in extra {
            r = r.header(*name, *value);
        }
        let r = r.send().await.unwrap();
        Answer {
            status: r.status().as_u16(),
            headers: r.headers().clone(),
            text: r.text().await.unwrap(),
        }
    }

    /// A JSON-RPC request `method` with `params`, after the handshake of [`VERSION`].
    pub async fn mcp(&self, method: &str, params: Value, client: &str) -> Answer {
        let message = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        self.mcp_post(&message, client, Some(VERSION), &[]).await
    }

    /// `initialize` offering `version`.
    pub async fn initialize(&self, version: &str) -> Answer {
        let message = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "agent-pages-tests", "version": "1"}
            }
        });
        self.mcp_post(&message, AGENT, None, &[]).await
    }

    /// `tools/call` of `name` with `arguments` from `client`.
    pub async fn call_as(&self, name: &str, arguments: Value, client: &str) -> ToolResult {
        let r = self
            .mcp(
                "tools/call",
                json!({"name": name, "arguments": arguments}),
                client,
            )
            .await;
        ToolResult(r.result())
    }

    /// `tools/call` from [`AGENT`].
    pub async fn call(&self, name: &str, arguments: Value) -> ToolResult {
        self.call_as(name, arguments, AGENT).await
    }

    /// Publishes `slug` over MCP with [`PIN`]; panics unless it succeeded.
    pub async fn mcp_publish(&self, slug: &str, title: &str) -> Value {
        self.call(
            "publish_page",
            json!({"slug": slug, "title": title, "body": "First words.", "pin": PIN}),
        )
        .await
        .ok()
    }

    /// `PUT /api/pages/{slug}` from `client` with `X-Page-Pin: pin`.
    pub async fn http_put(&self, slug: &str, pin: &str, client: &str, body: Value) -> (u16, Value) {
        let r = self
            .client
            .put(format!("{}/api/pages/{slug}", self.address))
            .header("X-Forwarded-For", client)
            .header("X-Page-Pin", pin)
            .json(&body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap())
    }

    /// `POST /api/pages` from `client`.
    pub async fn http_create(&self, body: Value, client: &str) -> (u16, Value) {
        let r = self
            .client
            .post(format!("{}/api/pages", self.address))
            .header("X-Forwarded-For", client)
            .json(&body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap())
    }

    /// `(version, lifecycle, claimed)` of `slug` as stored.
    pub fn stored_state(&self, slug: &str) -> (i64, String, bool) {
        self.conn()
            .query_row(
                "SELECT current_version, lifecycle, claimed_at IS NOT NULL FROM pages WHERE slug = ?1",
                [slug],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap()
    }
}

impl TestApp {
    /// The title of `slug` as stored, in any state.
    pub fn stored_title(&self, slug: &str) -> String {
        self.conn()
            .query_row("SELECT title FROM pages WHERE slug = ?1", [slug], |r| {
                r.get(0)
            })
            .unwrap()
    }

    /// Opens a connection, sends `bytes` exactly as given and keeps it open.
    pub async fn raw_connect(&self, bytes: &[u8]) -> tokio::net::TcpStream {
        use tokio::io::AsyncWriteExt as _;
        let addr = self.address.trim_start_matches("http://");
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(bytes).await.unwrap();
        stream
    }

    /// Sends `bytes` on a fresh connection and reads until the server closes it
    /// (60 s at most): the status code and the whole answer.
    pub async fn raw_exchange(&self, bytes: &[u8]) -> (u16, String) {
        use tokio::io::AsyncReadExt as _;
        let mut stream = self.raw_connect(bytes).await;
        let mut answer = Vec::new();
        tokio::time::timeout(
            std::time::Duration::from_secs(60),
            stream.read_to_end(&mut answer),
        )
        .await
        .expect("the server closes the connection")
        .unwrap();
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let status = answer
            .get(9..12)
            .and_then(|code| code.parse().ok())
            .unwrap_or(0);
        (status, answer)
    }
}
