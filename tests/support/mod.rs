//! Real helper programs (nginx, chromedriver, redis-server, the agent-pages binary)
//! as child processes of a test: found on
//! the machine or reported missing with the package to install, started on a free
//! loopback port, awaited until they accept connections, and killed on drop.

#![allow(dead_code)] // each test crate that includes this uses a different part

pub mod pg_server;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a helper program may take to accept connections. Generous, because CI
/// shares two cores with the build; reaching it fails the test, it never passes it.
pub const READY_DEADLINE: Duration = Duration::from_secs(60);

/// The path of `program`, looked up on `PATH` and in the sbin folders (nginx lives in
/// /usr/sbin, which is not on every user's PATH). `env_override` names a variable
/// that, when set, wins. Panics, naming the Debian package, when it is nowhere.
pub fn require_program(program: &str, env_override: &str, package: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(env_override) {
        return PathBuf::from(path);
    }
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path_var).collect();
    dirs.extend(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from));
    dirs.into_iter()
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`{program}` is not installed: this test runs the real program. Install it \
                 with `apt-get install -y {package}` (.ci/run does this on CI), or point \
                 {env_override} at the binary."
            )
        })
}

/// A loopback port that was free a moment ago. The program that gets it binds it
/// itself, so another process could take it in between; that shows up as the program
/// exiting with "address in use", which [`ChildGuard::wait_for_port`] reports.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// A running child process, in its own process group so that everything it starts
/// (Chromium under chromedriver) is killed with it, also when the test panics.
pub struct ChildGuard {
    name: String,
    child: Child,
    /// Files worth showing when the program fails (its error log, say).
    logs: Vec<PathBuf>,
}

