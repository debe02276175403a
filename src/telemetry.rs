//! Logging: a `tracing` subscriber (text or JSON lines) and the request root span.
//!
//! The server's lines leave the thread that logs them through a bounded queue to
//! a writer thread of their own ([`init_off_thread`]): a request thread formats its
//! line and hands it over, it never waits for stderr (a terminal, a pipe into a
//! container runtime's log driver). The queue holds [`LOG_QUEUE_LINES`]; should the
//! writer fall that far behind, new lines are dropped, not waited for, and counted
//! ([`lines_dropped`], exported as `agent_pages_log_lines_dropped_total`). At a
//! normal rate none is dropped, and the lines still queued when the process stops
//! are written before it exits.
//!
//! Privacy: the root span records the request *path* only, never the query string,
//! because `/search?q=…` carries what a visitor typed. Nothing else in the crate logs
//! a query either (see `routes::search`).

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::{Error, HttpMessage as _};
use std::sync::OnceLock;

use tracing::Span;
use tracing_actix_web::{DefaultRootSpanBuilder, RootSpanBuilder};
use tracing_appender::non_blocking::{ErrorCounter, NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

impl LogFormat {
    /// Reads `AGENT_PAGES_LOG_FORMAT` (`text`, the default, or `json`).
    ///
    /// Errors: any other value, as the one-line message naming the variable.
    pub fn from_env() -> Result<Self, String> {
        match std::env::var("AGENT_PAGES_LOG_FORMAT").as_deref() {
            Err(_) | Ok("") | Ok("text") => Ok(Self::Text),
            Ok("json") => Ok(Self::Json),
            Ok(other) => Err(format!(
                "AGENT_PAGES_LOG_FORMAT: must be `text` or `json`, got {other:?}"
            )),
        }
    }
}

/// The filter from `RUST_LOG`, `info` when unset or unparseable, with
/// [`capped`]'s limits.
pub fn env_filter() -> EnvFilter {
    capped(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
}

/// `filter` with the libraries that log what they carry below `info` held at
/// `info`, whatever `RUST_LOG` says ([`HELD_AT_INFO`]).
pub fn capped(filter: EnvFilter) -> EnvFilter {
    HELD_AT_INFO.iter().fold(filter, |filter, target| {
        filter.add_directive(format!("{target}=info").parse().expect("a valid directive"))
    })
}

/// Held at `info`: the MCP SDK logs whole requests at debug (tool arguments: PINs,
/// queries); tokio-postgres (and its blocking wrapper) every statement's parameters
/// (page bodies, PIN hashes on the way in). Neither may ever be written.
pub const HELD_AT_INFO: &[&str] = &["rmcp", "tokio_postgres", "postgres"];

/// Installs the global subscriber writing to `writer` through `filter`, without
/// colours. Errors if a global subscriber is already set.
pub fn init<W>(format: LogFormat, filter: EnvFilter, writer: W) -> Result<(), String>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    install(format, filter, writer, false)
}

/// [`init`], with colours when `ansi` (only ever for a terminal: escape codes
/// in a file or a container's log are noise).
fn install<W>(format: LogFormat, filter: EnvFilter, writer: W, ansi: bool) -> Result<(), String>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(writer);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    result.map_err(|e| e.to_string())
}

/// Log lines the queue to the writer thread holds (about 300 bytes each, so 5 MB
/// at most): half a second of lines at 30,000 searches a second.
pub const LOG_QUEUE_LINES: usize = 16_384;

/// The dropped-lines count of the writer [`init_off_thread`] installed.
static DROPPED: OnceLock<ErrorCounter> = OnceLock::new();

/// Installs the global subscriber writing to stderr from a thread of its own,
/// through a queue of [`LOG_QUEUE_LINES`] (see the module docs). Keep the guard
/// until the process ends: dropping it writes the lines still queued (waiting a
/// second at most).
///
/// Errors if a global subscriber is already set.
pub fn init_off_thread(format: LogFormat, filter: EnvFilter) -> Result<WorkerGuard, String> {
    let stderr = Batches(std::io::BufWriter::new(std::io::stderr()));
    let (writer, guard) = off_thread(stderr, LOG_QUEUE_LINES);
    let _ = DROPPED.set(writer.error_counter());
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    install(format, filter, writer, ansi)?;
    Ok(guard)
}

/// A writer that hands each line to a thread writing them to `inner`, through a
/// queue of `lines`; a line that finds the queue full is dropped and counted
/// (`NonBlocking::error_counter`), never waited for.
fn off_thread<W: std::io::Write + Send + 'static>(
    inner: W,
    lines: usize,
) -> (tracing_appender::non_blocking::NonBlocking, WorkerGuard) {
    NonBlockingBuilder::default()
        .buffered_lines_limit(lines)
        .lossy(true)
        .thread_name("agent-pages-log")
        .finish(inner)
}

