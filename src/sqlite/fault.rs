//! What a SQLite error means for the request that met it, whichever database
//! (pages or budget counters) it came from: [`SQLITE_CODES`], the one table that
//! gives each of SQLite's result codes its class ([`Fault`], the classes every
//! store maps into: `crate::faults`, which also says how each is answered).

use rusqlite::ErrorCode;

use crate::faults::Fault;

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

/// The class of a rusqlite error, from [`SQLITE_CODES`]; an error that is not
/// SQLite's own (a conversion, no rows) is a bug.
pub fn class(e: &rusqlite::Error) -> Fault {
    sqlite_row(e).map_or(Fault::Bug, |(_, fault, _)| fault)
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
            assert_eq!(class(&sqlite(code)), Fault::Unavailable, "{code}");
        }
        for code in [
            ffi::SQLITE_BUSY,
            ffi::SQLITE_LOCKED,
            ffi::SQLITE_BUSY_SNAPSHOT,
        ] {
            assert_eq!(class(&sqlite(code)), Fault::Busy, "{code}");
        }
        for code in [
            ffi::SQLITE_ERROR,
            ffi::SQLITE_CONSTRAINT,
            ffi::SQLITE_MISUSE,
        ] {
            assert_eq!(class(&sqlite(code)), Fault::Bug, "{code}");
        }
        assert_eq!(class(&rusqlite::Error::QueryReturnedNoRows), Fault::Bug);
        assert_eq!(sqlite_words(&sqlite(ffi::SQLITE_FULL)), Some("full"));
    }
}
