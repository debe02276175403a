//! How a search request ended: one [`Outcome`] variant per row of SPEC §5's outcome
//! matrix (plus the admission and budget-store rows), and the one table that says,
//! for each, its status, metric label, problem type, title and words. HTML, JSON,
//! the log event and `/metrics` all read this table; none chooses on its own.

use std::borrow::Cow;
use std::sync::Arc;

use actix_web::http::StatusCode;

use crate::budget::Budget;
use crate::faults::StorageAnswer;
use crate::search::cache::Entry;
use crate::search::corpus::Snapshot;

/// Where an answer came from: the LRU, a scoring this request led, or a scoring
/// another request led that this one joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    Hit,
    Miss,
    Join,
}

impl CacheStatus {
    /// The `X-Search-Cache` value and the JSON `cache` field.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheStatus::Hit => "hit",
            CacheStatus::Miss => "miss",
            CacheStatus::Join => "join",
        }
    }
}

/// How a search request ended.
pub enum Outcome {
    /// `q` missing or blank: 303 to `/`.
    Missing,
    /// `q` undecodable or repeated: 400, nothing to show in the form.
    Malformed(&'static str),
    /// Raw or normalized `q` over 64 chars: 400, form kept.
    TooLong { display: String },
    /// `page` is not a whole number from 1: 400, form kept.
    BadPage { display: String },
    /// Normalized under 2 chars: 200 with guidance, no scan.
    TooShort { display: String },
    /// `SEARCH_MAX_IN_FLIGHT` valid searches are already in flight: 503 with
    /// `Retry-After: 1`, before any budget is spent.
    Overloaded { display: String },
    /// The budget store could not be read or written (Redis down, a full disk):
    /// 503 with `Retry-After: 1`; never admitted unlimited.
    BudgetUnavailable { display: String },
    /// The page store could not be read (its WAL index unsafe to touch, I/O
    /// failing, damaged; PostgreSQL down, so the generation is unknown): 503 with
    /// `Retry-After: 5`, never an answer from a snapshot that may be stale; the
    /// budget was spent.
    StorageUnavailable { display: String },
    /// Window number `window` of the search budget is full: 429 with `Retry-After`.
    Refused {
        display: String,
        window: usize,
        retry_after: i64,
    },
    /// Cache miss with no free scorer: 503 with `Retry-After: 1`.
    Busy { display: String },
    /// Scoring panicked, or the database failed: 500.
    Failed { display: String },
    /// Scored or found in the cache: 200, showing page `page` (from 1; past the
    /// last page it shows no rows and says where the results end).
    Answered {
        display: String,
        page: usize,
        entry: Arc<Entry>,
        snapshot: Arc<Snapshot>,
        cache: CacheStatus,
    },
}

/// What the table says about one kind of outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutcomeKind {
    /// The metric label and log `outcome` (`429-…` gets the window name appended).
    pub label: &'static str,
    pub status: StatusCode,
    /// The RFC 9457 `type` of the JSON answer; `None` for answers that are not
    /// problems (303, short, 200).
    pub problem_type: Option<&'static str>,
    /// The page title and heading, and the problem `title`.
    pub title: &'static str,
    /// What the visitor is told (the refusal's words are built from its window).
    pub message: &'static str,
    /// The template's notice style: `short`, `invalid`, `rate_limited`, `busy`,
    /// `error` or `results`.
    pub notice: &'static str,
}

const fn row(
    label: &'static str,
    status: StatusCode,
    problem_type: Option<&'static str>,
    title: &'static str,
    message: &'static str,
    notice: &'static str,
) -> OutcomeKind {
    OutcomeKind {
        label,
        status,
        problem_type,
        title,
        message,
        notice,
    }
}

/// The 400 rows (a query that cannot be searched, the form kept) differ only by
/// their words.
const fn invalid(message: &'static str) -> OutcomeKind {
    row(
        "400",
        StatusCode::BAD_REQUEST,
        Some("/problems/invalid-query"),
        "Invalid search",
        message,
        "invalid",
    )
}

/// The two "a store cannot be used now" rows (budget store, page store) differ by
/// label, problem type and words.
const fn unavailable(
    label: &'static str,
    problem_type: &'static str,
    message: &'static str,
) -> OutcomeKind {
    row(
        label,
        StatusCode::SERVICE_UNAVAILABLE,
        Some(problem_type),
        "Search is unavailable",
        message,
        "busy",
    )
}

/// The two "no capacity now" rows (admission, scorer slots) differ only by label.
const fn busy(label: &'static str) -> OutcomeKind {
    row(
        label,
        StatusCode::SERVICE_UNAVAILABLE,
        Some("/problems/search-busy"),
        "Search is busy",
        "Search is busy right now.",
        "busy",
    )
}