/// How long the writer thread rests after writing a batch of lines, so that the
/// next lines gather in the queue meanwhile: a line reaches stderr at most this
/// much later, and a request thread handing one over never has to wake the writer
/// (under load, a wake-up per line cost more than writing it).
pub const LOG_BATCH_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

/// `W` buffered, written once per batch: the writer thread flushes after each batch
/// it took off the queue, and then rests [`LOG_BATCH_PAUSE`].
struct Batches<W: std::io::Write>(W);

impl<W: std::io::Write> std::io::Write for Batches<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()?;
        std::thread::sleep(LOG_BATCH_PAUSE);
        Ok(())
    }
}

/// Log lines dropped since start because the queue to the writer thread was full
/// (0 when [`init_off_thread`] was not used).
pub fn lines_dropped() -> u64 {
    DROPPED.get().map_or(0, |c| c.dropped_lines() as u64)
}

/// The root span of each request: method, path (no query string), route, status.
///
/// At `debug`, not `info`: at the default level every search writes an event of
/// its own that says what the span would (outcome, status, latency), and making
/// the span (its fields formatted for the log as the request starts and ends)
/// cost about 6 µs of a 45 µs cache hit on the reference machine
/// (docs/performance.md). `RUST_LOG=debug` puts every line in its request again.
pub struct PathOnlyRootSpan;

/// When a request reached the root span (a request extension), for
/// `agent_pages_http_request_duration_seconds`.
struct RequestStarted(std::time::Instant);

impl RootSpanBuilder for PathOnlyRootSpan {
    fn on_request_start(request: &ServiceRequest) -> Span {
        request
            .extensions_mut()
            .insert(RequestStarted(std::time::Instant::now()));
        tracing::debug_span!(
            "HTTP request",
            http.method = %request.method(),
            http.route = request.match_pattern().unwrap_or_default(),
            http.target = request.path(),
            http.status_code = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            exception.message = tracing::field::Empty,
            exception.details = tracing::field::Empty,
        )
    }

    /// Also counts the answer in the request-duration histogram
    /// ([`crate::metrics::Metrics::observe_request`]: route family and status class,
    /// timed from [`Self::on_request_start`] to the answer's head), when the app
    /// has the metrics as app data. An `Err` outcome carries no request and is not
    /// counted: handlers' errors are answers by the time they get here.
    fn on_request_end<B: MessageBody>(span: Span, outcome: &Result<ServiceResponse<B>, Error>) {
        if let Ok(response) = outcome {
            let request = response.request();
            let started = request.extensions().get::<RequestStarted>().map(|s| s.0);
            let metrics = request.app_data::<actix_web::web::Data<crate::metrics::Metrics>>();
            if let (Some(started), Some(metrics)) = (started, metrics) {
                metrics.observe_request(
                    request.path(),
                    response.status().as_u16(),
                    started.elapsed(),
                );
            }
        }
        DefaultRootSpanBuilder::on_request_end(span, outcome);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn the_mcp_sdk_never_logs_below_info_whatever_the_filter_says() {
        for asked in ["trace", "debug,rmcp=trace", "rmcp=debug,debug"] {
            let written = Arc::new(Mutex::new(Vec::<u8>::new()));
            let sink = written.clone();
            let subscriber = tracing_subscriber::fmt()
                .with_env_filter(capped(EnvFilter::new(asked)))
                .with_writer(move || Sink(sink.clone()))
                .finish();
            tracing::subscriber::with_default(subscriber, || {
                tracing::debug!(target: "rmcp::service", "received request: secret-pin");
                tracing::info!(target: "rmcp::service", "serve finished");
                tracing::debug!(target: "agent_pages::x", "ours at debug");
            });
            let text = String::from_utf8_lossy(&written.lock().unwrap()).into_owned();
            assert!(!text.contains("secret-pin"), "{asked}: {text}");
            assert!(text.contains("serve finished"), "{asked}: {text}");
            assert!(text.contains("ours at debug"), "{asked}: {text}");
        }
    }

    #[test]
    fn a_full_log_queue_drops_new_lines_and_counts_them_instead_of_waiting() {
        use std::io::Write as _;
        // The writer thread takes the first line and stays in its write until the
        // test lets go: the queue (4 lines) fills, and the rest must be dropped
        // at once, not waited for (that wait would hang this test).
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (writer, guard) = off_thread(Stuck(held), 4);
        for _ in 0..50 {
            writer.make_writer().write_all(b"a line\n").unwrap();
        }
        // 1 taken by the writer thread (or not yet), 4 queued: 45 or 46 dropped.
        let dropped = writer.error_counter().dropped_lines();
        assert!((45..=46).contains(&dropped), "{dropped}");
        drop(release);
        drop(guard);
    }

    /// A writer whose every write waits until its sender is dropped.
    struct Stuck(std::sync::mpsc::Receiver<()>);

    impl std::io::Write for Stuck {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _ = self.0.recv();
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