impl ChildGuard {
    /// Starts `command` with stdin closed and stdout/stderr going to `NAME.out` in
    /// `log_dir` (a file, not a pipe: nobody reads a pipe while the test runs, and a
    /// full one would stall the program).
    pub fn spawn(name: &str, mut command: Command, log_dir: &Path) -> Self {
        let out_path = log_dir.join(format!("{name}.out"));
        let out = std::fs::File::create(&out_path).expect("creating the output file");
        command
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("cloning a file handle"))
            .stderr(out)
            .process_group(0);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name} ({command:?}): {e}"));
        Self {
            name: name.to_owned(),
            child,
            logs: vec![out_path],
        }
    }

    /// Adds a file whose contents are shown when the program fails to come up.
    pub fn with_log(mut self, path: impl AsRef<Path>) -> Self {
        self.logs.push(path.as_ref().to_owned());
        self
    }

    /// Polls until `127.0.0.1:port` accepts a connection. Fails the test with the
    /// program's output if it exits first or [`READY_DEADLINE`] passes.
    pub fn wait_for_port(&mut self, port: u16) {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().expect("polling the child") {
                panic!(
                    "{} exited with {status} before accepting connections on {addr}\n{}",
                    self.name,
                    self.output()
                );
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return;
            }
            if Instant::now() > deadline {
                let name = self.name.clone();
                let output = self.stop_and_collect_output();
                panic!("{name} did not accept connections on {addr} within {READY_DEADLINE:?}\n{output}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Polls the program's output until a line contains `needle` and returns that
    /// line. Fails the test with the output if the program exits first or
    /// [`READY_DEADLINE`] passes.
    pub fn wait_for_line(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            let text = std::fs::read_to_string(&self.logs[0]).unwrap_or_default();
            if let Some(line) = text.lines().find(|l| l.contains(needle)) {
                return line.to_owned();
            }
            if let Some(status) = self.child.try_wait().expect("polling the child") {
                panic!(
                    "{} exited with {status} before printing {needle:?}\n{}",
                    self.name,
                    self.output()
                );
            }
            if Instant::now() > deadline {
                let name = self.name.clone();
                let output = self.stop_and_collect_output();
                panic!("{name} did not print {needle:?} within {READY_DEADLINE:?}\n{output}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Like [`ChildGuard::wait_for_line`], but the program exiting first is an
    /// `Err` with its output (the caller may try again), not a failed test.
    pub fn wait_for_line_or_exit(&mut self, needle: &str) -> Result<String, String> {
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            let text = std::fs::read_to_string(&self.logs[0]).unwrap_or_default();
            if let Some(line) = text.lines().find(|l| l.contains(needle)) {
                return Ok(line.to_owned());
            }
            if self.child.try_wait().expect("polling the child").is_some() {
                return Err(self.output());
            }
            if Instant::now() > deadline {
                let name = self.name.clone();
                let output = self.stop_and_collect_output();
                panic!("{name} did not print {needle:?} within {READY_DEADLINE:?}\n{output}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// How many lines of the program's output so far contain `needle`.
    pub fn count_lines(&self, needle: &str) -> usize {
        std::fs::read_to_string(&self.logs[0])
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(needle))
            .count()
    }

    /// Kills the program (its whole group) and waits for it to be gone.
    pub fn kill(&mut self) {
        self.kill_group();
    }

    fn kill_group(&mut self) {
        // The child leads its own group (process_group(0)), so -pid is that group.
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: kill(2) with a negative pid signals the group we created.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }

    fn stop_and_collect_output(&mut self) -> String {
        self.kill_group();
        self.output()
    }

    /// The program's output and log files, for a failure message.
    pub fn output(&self) -> String {
        let mut text = String::new();
        for log in &self.logs {
            let contents = std::fs::read_to_string(log).unwrap_or_default();
            text.push_str(&format!("--- {}\n{contents}", log.display()));
        }
        text
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// A `redis-server` (Debian's package; Valkey works the same) on a free loopback
/// port, with no persistence (`--save ''`, `--appendonly no`) and its working folder
/// in a temp dir. It can be stopped and started again on the same port.
pub struct RedisServer {
    port: u16,
    process: Option<ChildGuard>,
    dir: tempfile::TempDir,
    starts: usize,
    tls: Option<TlsFiles>,
    /// More `redis-server` arguments, given on every start (`--requirepass x`).
    extra_args: Vec<String>,
    /// The password [`RedisServer::connection`] authenticates with, if any.
    password: Option<String>,
}

/// PEM files of a test certificate authority and a server certificate it signed for
/// 127.0.0.1 (made with the `openssl` command line tool).
pub struct TlsFiles {
    /// The CA certificate: what a client must trust.
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TlsFiles {
    /// Makes a CA and a server certificate for `127.0.0.1` in `dir`, valid a day.
    pub fn make(dir: &Path) -> Self {
        let openssl = require_program("openssl", "OPENSSL", "openssl");
        let run = |args: &[&str]| {
            let output = Command::new(&openssl)
                .args(args)
                .current_dir(dir)
                .output()
                .expect("running openssl");
            assert!(
                output.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        };
        std::fs::write(
            dir.join("server.ext"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        run(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=agent-pages test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ]);
        run(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ]);
        run(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ]);
        TlsFiles {
            ca: dir.join("ca.pem"),
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
        }
    }
}

impl RedisServer {
    /// Starts one and waits until it accepts connections.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// [`RedisServer::start`] with more `redis-server` arguments (kept for
    /// [`RedisServer::start_again`]), e.g. `["--requirepass", "old"]`.
    pub fn start_with(args: &[&str]) -> Self {
        let mut server = RedisServer {
            port: free_port(),
            process: None,
            dir: tempfile::tempdir().unwrap(),
            starts: 0,
            tls: None,
            extra_args: args.iter().map(|a| a.to_string()).collect(),
            password: None,
        };
        server.start_again();
        server
    }

    /// Starts one that speaks only TLS, with a certificate for 127.0.0.1 signed by a
    /// CA of its own ([`RedisServer::tls`]); clients need no certificate.
    pub fn start_tls() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tls = TlsFiles::make(dir.path());
        let mut server = RedisServer {
            port: free_port(),
            process: None,
            dir,
            starts: 0,
            tls: Some(tls),
            extra_args: Vec::new(),
            password: None,
        };
        server.start_again();
        server
    }

    /// The certificate files of a [`RedisServer::start_tls`] server.
    pub fn tls(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    /// The port it listens on (the same after a restart).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT/0` (`rediss://` for a TLS server).
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        format!("{scheme}://127.0.0.1:{}/0", self.port)
    }

    /// Kills it (SIGKILL: no goodbye to its clients, as in a crash).
    pub fn stop(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.kill();
        }
    }

    /// Starts it (again) on the same port, empty, and waits until it accepts
    /// connections.
    pub fn start_again(&mut self) {
        assert!(self.process.is_none(), "redis-server is already running");
        // A first start may find its port taken since `free_port` saw it free (by
        // another test's server or an outgoing connection): then it takes another.
        // A restart keeps its port, as the tests of a restart need.
        for attempt in 1.. {
            self.starts += 1;
            let name = format!("redis-server-{}", self.starts);
            let mut process = ChildGuard::spawn(&name, self.command(), self.dir.path());
            // Its own log line, not a connection to the port: another server on the
            // same port would accept that connection too.
            match process.wait_for_line_or_exit("Ready to accept connections") {
                Ok(_) => {
                    process.wait_for_port(self.port);
                    self.process = Some(process);
                    return;
                }
                Err(output)
                    if output.contains("Address already in use")
                        && self.starts == attempt
                        && attempt < 5 =>
                {
                    self.port = free_port();
                }
                Err(output) => panic!("{name} did not start\n{output}"),
            }
        }
    }

    /// The `redis-server` command line for the current port and settings.
    fn command(&self) -> Command {
        let binary = require_program("redis-server", "REDIS_SERVER", "redis-server");
        let mut command = Command::new(binary);
        match &self.tls {
            None => {
                command.args(["--port", &self.port.to_string()]);
            }
            Some(tls) => {
                command
                    .args(["--port", "0", "--tls-port", &self.port.to_string()])
                    .arg("--tls-cert-file")
                    .arg(&tls.cert)
                    .arg("--tls-key-file")
                    .arg(&tls.key)
                    .arg("--tls-ca-cert-file")
                    .arg(&tls.ca)
                    .args(["--tls-auth-clients", "no"]);
            }
        }
        command
            .args(["--bind", "127.0.0.1"])
            .args(["--save", ""])
            .args(["--appendonly", "no"])
            .args(["--daemonize", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.extra_args);
        command
    }

    /// The loopback address it listens on.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Makes [`RedisServer::connection`] (and what uses it) authenticate with
    /// `password` from now on.
    pub fn use_password(&mut self, password: &str) {
        self.password = Some(password.to_owned());
    }

    /// A plain connection, for reading what the service stored (not for a TLS
    /// server).
    pub fn connection(&self) -> redis::Connection {
        let url = match &self.password {
            Some(p) => self.url_with_password(p),
            None => self.url(),
        };
        redis::Client::open(url)
            .and_then(|c| c.get_connection())
            .expect("connecting to the test redis-server")
    }

    /// `redis://:PASSWORD@127.0.0.1:PORT/0`.
    pub fn url_with_password(&self, password: &str) -> String {
        format!("redis://:{password}@127.0.0.1:{}/0", self.port)
    }

    /// Runs one command as an administrator would (`CONFIG SET …`, `REPLICAOF …`),
    /// authenticated with `password` when given; panics on an error answer.
    pub fn admin(&self, password: Option<&str>, args: &[&str]) {
        let url = password.map_or_else(|| self.url(), |p| self.url_with_password(p));
        let mut connection = redis::Client::open(url)
            .and_then(|c| c.get_connection())
            .expect("connecting to the test redis-server");
        let mut command = redis::cmd(args[0]);
        for arg in &args[1..] {
            command.arg(*arg);
        }
        command
            .query::<redis::Value>(&mut connection)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    }

    /// `GET key` (`None` when the key does not exist).
    pub fn get(&self, key: &str) -> Option<String> {
        redis::cmd("GET")
            .arg(key)
            .query(&mut self.connection())
            .expect("GET")
    }

    /// The server's clock, unix seconds (`TIME`).
    pub fn time(&self) -> i64 {
        let (seconds, _micros): (i64, i64) = redis::cmd("TIME")
            .query(&mut self.connection())
            .expect("TIME");
        seconds
    }
}

/// A tmpfs of a given size mounted on a fresh temp folder, for tests of a full
/// disk; unmounted (lazily: the app may still hold its files) and removed on drop.
/// Mounting needs root (CI runs as root); [`Tmpfs::mount`] says why it could not.
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `bytes`, or says why not (not root, `mount` refused).
    pub fn mount(bytes: u64) -> Result<Self, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("mounting a tmpfs needs root (CI runs the tests as root)".into());
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("running mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs refused: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Self { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Changes its size (`mount -o remount,size=…`): space freed or taken at once.
    pub fn resize(&self, bytes: u64) {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,size={bytes}")])
            .arg(self.dir.path())
            .output()
            .expect("running mount");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Says on the test run's own stderr (past libtest's output capture, so it shows
/// in a passing run's log, CI's included) that `test` checked nothing here and why,
/// and adds the line to the file `AGENT_PAGES_SKIPS` names (when set), which
/// `.ci/run` counts beside its total. Under `CI` a skip is a failure: this panics
/// instead (Issue 31 §5). Only for what the machine cannot do (not root, no
/// immutable attribute), never for a program that is merely not installed: that
/// fails the test.
pub fn skipped(test: &str, why: &str) {
    use std::io::Write as _;
    if std::env::var_os("CI").is_some() {
        panic!("{test} would be skipped ({why}): under CI a skip is a failure");
    }
    let line = format!("SKIPPED {test}: {why}");
    // `eprintln!` is captured for passing tests; a write to the stream is not.
    let _ = writeln!(std::io::stderr().lock(), "{line}");
    if let Some(path) = std::env::var_os("AGENT_PAGES_SKIPS") {
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(file, "{line}");
        }
    }
}
