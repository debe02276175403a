//! `agent-pages mcp --url URL`, the stdio bridge, as an agent host runs it: the real
//! binary relaying to a real `serve`, driven over its stdin/stdout with JSON-RPC
//! lines. Every call has a deadline (SPEC §11): against a service that accepts
//! connections and never answers, the bridge neither hangs at start nor mid-session;
//! a timed-out call is a JSON-RPC error naming the URL. A base URL gets `/mcp`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_agent-pages");

/// How long a test waits for the bridge to do anything before calling it hung:
/// far beyond its deadlines (5 s handshake, the calls' 2 s here).
const HUNG: Duration = Duration::from_secs(60);

/// A child process, killed on drop.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `serve` on a free port over a fresh database; its URL once it is ready.
fn serve(dir: &std::path::Path) -> (Process, String) {
    let mut child = Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AGENT_PAGES_DATABASE", dir.join("pages.sqlite3"))
        .env("AGENT_PAGES_BIND", "127.0.0.1:0")
        .env("RUST_LOG", "warn")
        .arg("serve")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let process = Process(child);
    for line in BufReader::new(stdout).lines() {
        if let Some(url) = line.unwrap().split("listening on ").nth(1) {
            return (process, url.trim().to_owned());
        }
    }
    panic!("serve exited without a ready line");
}

/// The bridge to `url`, its stdout lines arriving on a channel.
struct Bridge {
    process: Process,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Bridge {
    fn start(url: &str, extra: &[&str]) -> Bridge {
        Bridge::start_with(url, extra, &[])
    }

    /// [`Bridge::start`] with `env` set for the bridge.
    fn start_with(url: &str, extra: &[&str], env: &[(&str, &str)]) -> Bridge {
        let mut child = Command::new(BIN)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .args(["mcp", "--url", url])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut stderr_pipe = child.stderr.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Bridge {
            process: Process(child),
            stdin: Some(stdin),
            lines,
            stderr,
        }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// The answer to request `id` (other lines skipped); panics when the bridge
    /// says nothing for [`HUNG`].
    fn answer(&self, id: i64) -> Value {
        let until = Instant::now() + HUNG;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "the bridge gave no answer to request {id} in {HUNG:?}: stderr:\n{}",
                    self.stderr()
                )
            });
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout holds only JSON-RPC ({e}): {line}"));
            if message["id"] == id {
                return message;
            }
        }
    }

    fn initialize(&mut self) {
        self.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "agent-pages-tests", "version": "1"}}}),
        );
        let answer = self.answer(1);
        assert_eq!(
            answer["result"]["serverInfo"]["name"], "agent-pages",
            "{answer}"
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// The exit status, waiting at most [`HUNG`].
    fn exit_code(&mut self) -> Option<i32> {
        let until = Instant::now() + HUNG;
        while Instant::now() < until {
            if let Some(status) = self.process.0.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "the bridge did not exit in {HUNG:?}: stderr:\n{}",
            self.stderr()
        );
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// A listener that accepts every connection and never writes a byte.
fn silent_listener() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    address
}

/// A relay to `upstream` that passes each request on until one holds `marker`;
/// from then on every request is accepted, read and never answered.
fn relay_until(upstream: SocketAddr, marker: &'static str) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let silent = Arc::new(AtomicBool::new(false));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let silent = silent.clone();
            std::thread::spawn(move || relay_connection(stream, upstream, marker, &silent));
        }
    });
    address
}

/// One request of `client`: passed on to `upstream` and answered (the connection
/// then closed), or, once a request held `marker`, read and never answered.
fn relay_connection(client: TcpStream, upstream: SocketAddr, marker: &str, silent: &AtomicBool) {
    let mut reader = BufReader::new(client.try_clone().unwrap());
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let end = line == "\r\n";
        head.push(line);
        if end {
            break;
        }
    }
    let length = head
        .iter()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    if silent.load(Ordering::SeqCst) || String::from_utf8_lossy(&body).contains(marker) {
        silent.store(true, Ordering::SeqCst);
        // Accepted, read, never answered: hold the connection until the test ends.
        std::thread::sleep(Duration::from_secs(3600));
        return;
    }
    let mut forwarded = String::new();
    for line in &head[..head.len() - 1] {
        if !line.to_ascii_lowercase().starts_with("connection:") {
            forwarded.push_str(line);
        }
    }
    forwarded.push_str("Connection: close\r\n\r\n");
    let mut server = TcpStream::connect(upstream).unwrap();
    server.write_all(forwarded.as_bytes()).unwrap();
    server.write_all(&body).unwrap();
    let mut answer = Vec::new();
    server.read_to_end(&mut answer).unwrap();
    let mut client = client;
    client.write_all(&answer).unwrap();
}

