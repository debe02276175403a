//! Logging: a `tracing` subscriber (text or JSON lines) and the request root span.
//!
//! Privacy: the root span records the request *path* only, never the query string,
//! because `/search?q=…` carries what a visitor typed. Nothing else in the crate logs
//! a query either (see `routes::search`).

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::Error;
use tracing::Span;
use tracing_actix_web::{DefaultRootSpanBuilder, RootSpanBuilder};
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
/// [`filter`]'s limits.
pub fn env_filter() -> EnvFilter {
    let directives = std::env::var("RUST_LOG").unwrap_or_default();
    filter(if directives.trim().is_empty() {
        "info"
    } else {
        &directives
    })
}

/// Libraries that log what they carry below `info`, held at `info` whatever the
/// directives say: tokio-postgres logs every statement's parameters at `debug`
/// (page bodies, PIN hashes on the way in), and those never reach a log.
const HELD_AT_INFO: &[&str] = &["tokio_postgres", "postgres"];

/// An `EnvFilter` of `directives` (`RUST_LOG` syntax; `info` when they do not
/// parse), with the libraries of [`HELD_AT_INFO`] never below `info`.
pub fn filter(directives: &str) -> EnvFilter {
    let mut filter = EnvFilter::try_new(directives).unwrap_or_else(|_| EnvFilter::new("info"));
    for target in HELD_AT_INFO {
        filter = filter.add_directive(format!("{target}=info").parse().expect("a valid directive"));
    }
    filter
}

/// Installs the global subscriber writing to `writer` through `filter`.
/// Errors if a global subscriber is already set.
pub fn init<W>(format: LogFormat, filter: EnvFilter, writer: W) -> Result<(), String>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    result.map_err(|e| e.to_string())
}

/// The root span of each request: method, path (no query string), route, status.
pub struct PathOnlyRootSpan;

impl RootSpanBuilder for PathOnlyRootSpan {
    fn on_request_start(request: &ServiceRequest) -> Span {
        tracing::info_span!(
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

    fn on_request_end<B: MessageBody>(span: Span, outcome: &Result<ServiceResponse<B>, Error>) {
        DefaultRootSpanBuilder::on_request_end(span, outcome);
    }
}
