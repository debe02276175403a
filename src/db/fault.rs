//! What a storage error means for the request that met it, whichever database
//! (pages or budget counters) it came from: one [`Fault`] class per way to answer
//! it, and [`SQLITE_CODES`], the one table that gives each of SQLite's result codes
//! its class. How each class is answered, route by route, is
//! `crate::faults`' table.

use rusqlite::ErrorCode;

/// How a storage error is to be answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Another writer held the lock past the busy timeout, or no pooled connection
    /// was free in time: nothing is wrong with the storage; retry in a second.
    Busy,
    /// The storage cannot keep a write (or serve a read) now: the disk or a quota
    /// is full, the file is not writable or its WAL index cannot be touched, its
    /// I/O failed, it is damaged, or SQLite ran out of memory. Nothing was written;
    /// retry in a few seconds, and readiness fails meanwhile.
    Unavailable,
    /// Our own mistake (bad SQL, a constraint we should have checked, a type
    /// mismatch, API misuse, a panic): 500, and the cause goes to the log.
    Bug,
}

/// SQLite's primary result codes that are not [`Fault::Bug`], with their class
/// and a few words for logs and `/readyz`. A code not listed (`SQLITE_ERROR`,
/// `CONSTRAINT`, `MISMATCH`, `MISUSE`, `RANGE`, `SCHEMA`, …) is a bug.
pub const SQLITE_CODES: [(ErrorCode, Fault, &str); 13] = [
    (ErrorCode::DatabaseBusy, Fault::Busy, "busy"),
    (ErrorCode::DatabaseLocked, Fault::Busy, "locked"),
    (
        ErrorCode::FileLockingProtocolFailed,
        Fault::Busy,
        "in a lock race",
    ),
    (ErrorCode::DiskFull, Fault::Unavailable, "full"),
    (ErrorCode::ReadOnly, Fault::Unavailable, "read-only"),
    (
        ErrorCode::PermissionDenied,
        Fault::Unavailable,
        "not permitted",
    ),
    (
        ErrorCode::SystemIoFailure,
        Fault::Unavailable,
        "failing I/O",
    ),
    (ErrorCode::CannotOpen, Fault::Unavailable, "not openable"),
    (
        ErrorCode::NoLargeFileSupport,
        Fault::Unavailable,
        "too large",
    ),
    (ErrorCode::DatabaseCorrupt, Fault::Unavailable, "damaged"),
    (
        ErrorCode::NotADatabase,
        Fault::Unavailable,
        "not a database",
    ),
    (ErrorCode::OutOfMemory, Fault::Unavailable, "out of memory"),
    (
        ErrorCode::AuthorizationForStatementDenied,
        Fault::Unavailable,
        "not authorized",
    ),
];

impl Fault {
    /// The class of a rusqlite error, from [`SQLITE_CODES`]; an error that is not
    /// SQLite's own (a conversion, no rows) is a bug.
    pub fn of_sqlite(e: &rusqlite::Error) -> Fault {
        sqlite_row(e).map_or(Fault::Bug, |(_, fault, _)| fault)
    }

    /// Whether it is [`Fault::Bug`].
    pub fn is_bug(self) -> bool {
        self == Fault::Bug
    }
}

/// A few words for what SQLite reported (`full`, `read-only`, …), or `None` for a
/// bug.
pub fn sqlite_words(e: &rusqlite::Error) -> Option<&'static str> {
    sqlite_row(e).map(|(_, _, words)| words)
}

fn sqlite_row(e: &rusqlite::Error) -> Option<(ErrorCode, Fault, &'static str)> {
    let code = e.sqlite_error_code()?;
    SQLITE_CODES.iter().copied().find(|(c, _, _)| *c == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(code: std::ffi::c_int) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn disk_full_io_and_damage_are_unavailable_locks_busy_and_sql_errors_bugs() {
        use rusqlite::ffi;
        for code in [
            ffi::SQLITE_FULL,
            ffi::SQLITE_IOERR_WRITE,
            ffi::SQLITE_IOERR_SHMSIZE,
            ffi::SQLITE_READONLY,
            ffi::SQLITE_CANTOPEN,
            ffi::SQLITE_CORRUPT,
            ffi::SQLITE_NOMEM,
        ] {
            assert_eq!(
                Fault::of_sqlite(&sqlite(code)),
                Fault::Unavailable,
                "{code}"
            );
        }
        for code in [
            ffi::SQLITE_BUSY,
            ffi::SQLITE_LOCKED,
            ffi::SQLITE_BUSY_SNAPSHOT,
        ] {
            assert_eq!(Fault::of_sqlite(&sqlite(code)), Fault::Busy, "{code}");
        }
        for code in [
            ffi::SQLITE_ERROR,
            ffi::SQLITE_CONSTRAINT,
            ffi::SQLITE_MISUSE,
        ] {
            assert_eq!(Fault::of_sqlite(&sqlite(code)), Fault::Bug, "{code}");
        }
        assert_eq!(
            Fault::of_sqlite(&rusqlite::Error::QueryReturnedNoRows),
            Fault::Bug
        );
        assert_eq!(sqlite_words(&sqlite(ffi::SQLITE_FULL)), Some("full"));
    }
}