/// `q` missing or blank.
pub const MISSING: OutcomeKind = row("303", StatusCode::SEE_OTHER, None, "Search", "", "invalid");
/// `q` undecodable or repeated.
pub const MALFORMED: OutcomeKind = invalid("This search could not be read.");
/// `q` over 64 chars, raw or normalized.
pub const TOO_LONG: OutcomeKind = invalid("Search text can be at most 64 characters.");
/// `page` is not a whole number from 1.
pub const BAD_PAGE: OutcomeKind = invalid("The page number must be a whole number from 1.");
/// Normalized under 2 chars.
pub const TOO_SHORT: OutcomeKind = row(
    "short",
    StatusCode::OK,
    None,
    "Search",
    "Enter at least 2 characters.",
    "short",
);
/// No admission permit left.
pub const OVERLOADED: OutcomeKind = busy("503-admission");
/// The budget store did not answer in time.
pub const BUDGET_UNAVAILABLE: OutcomeKind = unavailable(
    "503-budget",
    "/problems/budget-unavailable",
    "Search is briefly unavailable.",
);
/// The page store could not be read.
pub const STORAGE_UNAVAILABLE: OutcomeKind = unavailable(
    "503-storage",
    "/problems/storage-unavailable",
    "The pages cannot be read right now. Please try again in a few seconds.",
);
/// A window of the search budget is full.
pub const REFUSED: OutcomeKind = row(
    "429",
    StatusCode::TOO_MANY_REQUESTS,
    Some("/problems/rate-limited"),
    "Too many searches",
    "Too many searches.",
    "rate_limited",
);
/// A miss with every scorer slot taken.
pub const BUSY: OutcomeKind = busy("503-busy");
/// Scoring panicked, or the database failed.
pub const FAILED: OutcomeKind = row(
    "500",
    StatusCode::INTERNAL_SERVER_ERROR,
    Some("/problems/internal"),
    "Search failed",
    "Something went wrong with this search. Please try again.",
    "error",
);
/// Answered from the LRU.
pub const HIT: OutcomeKind = row("hit", StatusCode::OK, None, "Search", "", "results");
/// Answered by a scoring this request led.
pub const MISS: OutcomeKind = row("miss", StatusCode::OK, None, "Search", "", "results");
/// Answered by a scoring another request led.
pub const JOIN: OutcomeKind = row("join", StatusCode::OK, None, "Search", "", "results");

/// Every kind of outcome, in the order of the outcome matrix: what [`labels`] and
/// the metrics walk. A new row is named above, chosen in [`Outcome::kind`] and
/// listed here.
pub const KINDS: [OutcomeKind; 14] = [
    MISSING,
    MALFORMED,
    TOO_LONG,
    BAD_PAGE,
    TOO_SHORT,
    OVERLOADED,
    BUDGET_UNAVAILABLE,
    STORAGE_UNAVAILABLE,
    REFUSED,
    BUSY,
    FAILED,
    HIT,
    MISS,
    JOIN,
];

impl Outcome {
    /// The outcome of a storage fault's answer (`crate::faults`): the page
    /// store's busy or unavailable answers are [`Outcome::StorageUnavailable`], the
    /// budget's [`Outcome::BudgetUnavailable`], a bug [`Outcome::Failed`].
    pub fn of_fault(answer: StorageAnswer, display: String) -> Self {
        match answer {
            StorageAnswer::DatabaseBusy | StorageAnswer::StorageUnavailable => {
                Outcome::StorageUnavailable { display }
            }
            StorageAnswer::BudgetUnavailable => Outcome::BudgetUnavailable { display },
            StorageAnswer::Internal => Outcome::Failed { display },
        }
    }

