//! A loopback HTTP/1.1 proxy between the browser and the app, playing the network a
//! visitor's searches cross: it can hold the answers to a query until the test
//! releases them (a slow answer, without a clock), and drop the connection after the
//! app answered (a lost answer: the search was spent, the browser sees no response).
//!
//! Each request from the browser goes to the app on a fresh connection
//! (`Connection: close`); the answer is read whole and written back on the browser's
//! kept-alive connection, so the browser reuses connections as it would with a real
//! server (which is what makes Chromium send a GET again when one drops).
//! Requests are matched by their `q` parameter, decoded, exactly.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

#[derive(Default)]
struct Rules {
    /// Queries whose answers wait for [`Proxy::release`].
    held: HashMap<String, bool>,
    /// Answers being held now, per query.
    holding: HashMap<String, usize>,
    /// Queries whose connection is dropped once the app answered.
    dropped: Vec<String>,
    /// Requests that reached the app, per query.
    seen: HashMap<String, usize>,
}

#[derive(Default)]
struct Shared {
    rules: Mutex<Rules>,
    changed: Notify,
}

/// The proxy, listening on a free loopback port until dropped.
pub struct Proxy {
    /// `http://127.0.0.1:PORT`, to point the browser at.
    pub address: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// A proxy in front of the app at `upstream` (`http://host:port`).
    pub async fn start(upstream: &str) -> Proxy {
        let upstream = upstream.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = format!("http://{}", listener.local_addr().unwrap());
        let shared = Arc::new(Shared::default());
        let for_task = shared.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (shared, upstream) = (for_task.clone(), upstream.clone());
                tokio::spawn(async move {
                    let _ = serve(client, &upstream, &shared).await;
                });
            }
        });
        Proxy {
            address,
            shared,
            task,
        }
    }

    /// Holds every answer to `q` from now until [`Proxy::release`].
    pub fn hold(&self, q: &str) {
        self.shared
            .rules
            .lock()
            .unwrap()
            .held
            .insert(q.to_owned(), false);
    }

    /// Lets the held answers to `q` (and every later one) through.
    pub fn release(&self, q: &str) {
        self.shared
            .rules
            .lock()
            .unwrap()
            .held
            .insert(q.to_owned(), true);
        self.shared.changed.notify_waiters();
    }

    /// Answers to `q` the proxy holds right now (the app has answered them).
    pub fn holding(&self, q: &str) -> usize {
        let rules = self.shared.rules.lock().unwrap();
        rules.holding.get(q).copied().unwrap_or(0)
    }

    /// Drops the browser's connection for every request for `q`, after the app
    /// answered it.
    pub fn drop_answers(&self, q: &str) {
        self.shared.rules.lock().unwrap().dropped.push(q.to_owned());
    }

    /// How many requests for `q` reached the app.
    pub fn seen(&self, q: &str) -> usize {
        let rules = self.shared.rules.lock().unwrap();
        rules.seen.get(q).copied().unwrap_or(0)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        // Whatever is still held goes, so no connection task waits forever.
        let mut rules = self.shared.rules.lock().unwrap();
        for released in rules.held.values_mut() {
            *released = true;
        }
        drop(rules);
        self.shared.changed.notify_waiters();
    }
}

/// The decoded `q` of a request target (`/search?q=…`), if it has one.
fn query_of(target: &str) -> Option<String> {
    let (_, query) = target.split_once('?')?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "q")
        .map(|(_, v)| v.into_owned())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `head` (up to and without the blank line) without its `Connection` header, plus
/// the `extra` header lines.
fn rewrite_head(head: &[u8], extra: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let mut out = String::new();
    for line in text.split("\r\n").filter(|l| !l.is_empty()) {
        if !line.to_ascii_lowercase().starts_with("connection:") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str(extra);
    out.push_str("\r\n");
    out.into_bytes()
}

/// Serves one kept-alive browser connection, request by request.
async fn serve(mut client: TcpStream, upstream: &str, shared: &Shared) -> std::io::Result<()> {
    let mut buffer = Vec::new();
    loop {
        // One request head (GET and HEAD only: visitors' pages send no bodies).
        let end = loop {
            if let Some(at) = find(&buffer, b"\r\n\r\n") {
                break at;
            }
            let mut chunk = [0u8; 4096];
            let n = client.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buffer.extend_from_slice(&chunk[..n]);
        };
        let head: Vec<u8> = buffer.drain(..end + 4).collect();
        let target = String::from_utf8_lossy(&head)
            .split(' ')
            .nth(1)
            .unwrap_or("/")
            .to_owned();
        let q = query_of(&target);

        let mut app = TcpStream::connect(upstream).await?;
        app.write_all(&rewrite_head(&head[..end], "Connection: close\r\n"))
            .await?;
        let mut answer = Vec::new();
        app.read_to_end(&mut answer).await?;

        let Some(q) = q else {
            client.write_all(&keep_alive(&answer)).await?;
            continue;
        };
        let drop_it = {
            let mut rules = shared.rules.lock().unwrap();
            *rules.seen.entry(q.clone()).or_default() += 1;
            rules.dropped.contains(&q)
        };
        if drop_it {
            // No answer at all on a connection the browser may have used before.
            return Ok(());
        }
        wait_while_held(shared, &q).await;
        client.write_all(&keep_alive(&answer)).await?;
    }
}

async fn wait_while_held(shared: &Shared, q: &str) {
    let mut counted = false;
    loop {
        let notified = shared.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        {
            let mut rules = shared.rules.lock().unwrap();
            let held = rules.held.get(q) == Some(&false);
            let holding = rules.holding.entry(q.to_owned()).or_default();
            if !held {
                if counted {
                    *holding -= 1;
                }
                return;
            }
            if !counted {
                *holding += 1;
                counted = true;
            }
        }
        notified.await;
    }
}

/// The app's answer (read to its end) as one for a kept-alive connection: no
/// `Connection: close`, and a `Content-Length` when it had no length of its own.
fn keep_alive(answer: &[u8]) -> Vec<u8> {
    let Some(end) = find(answer, b"\r\n\r\n") else {
        return answer.to_vec();
    };
    let (head, body) = (&answer[..end], &answer[end + 4..]);
    let lower = String::from_utf8_lossy(head).to_ascii_lowercase();
    let framed = lower.contains("\r\ncontent-length:") || lower.contains("\r\ntransfer-encoding:");
    let extra = if framed {
        String::new()
    } else {
        format!("Content-Length: {}\r\n", body.len())
    };
    let mut out = rewrite_head(head, &extra);
    out.extend_from_slice(body);
    out
}