#[test]
fn every_bridge_call_has_a_deadline_even_the_handshake() {
    let url = format!("http://{}/mcp", silent_listener());
    let mut bridge = Bridge::start(&url, &[]);
    assert_eq!(bridge.exit_code(), Some(1), "{}", bridge.stderr());
    let stderr = bridge.stderr();
    assert!(stderr.contains(&url), "names the URL: {stderr}");
    assert!(stderr.contains("handshake"), "{stderr}");
}

#[test]
fn every_bridge_call_has_a_deadline_mid_session() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, service) = serve(dir.path());
    let upstream: SocketAddr = service.trim_start_matches("http://").parse().unwrap();
    // The service answers the handshake, then stops answering at the first call.
    let url = format!("http://{}/mcp", relay_until(upstream, "tools/call"));
    let mut bridge = Bridge::start(&url, &["--timeout-secs", "2"]);
    bridge.initialize();
    for id in [2, 3] {
        bridge.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": {"name": "list_pages", "arguments": {}}}));
        let answer = bridge.answer(id);
        let error = &answer["error"];
        assert_eq!(error["code"], -32603, "an internal error: {answer}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(&url), "names the URL: {message}");
        assert!(message.contains("within 2 s"), "{message}");
    }
    // And it still serves what needs no answer from the service, then exits cleanly
    // when the agent closes stdin.
    bridge.send(json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}));
    assert!(bridge.answer(4).get("result").is_some());
    bridge.stdin = None;
    assert_eq!(bridge.exit_code(), Some(0), "{}", bridge.stderr());
}

#[test]
fn a_base_url_is_taken_as_its_mcp_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, service) = serve(dir.path());
    for base in [service.clone(), format!("{service}/")] {
        let mut bridge = Bridge::start(&base, &[]);
        bridge.initialize();
        bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
        let answer = bridge.answer(2);
        assert_eq!(
            answer["result"]["tools"].as_array().map(Vec::len),
            Some(11),
            "{base}: {answer}"
        );
        assert!(!bridge.stderr().contains("<html"), "{}", bridge.stderr());
    }
}

#[test]
fn a_url_that_is_not_http_is_refused_with_a_one_line_hint() {
    let mut bridge = Bridge::start("pages.example/mcp", &[]);
    assert_eq!(bridge.exit_code(), Some(1));
    let stderr = bridge.stderr();
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("https://pages.example/mcp"), "{stderr}");
}

#[test]
fn the_bridge_gives_the_pin_of_agent_pages_pin_to_calls_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, service) = serve(dir.path());
    let pin = "bridged secret 42";
    let mut bridge = Bridge::start_with(&service, &[], &[("AGENT_PAGES_PIN", pin)]);
    bridge.initialize();
    let call = |bridge: &mut Bridge, id: i64, name: &str, arguments: Value| {
        bridge.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}));
        let answer = bridge.answer(id);
        assert_ne!(answer["result"]["isError"], true, "{name}: {answer}");
        answer["result"]["structuredContent"].clone()
    };
    // Published with the PIN of the environment, then changed with it: neither
    // call names a pin.
    call(
        &mut bridge,
        2,
        "publish_page",
        json!({"slug": "bridged", "title": "Bridged"}),
    );
    let updated = call(
        &mut bridge,
        3,
        "update_page",
        json!({"slug": "bridged", "body": "New."}),
    );
    assert_eq!(updated["version"], 2, "{updated}");
    assert!(!bridge.stderr().contains(pin), "{}", bridge.stderr());
}
