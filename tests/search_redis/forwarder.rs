//! One address in front of Redis servers, as a VIP, a DNS name or a Kubernetes
//! Service is: a TCP forwarder on a loopback port that sends each new connection to
//! its current target. Repointing it moves new connections only; the open ones stay
//! with the server they reached, as they do behind a real failover. It can also
//! silence the open connections (they stay open and swallow what is sent, like a
//! connection to a host that vanished), while new ones are forwarded.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct Forwarder {
    address: SocketAddr,
    shared: Arc<Shared>,
}

struct Shared {
    target: Mutex<SocketAddr>,
    /// Connections made so far; a connection numbered below `silent_below` is
    /// silenced.
    connections: AtomicU64,
    silent_below: AtomicU64,
    /// Bytes sent into a silenced connection (read and dropped): proof that the
    /// silence was met, not just set.
    swallowed: AtomicU64,
    closed: AtomicBool,
}

impl Forwarder {
    /// Listens on a free loopback port and forwards to `target`.
    pub fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            target: Mutex::new(target),
            connections: AtomicU64::new(0),
            silent_below: AtomicU64::new(0),
            swallowed: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        });
        let accepting = shared.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if accepting.closed.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let number = accepting.connections.fetch_add(1, Ordering::SeqCst);
                let target = *accepting.target.lock().unwrap();
                let Ok(server) = TcpStream::connect(target) else {
                    continue;
                };
                for (from, to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let shared = accepting.clone();
                    std::thread::spawn(move || pump(from, to, number, &shared));
                }
            }
        });
        Self { address, shared }
    }

    /// `redis://127.0.0.1:PORT/0` of the forwarder (with `:password@` when given).
    pub fn url(&self, password: Option<&str>) -> String {
        let auth = password.map(|p| format!(":{p}@")).unwrap_or_default();
        format!("redis://{auth}{}/0", self.address)
    }

    /// Sends new connections to `target`; open ones stay where they are.
    pub fn repoint(&self, target: SocketAddr) {
        *self.shared.target.lock().unwrap() = target;
    }

    /// Silences every connection open now: nothing more passes either way, and
    /// nothing is closed.
    pub fn silence_open_connections(&self) {
        let made = self.shared.connections.load(Ordering::SeqCst);
        self.shared.silent_below.store(made, Ordering::SeqCst);
    }

    /// Connections made through the forwarder so far.
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Bytes either end sent into a silenced connection, which went nowhere.
    pub fn swallowed(&self) -> u64 {
        self.shared.swallowed.load(Ordering::SeqCst)
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        // Wake the accepting thread so that it sees `closed`.
        let _ = TcpStream::connect(self.address);
    }
}

/// Copies `from` to `to` until either closes, the forwarder is dropped, or
/// connection `number` is silenced (then it holds both open without a byte more).
fn pump(mut from: TcpStream, mut to: TcpStream, number: u64, shared: &Shared) {
    from.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let mut buffer = [0u8; 16 * 1024];
    loop {
        if shared.closed.load(Ordering::SeqCst) {
            break;
        }
        let silenced = number < shared.silent_below.load(Ordering::SeqCst);
        match from.read(&mut buffer) {
            // A silenced connection is never closed by the forwarder.
            Ok(0) if silenced => std::thread::sleep(Duration::from_millis(20)),
            Ok(0) => break,
            // Silenced (or silenced while reading): swallowed, and counted.
            Ok(n) if silenced || number < shared.silent_below.load(Ordering::SeqCst) => {
                shared.swallowed.fetch_add(n as u64, Ordering::SeqCst);
            }
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}