    /// This outcome's row of the table, by name: the one place an outcome is
    /// classified.
    pub fn kind(&self) -> &'static OutcomeKind {
        match self {
            Outcome::Missing => &MISSING,
            Outcome::Malformed(_) => &MALFORMED,
            Outcome::TooLong { .. } => &TOO_LONG,
            Outcome::BadPage { .. } => &BAD_PAGE,
            Outcome::TooShort { .. } => &TOO_SHORT,
            Outcome::Overloaded { .. } => &OVERLOADED,
            Outcome::BudgetUnavailable { .. } => &BUDGET_UNAVAILABLE,
            Outcome::StorageUnavailable { .. } => &STORAGE_UNAVAILABLE,
            Outcome::Refused { .. } => &REFUSED,
            Outcome::Busy { .. } => &BUSY,
            Outcome::Failed { .. } => &FAILED,
            Outcome::Answered { cache, .. } => match cache {
                CacheStatus::Hit => &HIT,
                CacheStatus::Miss => &MISS,
                CacheStatus::Join => &JOIN,
            },
        }
    }

    /// The metric label and log `outcome`: the table's, with the refusing window's
    /// name on a 429 (`429-minute`).
    pub fn label(&self, budget: &Budget) -> Cow<'static, str> {
        match self {
            Outcome::Refused { window, .. } => {
                Cow::Owned(format!("429-{}", budget.windows[*window].name))
            }
            other => Cow::Borrowed(other.kind().label),
        }
    }

    /// Seconds for `Retry-After`, on the outcomes that have one.
    pub fn retry_after(&self) -> Option<i64> {
        match self {
            Outcome::Refused { retry_after, .. } => Some((*retry_after).max(1)),
            Outcome::Overloaded { .. }
            | Outcome::BudgetUnavailable { .. }
            | Outcome::Busy { .. } => Some(1),
            Outcome::StorageUnavailable { .. } => StorageAnswer::StorageUnavailable.retry_after(),
            _ => None,
        }
    }

    /// What the visitor is told: the table's words, or for a refusal which window is
    /// full and for how long (`Too many searches this hour: try again in 4 minutes
    /// 31 seconds.`, the wait in [`wait_words`]).
    pub fn message(&self, budget: &Budget) -> Cow<'static, str> {
        match self {
            Outcome::Refused {
                window,
                retry_after,
                ..
            } => Cow::Owned(format!(
                "Too many searches this {}: try again in {}.",
                budget.windows[*window].name,
                wait_words(*retry_after)
            )),
            Outcome::Malformed(why) => Cow::Owned(format!("This search could not be read: {why}.")),
            other => Cow::Borrowed(other.kind().message),
        }
    }

    /// The query as typed, for the form; empty when there is none to keep.
    pub fn display(&self) -> &str {
        match self {
            Outcome::Missing | Outcome::Malformed(_) => "",
            Outcome::TooLong { display }
            | Outcome::BadPage { display }
            | Outcome::TooShort { display }
            | Outcome::Overloaded { display }
            | Outcome::BudgetUnavailable { display }
            | Outcome::StorageUnavailable { display }
            | Outcome::Refused { display, .. }
            | Outcome::Busy { display }
            | Outcome::Failed { display }
            | Outcome::Answered { display, .. } => display,
        }
    }
}

/// A wait of `seconds` in words, as pages and problem details say it (and
/// `static/search.js` counts it down): seconds up to a minute (`1 second`,
/// `60 seconds`), past a minute whole minutes and the seconds left over
/// (`1 minute 1 second`, `4 minutes 31 seconds`, `2 minutes`).
pub fn wait_words(seconds: i64) -> String {
    let s = seconds.max(0);
    let unit = |n: i64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    if s <= 60 {
        return unit(s, "second", "seconds");
    }
    let (minutes, rest) = (s / 60, s % 60);
    if rest == 0 {
        unit(minutes, "minute", "minutes")
    } else {
        format!(
            "{} {}",
            unit(minutes, "minute", "minutes"),
            unit(rest, "second", "seconds")
        )
    }
}

/// Every metric label a search can end with under `budget`: the table's, with one
/// `429-<window>` per window of the search budget.
pub fn labels(budget: &Budget) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    for kind in &KINDS {
        if kind.label == "429" {
            labels.extend(budget.windows.iter().map(|w| format!("429-{}", w.name)));
        } else if !labels.iter().any(|l| l == kind.label) {
            labels.push(kind.label.to_owned());
        }
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_cover_every_window_and_no_label_twice() {
        let mut budget = Budget::search(20, 200);
        budget
            .windows
            .push(crate::budget::FixedWindow::new("day", 86_400, 1000));
        let labels = labels(&budget);
        for l in [
            "429-minute",
            "429-hour",
            "429-day",
            "503-busy",
            "hit",
            "400",
        ] {
            assert!(labels.iter().any(|x| x == l), "{l} missing from {labels:?}");
        }
        let mut unique = labels.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), labels.len());
    }

    #[test]
    fn waits_past_a_minute_read_in_minutes_and_seconds() {
        for (seconds, words) in [
            (1, "1 second"),
            (2, "2 seconds"),
            (60, "60 seconds"),
            (61, "1 minute 1 second"),
            (62, "1 minute 2 seconds"),
            (120, "2 minutes"),
            (121, "2 minutes 1 second"),
            (271, "4 minutes 31 seconds"),
            (3600, "60 minutes"),
        ] {
            assert_eq!(wait_words(seconds), words, "{seconds}");
        }
    }

    #[test]
    fn every_problem_answer_is_an_error_status_and_every_other_is_not() {
        for kind in &KINDS {
            assert_eq!(
                kind.problem_type.is_some(),
                kind.status.is_client_error() || kind.status.is_server_error(),
                "{kind:?}"
            );
        }
    }
}
