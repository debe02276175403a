//! The one error type of the agent API, over both faces (the HTTP routes and the
//! MCP tools), and its RFC 9457 problem document ([`ApiError::problem`]). Each kind
//! has a stable `type` (see [`ApiError::kind`], the only place that maps errors to
//! statuses); the cause of an internal error is logged, never sent. The HTTP face
//! answers it as a response ([`crate::http::problem`]), an MCP tool as a tool
//! error.

use actix_web::http::StatusCode;

use crate::domain::PageFieldError;
use crate::faults::{self, StorageAnswer, Store};
use crate::page_store::PageStoreError;
use crate::pin::PinError;

/// Why an API request failed. `Display` is the `detail` sent to the client, so it
/// never holds a PIN, a PIN hash or an internal cause.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A JSON field, query parameter or header broke its rule; `detail` names it.
    #[error("{detail}")]
    Validation { field: String, detail: String },
    /// The body is not JSON (syntax error, truncated, invalid UTF-8, empty).
    #[error("{detail}")]
    MalformedJson {
        field: Option<String>,
        detail: String,
    },
    /// A body was sent with a `Content-Type` other than JSON.
    #[error("Content-Type must be application/json")]
    UnsupportedMediaType,
    /// The body is over `limit` bytes (refused from `Content-Length` when given).
    #[error("the request body is over {limit} bytes")]
    PayloadTooLarge { limit: usize },
    /// The body did not arrive in full within `seconds`; the connection is closed.
    #[error("the request body did not arrive in full within {seconds} seconds")]
    BodyTimeout { seconds: u64 },
    /// `cap` request bodies are being received already; try again in a second.
    #[error(
        "the server is receiving {cap} request bodies already, its limit: try again in a second"
    )]
    TooManyOpenBodies { cap: usize },
    /// No page (or no API route) at this path; the detail says which.
    #[error("{0}")]
    NotFound(String),
    /// The route exists but not with this method; `allow` lists the ones it has.
    #[error("this route answers only {allow}")]
    MethodNotAllowed { allow: &'static str },
    /// `POST /api/pages` asked for a slug another page holds.
    #[error("the slug `{0}` is taken: choose another or leave slug out to derive a free one")]
    Conflict(String),
    /// A PIN-protected route without an `X-Page-Pin` header.
    #[error("this route needs the page's PIN in the X-Page-Pin header")]
    PinRequired,
    /// `X-Page-Pin` does not match the page's PIN.
    #[error("the X-Page-Pin header does not match this page's PIN")]
    WrongPin,
    /// The page was published without a PIN, so nobody can change it through the API.
    #[error("this page was published without a PIN and cannot be changed through the API")]
    PageLocked,
    /// This client had too many wrong PINs this hour; `retry_after` is in seconds.
    #[error("too many wrong PINs from this client: try again in {retry_after} seconds")]
    TooManyPinFailures { retry_after: i64 },
    /// This page took too many wrong PINs this hour, from all clients together: no
    /// PIN is checked for it (the right one neither) for `retry_after` seconds.
    #[error(
        "too many wrong PINs for this page: no PIN is checked for it for {retry_after} seconds"
    )]
    PageTooManyPinFailures { retry_after: i64 },
    /// This client's publish budget has a full window (`window`); `retry_after` is in
    /// seconds; `policy` and `state` are the `RateLimit-Policy` and `RateLimit` values.
    #[error(
        "too many page writes from this client this {window}: try again in {retry_after} seconds"
    )]
    PublishRateLimited {
        window: String,
        retry_after: i64,
        policy: actix_web::http::header::HeaderValue,
        state: String,
    },
    /// The budget store did not answer in time: try again in a second.
    #[error("the request budget cannot be checked right now: try again in a second")]
    BudgetUnavailable,
    /// Another process or connection held the database's write lock for longer
    /// than the busy timeout; retry in a second.
    #[error("the database is busy with another writer: try again in a second")]
    DatabaseBusy,
    /// The database file cannot be written now (read-only, gone or replaced, or
    /// an I/O error): nothing was written; retry later.
    #[error(
        "the page store cannot be written right now: nothing was saved; try again in a few seconds"
    )]
    StorageUnavailable,
    /// A conditional write (`If-Match`, the MCP tools' `expected_version`) found the
    /// page at version `current`, not the one expected: nothing was changed.
    #[error("the page is at version {current}, not the one this write expected: nothing was changed; read it again and retry")]
    VersionMismatch { current: i64 },
    /// An idempotency key (sent in `field`) came with another request within its
    /// day: nothing was done.
    #[error("this {field} was sent with another request in the last 24 hours: send a new key for a new request, or the same request to get its answer again")]
    IdempotencyKeyReused { field: &'static str },
    /// The first request of an idempotency key (sent in `field`) is still running.
    #[error("the first request with this {field} is still running: try again in a second to get its answer")]
    IdempotencyKeyInFlight { field: &'static str },
    /// The client holds `max` live idempotency keys; the oldest expires in
    /// `retry_after` seconds.
    #[error("this client holds {max} idempotency keys of the last 24 hours, the most it may: publish without {field}, or try again in {retry_after} seconds")]
    TooManyIdempotencyKeys {
        field: &'static str,
        max: i64,
        retry_after: i64,
    },
    /// Anything else: a database or worker failure. The cause is logged only.
    #[error("something went wrong on our side; please try again")]
    Internal(#[source] anyhow::Error),
}

/// `Retry-After` of [`ApiError::StorageUnavailable`], in seconds.
pub const STORAGE_RETRY_AFTER: i64 = crate::faults::STORAGE_RETRY_AFTER.as_secs() as i64;

/// One kind of problem: its status, its `type` and its `title`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    pub status: StatusCode,
    pub problem_type: &'static str,
    pub title: &'static str,
}

const fn kind(status: StatusCode, problem_type: &'static str, title: &'static str) -> Kind {
    Kind {
        status,
        problem_type,
        title,
    }
}

/// [`ApiError::Validation`].
pub const VALIDATION: Kind = kind(
    StatusCode::BAD_REQUEST,
    "/problems/validation",
    "Invalid field",
);
/// [`ApiError::MalformedJson`].
pub const MALFORMED_JSON: Kind = kind(
    StatusCode::BAD_REQUEST,
    "/problems/malformed-json",
    "Malformed JSON",
);
/// [`ApiError::UnsupportedMediaType`].
pub const UNSUPPORTED_MEDIA_TYPE: Kind = kind(
    StatusCode::UNSUPPORTED_MEDIA_TYPE,
    "/problems/unsupported-media-type",
    "Unsupported media type",
);
/// [`ApiError::PayloadTooLarge`].
pub const PAYLOAD_TOO_LARGE: Kind = kind(
    StatusCode::PAYLOAD_TOO_LARGE,
    "/problems/payload-too-large",
    "Payload too large",
);
/// [`ApiError::NotFound`].
pub const NOT_FOUND: Kind = kind(StatusCode::NOT_FOUND, "/problems/not-found", "Not found");
/// [`ApiError::MethodNotAllowed`].
pub const METHOD_NOT_ALLOWED: Kind = kind(
    StatusCode::METHOD_NOT_ALLOWED,
    "/problems/method-not-allowed",
    "Method not allowed",
);
/// [`ApiError::Conflict`].
pub const CONFLICT: Kind = kind(StatusCode::CONFLICT, "/problems/conflict", "Slug taken");
/// [`ApiError::PinRequired`].
pub const PIN_REQUIRED: Kind = kind(
    StatusCode::FORBIDDEN,
    "/problems/pin-required",
    "PIN required",
);
/// [`ApiError::WrongPin`].
pub const WRONG_PIN: Kind = kind(StatusCode::FORBIDDEN, "/problems/wrong-pin", "Wrong PIN");
/// [`ApiError::PageLocked`].
pub const PAGE_LOCKED: Kind = kind(
    StatusCode::FORBIDDEN,
    "/problems/page-locked",
    "Page has no PIN",
);
/// [`ApiError::TooManyPinFailures`] (the client's bound) and
/// [`ApiError::PageTooManyPinFailures`] (the page's).
pub const TOO_MANY_PIN_FAILURES: Kind = kind(
    StatusCode::TOO_MANY_REQUESTS,
    "/problems/too-many-pin-failures",
    "Too many wrong PINs",
);
/// [`ApiError::PublishRateLimited`].
pub const PUBLISH_RATE_LIMITED: Kind = kind(
    StatusCode::TOO_MANY_REQUESTS,
    "/problems/publish-rate-limited",
    "Too many page writes",
);
/// [`ApiError::BudgetUnavailable`].
pub const BUDGET_UNAVAILABLE: Kind = kind(
    StatusCode::SERVICE_UNAVAILABLE,
    "/problems/budget-unavailable",
    "Budget unavailable",
);
/// [`ApiError::VersionMismatch`].
pub const VERSION_MISMATCH: Kind = kind(
    StatusCode::PRECONDITION_FAILED,
    "/problems/version-mismatch",
    "Version mismatch",
);
/// [`ApiError::IdempotencyKeyReused`].
pub const IDEMPOTENCY_KEY_REUSED: Kind = kind(
    StatusCode::UNPROCESSABLE_ENTITY,
    "/problems/idempotency-key-reused",
    "Idempotency key reused",
);
/// [`ApiError::IdempotencyKeyInFlight`].
pub const IDEMPOTENCY_KEY_IN_FLIGHT: Kind = kind(
    StatusCode::CONFLICT,
    "/problems/idempotency-key-in-flight",
    "Idempotent request in flight",
);
/// [`ApiError::TooManyIdempotencyKeys`].
pub const TOO_MANY_IDEMPOTENCY_KEYS: Kind = kind(
    StatusCode::TOO_MANY_REQUESTS,
    "/problems/too-many-idempotency-keys",
    "Too many idempotency keys",
);
/// [`ApiError::Internal`].
pub const INTERNAL: Kind = kind(
    StatusCode::INTERNAL_SERVER_ERROR,
    "/problems/internal",
    "Internal error",
);
/// [`ApiError::BodyTimeout`].
pub const REQUEST_TIMEOUT: Kind = kind(
    StatusCode::REQUEST_TIMEOUT,
    "/problems/request-timeout",
    "Request body too slow",
);
/// [`ApiError::TooManyOpenBodies`].
pub const TOO_MANY_OPEN_BODIES: Kind = kind(
    StatusCode::SERVICE_UNAVAILABLE,
    "/problems/too-many-open-bodies",
    "Too many request bodies at once",
);
/// [`ApiError::DatabaseBusy`].
pub const DATABASE_BUSY: Kind = kind(
    StatusCode::SERVICE_UNAVAILABLE,
    "/problems/database-busy",
    "Database busy",
);
/// [`ApiError::StorageUnavailable`].
pub const STORAGE_UNAVAILABLE: Kind = kind(
    StatusCode::SERVICE_UNAVAILABLE,
    "/problems/storage-unavailable",
    "Storage unavailable",
);

/// Every kind the API answers with, in the order the docs list them. A new kind
/// is named above, chosen in [`ApiError::kind`] and listed here.
pub const KINDS: [Kind; 22] = [
    VALIDATION,
    MALFORMED_JSON,
    UNSUPPORTED_MEDIA_TYPE,
    PAYLOAD_TOO_LARGE,
    NOT_FOUND,
    METHOD_NOT_ALLOWED,
    CONFLICT,
    PIN_REQUIRED,
    WRONG_PIN,
    PAGE_LOCKED,
    TOO_MANY_PIN_FAILURES,
    PUBLISH_RATE_LIMITED,
    BUDGET_UNAVAILABLE,
    INTERNAL,
    REQUEST_TIMEOUT,
    TOO_MANY_OPEN_BODIES,
    DATABASE_BUSY,
    STORAGE_UNAVAILABLE,
    VERSION_MISMATCH,
    IDEMPOTENCY_KEY_REUSED,
    IDEMPOTENCY_KEY_IN_FLIGHT,
    TOO_MANY_IDEMPOTENCY_KEYS,
];

impl ApiError {
    /// Status, `type` and `title` of this error, by the kind's name: the one place
    /// they are decided.
    pub fn kind(&self) -> Kind {
        match self {
            ApiError::Validation { .. } => VALIDATION,
            ApiError::MalformedJson { .. } => MALFORMED_JSON,
            ApiError::UnsupportedMediaType => UNSUPPORTED_MEDIA_TYPE,
            ApiError::PayloadTooLarge { .. } => PAYLOAD_TOO_LARGE,
            ApiError::NotFound(_) => NOT_FOUND,
            ApiError::MethodNotAllowed { .. } => METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => CONFLICT,
            ApiError::PinRequired => PIN_REQUIRED,
            ApiError::WrongPin => WRONG_PIN,
            ApiError::PageLocked => PAGE_LOCKED,
            ApiError::TooManyPinFailures { .. } | ApiError::PageTooManyPinFailures { .. } => {
                TOO_MANY_PIN_FAILURES
            }
            ApiError::PublishRateLimited { .. } => PUBLISH_RATE_LIMITED,
            ApiError::BudgetUnavailable => BUDGET_UNAVAILABLE,
            ApiError::Internal(_) => INTERNAL,
            ApiError::BodyTimeout { .. } => REQUEST_TIMEOUT,
            ApiError::TooManyOpenBodies { .. } => TOO_MANY_OPEN_BODIES,
            ApiError::DatabaseBusy => DATABASE_BUSY,
            ApiError::StorageUnavailable => STORAGE_UNAVAILABLE,
            ApiError::VersionMismatch { .. } => VERSION_MISMATCH,
            ApiError::IdempotencyKeyReused { .. } => IDEMPOTENCY_KEY_REUSED,
            ApiError::IdempotencyKeyInFlight { .. } => IDEMPOTENCY_KEY_IN_FLIGHT,
            ApiError::TooManyIdempotencyKeys { .. } => TOO_MANY_IDEMPOTENCY_KEYS,
        }
    }

    /// A validation error on `field`, with `detail` naming it.
    pub fn validation(field: &str, detail: impl Into<String>) -> Self {
        ApiError::Validation {
            field: field.to_owned(),
            detail: detail.into(),
        }
    }

    /// The not-found answer for a page slug.
    pub fn no_page(slug: &str) -> Self {
        ApiError::NotFound(format!("no page has the slug `{slug}`"))
    }

    /// The problem document of this error (what the API sends, and what an MCP tool
    /// error carries); the cause of an internal error is logged here, never put in it.
    pub fn problem(&self) -> Problem {
        if let ApiError::Internal(cause) = self {
            tracing::error!(error = format!("{cause:#}"), "api request failed");
        }
        let kind = self.kind();
        let retry_after = match self {
            ApiError::TooManyPinFailures { retry_after }
            | ApiError::PageTooManyPinFailures { retry_after }
            | ApiError::PublishRateLimited { retry_after, .. }
            | ApiError::TooManyIdempotencyKeys { retry_after, .. } => Some((*retry_after).max(1)),
            ApiError::BudgetUnavailable
            | ApiError::IdempotencyKeyInFlight { .. }
            | ApiError::TooManyOpenBodies { .. }
            | ApiError::DatabaseBusy => Some(1),
            ApiError::StorageUnavailable => Some(STORAGE_RETRY_AFTER),
            _ => None,
        };
        Problem {
            field: self.field().map(str::to_owned),
            retry_after,
            current_version: match self {
                ApiError::VersionMismatch { current } => Some(*current),
                _ => None,
            },
            ..Problem::new(kind.status, kind.problem_type, kind.title, self.to_string())
        }
    }

    fn field(&self) -> Option<&str> {
        match self {
            ApiError::Validation { field, .. } => Some(field),
            ApiError::MalformedJson { field, .. } => field.as_deref(),
            ApiError::IdempotencyKeyReused { field }
            | ApiError::IdempotencyKeyInFlight { field }
            | ApiError::TooManyIdempotencyKeys { field, .. } => Some(field),
            _ => None,
        }
    }
}

impl From<crate::page_store::VersionMismatch> for ApiError {
    fn from(e: crate::page_store::VersionMismatch) -> Self {
        ApiError::VersionMismatch { current: e.current }
    }
}

impl From<PageFieldError> for ApiError {
    fn from(e: PageFieldError) -> Self {
        ApiError::validation(e.field(), e.to_string())
    }
}

impl From<PinError> for ApiError {
    fn from(e: PinError) -> Self {
        match e {
            PinError::Length | PinError::Unsendable => ApiError::validation("pin", e.to_string()),
            PinError::Hash(_) => ApiError::Internal(e.into()),
        }
    }
}

impl From<StorageAnswer> for ApiError {
    /// The API's problem for a storage fault's answer (`crate::faults`).
    fn from(answer: StorageAnswer) -> Self {
        match answer {
            StorageAnswer::DatabaseBusy => ApiError::DatabaseBusy,
            StorageAnswer::StorageUnavailable => ApiError::StorageUnavailable,
            StorageAnswer::BudgetUnavailable => ApiError::BudgetUnavailable,
            StorageAnswer::Internal => ApiError::Internal(anyhow::anyhow!("storage bug")),
        }
    }
}

impl From<PageStoreError> for ApiError {
    /// As [`faults::TABLE`] says for the page store: busy is 503 to retry in a
    /// second, storage that cannot keep a write 503 to retry in a few, only a bug
    /// 500.
    fn from(e: PageStoreError) -> Self {
        match faults::answer(Store::Pages, e.fault()) {
            StorageAnswer::Internal => ApiError::Internal(e.into()),
            answer => {
                // Unavailability is logged once per incident by the page store.
                if !matches!(e, PageStoreError::Unavailable(_)) {
                    tracing::warn!(error = %e, "page store fault: answered 503");
                }
                answer.into()
            }
        }
    }
}

pub use super::problem::Problem;
