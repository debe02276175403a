//! A TCP forwarder in front of PostgreSQL, as a virtual IP, DNS name or network in
//! between would be: new connections go to whichever server it points at now
//! (existing ones stay where they were, as after a failover behind one address), and
//! it can freeze, holding every connection open while passing nothing on (a frozen
//! server or a black-holing network), and thaw again; or it can cut the link,
//! closing every connection and refusing new ones (a server gone, a network down
//! with resets), until it is mended.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct Forwarder {
    port: u16,
    target: Arc<Mutex<SocketAddr>>,
    frozen: watch::Sender<bool>,
    cut: watch::Sender<bool>,
    _runtime: std::thread::JoinHandle<()>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Forwarder {
    /// Listens on a free loopback port, forwarding to `127.0.0.1:target_port`.
    pub fn start(target_port: u16) -> Self {
        let target = Arc::new(Mutex::new(SocketAddr::from(([127, 0, 0, 1], target_port))));
        let (frozen, watching) = watch::channel(false);
        let (cut, cut_watch) = watch::channel(false);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let to = target.clone();
        let runtime = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = TcpListener::from_std(listener).unwrap();
                tokio::select! {
                    _ = stopped => {}
                    _ = async {
                        loop {
                            let Ok((client, _)) = listener.accept().await else { continue };
                            if *cut_watch.borrow() {
                                drop(client); // closed at once
                                continue;
                            }
                            let target = *to.lock().unwrap();
                            tokio::spawn(forward(client, target, watching.clone(), cut_watch.clone()));
                        }
                    } => {}
                }
            });
        });
        Self {
            port,
            target,
            frozen,
            cut,
            _runtime: runtime,
            stop: Some(stop),
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// New connections go to `127.0.0.1:port` from now on.
    pub fn repoint(&self, port: u16) {
        *self.target.lock().unwrap() = SocketAddr::from(([127, 0, 0, 1], port));
    }

    /// Passes nothing on, in either direction, on any connection, until [`thaw`].
    pub fn freeze(&self) {
        self.frozen.send_replace(true);
    }

    pub fn thaw(&self) {
        self.frozen.send_replace(false);
    }

    /// Closes every open connection, and each new one at once, until [`mend`].
    pub fn cut(&self) {
        self.cut.send_replace(true);
    }

    pub fn mend(&self) {
        self.cut.send_replace(false);
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn forward(
    client: TcpStream,
    target: SocketAddr,
    frozen: watch::Receiver<bool>,
    mut cut: watch::Receiver<bool>,
) {
    let Ok(server) = TcpStream::connect(target).await else {
        return;
    };
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    // A cut drops both directions (and so closes both sockets) wherever they are.
    tokio::select! {
        _ = async { tokio::join!(pipe(cr, sw, frozen.clone()), pipe(sr, cw, frozen.clone())) } => {}
        _ = cut.wait_for(|c| *c) => {}
    }
}

async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut frozen: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        // While frozen, read nothing (so nothing is passed on either).
        if frozen.wait_for(|f| !*f).await.is_err() {
            return;
        }
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            _ = frozen.wait_for(|f| *f) => continue,
        };
        if frozen.wait_for(|f| !*f).await.is_err() {
            return;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
