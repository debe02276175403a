//! A real PostgreSQL server for tests (Debian's `postgresql` package: `initdb` and
//! `postgres` from /usr/lib/postgresql/<major>/bin), on a free loopback port, its data
//! folder and socket in a temp dir. As root (CI, these machines) it runs as the
//! `postgres` user the package creates, since `initdb` and `postgres` refuse root.
//!
//! [`shared`] is one server per test binary, started on first use and stopped when
//! the binary exits; each test takes a database of its own on it
//! ([`PostgresServer::create_database`]), so tests run in parallel without seeing
//! each other. Tests that stop or freeze the server start their own
//! ([`PostgresServer::start`]).
//!
//! The server trades durability for speed (`fsync=off`, `synchronous_commit=off`):
//! no test crashes the machine, and the benchmark starts a server of its own with
//! the defaults.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::{free_port, READY_DEADLINE};

/// Where Debian puts each major version's server programs (`15/bin`, `17/bin`, …).
const DEBIAN_LIB: &str = "/usr/lib/postgresql";

/// The newest major version's `bin` folder under [`DEBIAN_LIB`], or `15/bin`
/// when there is none (named in the message that says it is missing).
fn debian_bin() -> PathBuf {
    let newest = std::fs::read_dir(DEBIAN_LIB)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .max()
        .unwrap_or(15);
    Path::new(DEBIAN_LIB).join(newest.to_string()).join("bin")
}

/// The `postgres` binary folder (`POSTGRES_BIN`, else Debian's newest). When
/// PostgreSQL is missing: on CI (`CI` or `AGENT_PAGES_REQUIRE_POSTGRES` set, as
/// `.ci/run` does) a panic naming the package to install; elsewhere a line saying
/// so and the whole test binary ends here, successfully (every test of a
/// PostgreSQL binary needs the server).
pub fn require_postgres() -> PathBuf {
    let dir = std::env::var_os("POSTGRES_BIN").map_or_else(debian_bin, PathBuf::from);
    if dir.join("postgres").is_file() && dir.join("initdb").is_file() {
        return dir;
    }
    let missing = format!(
        "PostgreSQL is not installed ({} has no postgres and initdb): these tests run \
         the real server. Install it with `apt-get install -y postgresql` (.ci/run does \
         this on CI), or point POSTGRES_BIN at the folder holding postgres and initdb.",
        dir.display()
    );
    if std::env::var_os("CI").is_some()
        || std::env::var_os("AGENT_PAGES_REQUIRE_POSTGRES").is_some()
    {
        panic!("{missing}");
    }
    super::skipped("every test of this binary", &missing);
    std::process::exit(0);
}

/// Whether this process runs as root (then the server runs as `postgres`).
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `program args…`, as the `postgres` user when we are root.
fn command(bin: &Path, program: &str) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(program));
        c
    } else {
        Command::new(bin.join(program))
    }
}

/// A running PostgreSQL server; stopped (`pg_ctl stop -m immediate`) on drop.
#[derive(Debug)]
pub struct PostgresServer {
    bin: PathBuf,
    port: u16,
    data: PathBuf,
    dir: tempfile::TempDir,
    running: bool,
    databases: AtomicUsize,
}

impl PostgresServer {
    /// A fresh cluster (`initdb`, UTF-8, trust on loopback), started, accepting
    /// connections.
    pub fn start() -> Self {
        let bin = require_postgres();
        let dir = tempfile::Builder::new()
            .prefix("agent-pages-pg")
            .tempdir()
            .unwrap();
        let data = dir.path().join("data");
        if is_root() {
            // The server's user must own its folders (and reach them).
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
            let status = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(dir.path())
                .status()
                .expect("chown");
            assert!(status.success(), "chown postgres {}", dir.path().display());
        }
        let out = command(&bin, "initdb")
            .args(["-D"])
            .arg(&data)
            .args([
                "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale", "C.UTF-8",
            ])
            .output()
            .expect("running initdb");
        assert!(
            out.status.success(),
            "initdb failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut server = Self {
            bin,
            port: free_port(),
            data,
            dir,
            running: false,
            databases: AtomicUsize::new(0),
        };
        server.start_again();
        server
    }

    /// Starts it (again) on the same port and folder; waits until it accepts
    /// connections.
    pub fn start_again(&mut self) {
        assert!(!self.running, "PostgreSQL is already running");
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} \
             -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
             -c max_connections=400 -c shared_buffers=32MB",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("postgres.log");
        let out = command(&self.bin, "pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .arg("-o")
            .arg(options)
            .arg("-l")
            .arg(&log)
            .args(["-w", "-t", &READY_DEADLINE.as_secs().to_string(), "start"])
            .output()
            .expect("running pg_ctl start");
        assert!(
            out.status.success(),
            "pg_ctl start failed:\n{}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        self.running = true;
        self.wait_ready();
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            if self.admin().is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "PostgreSQL did not accept connections on port {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops it: `fast` ends every session and shuts down cleanly, as an operator's
    /// restart does; `immediate` is a crash (no checkpoint; recovery at the next
    /// start).
    pub fn stop(&mut self, mode: &str) {
        if !self.running {
            return;
        }
        let out = command(&self.bin, "pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", mode, "-w", "stop"])
            .output()
            .expect("running pg_ctl stop");
        assert!(
            out.status.success(),
            "pg_ctl stop failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.running = false;
    }

    /// The port it listens on (the same after a restart).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of database `db` as the superuser.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Whether the server accepts a connection now (tried on a thread of its own:
    /// the blocking client runs a runtime of its own, never inside another one,
    /// and closes it the same way when dropped).
    fn admin(&self) -> Result<(), postgres::Error> {
        let url = self.url("postgres");
        std::thread::spawn(move || postgres::Client::connect(&url, postgres::NoTls).map(drop))
            .join()
            .expect("the connecting thread")
    }

    /// A new, empty UTF-8 database; returns its name.
    pub fn create_database(&self) -> String {
        let n = self.databases.fetch_add(1, Ordering::SeqCst);
        let name = format!("t{}_{n}", std::process::id());
        self.sql("postgres", &format!("CREATE DATABASE {name}"));
        name
    }

    /// Runs `sql` (one or more statements, no results) in database `db`, on a thread
    /// of its own (so it can be called from async tests). Panics on error.
    pub fn sql(&self, db: &str, sql: &str) {
        sql_at(&self.url(db), sql)
    }

    /// The rows of `query` in database `db`, every value as text (`None` for NULL),
    /// read with the simple query protocol on a thread of its own. Panics on error.
    pub fn text_rows(&self, db: &str, query: &str) -> Vec<Vec<Option<String>>> {
        text_rows_at(&self.url(db), query)
    }

    /// Turns TLS on (connections without it still work): `files`' certificate and
    /// key, copied beside the data folder for the server's user, then a reload.
    pub fn enable_tls(&self, files: &super::TlsFiles) {
        let cert = self.dir.path().join("server.pem");
        let key = self.dir.path().join("server.key");
        std::fs::copy(&files.cert, &cert).unwrap();
        std::fs::copy(&files.key, &key).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        if is_root() {
            let status = Command::new("chown")
                .arg("postgres:postgres")
                .arg(&cert)
                .arg(&key)
                .status()
                .expect("chown");
            assert!(status.success());
        }
        for setting in [
            format!("ALTER SYSTEM SET ssl_cert_file = '{}'", cert.display()),
            format!("ALTER SYSTEM SET ssl_key_file = '{}'", key.display()),
            "ALTER SYSTEM SET ssl = on".to_owned(),
            "SELECT pg_reload_conf()".to_owned(),
        ] {
            self.sql("postgres", &setting);
        }
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default()
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        if self.running {
            let _ = command(&self.bin, "pg_ctl")
                .arg("-D")
                .arg(&self.data)
                .args(["-m", "immediate", "-w", "stop"])
                .output();
        }
    }
}

/// [`PostgresServer::sql`] on the database at `url`.
pub fn sql_at(url: &str, sql: &str) {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls)
            .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
        client
            .batch_execute(&sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    })
    .join()
    .unwrap_or_else(|_| panic!("SQL failed"));
}

/// [`PostgresServer::text_rows`] on the database at `url`.
pub fn text_rows_at(url: &str, query: &str) -> Vec<Vec<Option<String>>> {
    let (url, query) = (url.to_owned(), query.to_owned());
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls)
            .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
        client
            .simple_query(&query)
            .unwrap_or_else(|e| panic!("{query}: {e}"))
            .iter()
            .filter_map(|m| match m {
                postgres::SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|i| row.get(i).map(str::to_owned))
                        .collect(),
                ),
                _ => None,
            })
            .collect()
    })
    .join()
    .unwrap_or_else(|_| panic!("query failed"))
}

static SHARED: OnceLock<PostgresServer> = OnceLock::new();

/// The server this test binary shares (started on first use, stopped at exit).
pub fn shared() -> &'static PostgresServer {
    SHARED.get_or_init(|| {
        extern "C" fn stop_shared() {
            if let Some(server) = SHARED.get() {
                let _ = command(&server.bin, "pg_ctl")
                    .arg("-D")
                    .arg(&server.data)
                    .args(["-m", "immediate", "-w", "stop"])
                    .output();
                let _ = std::fs::remove_dir_all(server.dir.path());
            }
        }
        let server = PostgresServer::start();
        // SAFETY: registering a plain function without captures.
        unsafe {
            libc::atexit(stop_shared);
        }
        server
    })
}
