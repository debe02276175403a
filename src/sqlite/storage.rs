//! Can the database file we have open still keep a write, and can SQLite touch its
//! files without the kernel killing the process?
//!
//! - A write acknowledged 201/200 must never be lost, and SQLite happily keeps
//!   writing into a file that was deleted (`rm -rf data/`) or replaced by another
//!   one: those writes vanish at the next start. So the file's identity (device and
//!   inode) is captured when the server opens it and compared before and after
//!   every write, and `/readyz` checks it too.
//! - SQLite maps the WAL index (`<file>-shm`) into memory with `mmap` and writes
//!   into it on every transaction, reads included. When that file becomes
//!   immutable (`chattr +i`), ext4 refuses the write fault of a page the kernel has
//!   written back with `SIGBUS`, and a mapped page past the end of a truncated file
//!   raises `SIGBUS` too: the process dies, with no error to answer. SQLite cannot
//!   turn that into an error, so [`Storage::check_mapped`] looks first (one
//!   `statx`, about a microsecond) before every database call, and refuses it while
//!   the WAL index is immutable, append-only or shorter than it was.
//!
//! Nothing here opens a database file. Closing any descriptor of a file releases
//! every POSIX lock the process holds on it, SQLite's included (SQLite's documented
//! way to corrupt a database): once this process's shared lock on the database was
//! gone, another process closing its last connection took the exclusive lock,
//! checkpointed and deleted the WAL this process still wrote into, and every write
//! acknowledged after that was lost. Writability is asked with `faccessat(2)`,
//! attributes with `statx(2)`, space with `statvfs(2)`: all by path.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Free bytes a database's filesystem must have for readiness: room for the
/// largest write (a 300 KiB body) in the WAL and again in the database file at
/// the next checkpoint, with index pages and slack. Writes are not refused below
/// it: SQLite says when one cannot be kept.
pub const MIN_FREE_BYTES: u64 = 1 << 20;

/// The database file the server opened: its path and identity at that moment,
/// and what was seen of its WAL index.
#[derive(Debug)]
pub struct Storage {
    path: PathBuf,
    dev: u64,
    ino: u64,
    wal: PathBuf,
    wal_index: PathBuf,
    /// `(dev, ino, largest size)` of the WAL index once it was first seen (the
    /// file this process has mapped).
    wal_index_seen: Mutex<Option<(u64, u64, u64)>>,
}

/// Why the files at the configured path cannot take a write (or, for the WAL
/// index, any database call) now. The messages name the path, for logs; answers
/// show [`StorageFault::short`] at most.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageFault {
    #[error("the database file {0} is gone")]
    Missing(String),
    #[error("the database file {0} is another file than the one open (replaced or moved)")]
    Replaced(String),
    #[error("the database file {path} is not writable: {reason}")]
    NotWritable { path: String, reason: String },
    /// The `-shm` file SQLite maps into memory cannot be touched safely.
    #[error("the WAL index {path} is {reason}: no database call touches it meanwhile")]
    WalIndex { path: String, reason: &'static str },
}

impl StorageFault {
    /// A few words without the path, for answers: `gone`, `replaced`,
    /// `not writable`, `immutable`, …
    pub fn short(&self) -> &'static str {
        match self {
            StorageFault::Missing(_) => "gone",
            StorageFault::Replaced(_) => "replaced",
            StorageFault::NotWritable { .. } => "not writable",
            StorageFault::WalIndex { reason, .. } => reason,
        }
    }
}

impl Storage {
    /// Captures the identity of `path`, which must exist (open it first).
    ///
    /// Errors: the file's metadata cannot be read.
    pub fn capture(path: &Path) -> std::io::Result<Self> {
        let meta = std::fs::metadata(path)?;
        let beside = |suffix: &str| {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            PathBuf::from(name)
        };
        let storage = Self {
            path: path.to_owned(),
            dev: meta.dev(),
            ino: meta.ino(),
            wal: beside("-wal"),
            wal_index: beside("-shm"),
            wal_index_seen: Mutex::new(None),
        };
        // Remember the WAL index as it is now, if SQLite made one yet.
        let _ = storage.check_mapped();
        Ok(storage)
    }

    /// The configured path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Ok when the WAL index can be touched without `SIGBUS`: not immutable or
    /// append-only, not shorter than it was. Run before every database call; costs
    /// one `statx`. A WAL index gone from the path, or another file there, is not
    /// the file this process has mapped (that one lives on, unlinked, and nobody
    /// can change it by name any more): [`Storage::check`] refuses writes then.
    ///
    /// Errors: [`StorageFault::WalIndex`], saying which.
    pub fn check_mapped(&self) -> Result<(), StorageFault> {
        let fault = |reason| StorageFault::WalIndex {
            path: self.wal_index.display().to_string(),
            reason,
        };
        let mut seen = self
            .wal_index_seen
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let Some(now) = attributes(&self.wal_index) else {
            return Ok(());
        };
        match *seen {
            Some((dev, ino, _)) if (dev, ino) != (now.dev, now.ino) => return Ok(()),
            Some((_, _, largest)) if now.size < largest => return Err(fault("truncated")),
            _ => {}
        }
        if now.immutable {
            return Err(fault("immutable"));
        }
        if now.append_only {
            return Err(fault("append-only"));
        }
        *seen = Some((now.dev, now.ino, now.size));
        Ok(())
    }

    /// Ok when the file at the path is still the one captured, it and its WAL are
    /// writable, and the WAL index is safe ([`Storage::check_mapped`]). Costs a
    /// few `stat`-like calls; opens nothing.
    ///
    /// Errors: [`StorageFault`], saying which.
    pub fn check(&self) -> Result<(), StorageFault> {
        let shown = || self.path.display().to_string();
        let meta = match std::fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StorageFault::Missing(shown()))
            }
            Err(e) => {
                return Err(StorageFault::NotWritable {
                    path: shown(),
                    reason: e.to_string(),
                })
            }
        };
        if (meta.dev(), meta.ino()) != (self.dev, self.ino) {
            return Err(StorageFault::Replaced(shown()));
        }
        for file in [&self.path, &self.wal] {
            match writable(file) {
                Ok(()) => {}
                // The WAL exists only while a connection has the database open.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && file == &self.wal => {}
                Err(e) => {
                    return Err(StorageFault::NotWritable {
                        path: file.display().to_string(),
                        reason: e.to_string(),
                    })
                }
            }
        }
        self.check_mapped()
    }

    /// Bytes an unprivileged writer may still use on the file's filesystem.
    ///
    /// Errors: `statvfs` failed.
    pub fn free_bytes(&self) -> std::io::Result<u64> {
        let path = c_path(&self.path)?;
        // SAFETY: `path` is a NUL-terminated string; `stat` is written by the call.
        unsafe {
            let mut stat: libc::statvfs = std::mem::zeroed();
            if libc::statvfs(path.as_ptr(), &mut stat) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(u64::from(stat.f_bavail).saturating_mul(u64::from(stat.f_frsize)))
        }
    }

    /// Readiness of the file for `/readyz`, named `what` in the log and the answer
    /// (`database`, `budget database`): [`Storage::check`], then [`MIN_FREE_BYTES`]
    /// free on its filesystem; each failure is logged. Free space that cannot be
    /// read fails nothing: its error comes back in the `Ok`, for the caller to note.
    ///
    /// Errors: [`NotReady`], saying which, in a few words.
    pub fn check_ready(&self, what: &str) -> Result<Option<std::io::Error>, NotReady> {
        self.check().map_err(|fault| {
            tracing::error!(%fault, "readiness: {what} file");
            NotReady::File(format!("the {what} file is {}", fault.short()))
        })?;
        match self.free_bytes() {
            Ok(free) if free < MIN_FREE_BYTES => {
                tracing::error!(free, "readiness: the {what}'s filesystem is full");
                Err(NotReady::Full(format!("the {what}'s disk is full")))
            }
            Ok(_) => Ok(None),
            Err(e) => Ok(Some(e)),
        }
    }
}

/// Why a database file is not ready ([`Storage::check_ready`]): the few words
/// `/readyz` answers with (the details went to the log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotReady {
    /// The file is not the one opened, or not writable ([`Storage::check`]).
    File(String),
    /// Its filesystem has less than [`MIN_FREE_BYTES`] free.
    Full(String),
}

impl NotReady {
    /// The few words for `/readyz`.
    pub fn into_reason(self) -> String {
        match self {
            NotReady::File(reason) | NotReady::Full(reason) => reason,
        }
    }
}

/// Makes a `SIGBUS` say what it most likely is before the process dies of it.
///
/// [`Storage::check_mapped`] keeps SQLite off a WAL index that became unsafe, but
/// a file made immutable or truncated *during* one database call can still fault
/// inside SQLite, and nothing can resume that call. The handler writes one line to
/// stderr (async-signal-safe `write(2)` only), puts the default action back and
/// returns, so the faulting access runs again and the process ends by the signal
/// as before (an orchestrator restarts it; on restart the check refuses the files
/// until they are fixed). Call once, early, from `main`.
pub fn report_sigbus() {
    extern "C" fn on_sigbus(_: libc::c_int) {
        const LINE: &[u8] = b"agent-pages: SIGBUS: a memory-mapped file went bad under a database \
call (the database's -shm WAL index made immutable or truncated while in use?); exiting. \
See README, Storage faults.\n";
        // SAFETY: write(2) and signal(2) are async-signal-safe; LINE is static.
        unsafe {
            libc::write(2, LINE.as_ptr().cast(), LINE.len());
            libc::signal(libc::SIGBUS, libc::SIG_DFL);
        }
    }
    // SAFETY: installs a handler that only calls async-signal-safe functions.
    unsafe {
        libc::signal(
            libc::SIGBUS,
            on_sigbus as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

fn c_path(path: &Path) -> std::io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
}

/// `faccessat(path, W_OK, AT_EACCESS)`: refuses an immutable file or a read-only
/// filesystem (also for root), without opening the file.
fn writable(path: &Path) -> std::io::Result<()> {
    let path = c_path(path)?;
    // SAFETY: `path` is a NUL-terminated string.
    let rc =
        unsafe { libc::faccessat(libc::AT_FDCWD, path.as_ptr(), libc::W_OK, libc::AT_EACCESS) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// What `statx` says of a file.
struct Attributes {
    dev: u64,
    ino: u64,
    size: u64,
    immutable: bool,
    append_only: bool,
}

/// `statx(path)` without following a symlink; `None` when it does not exist (or
/// cannot be asked). Attributes the filesystem does not report read as unset.
#[cfg(target_os = "linux")]
fn attributes(path: &Path) -> Option<Attributes> {
    let path = c_path(path).ok()?;
    // SAFETY: `path` is a NUL-terminated string; `stx` is written by the call.
    let stx = unsafe {
        let mut stx: libc::statx = std::mem::zeroed();
        let rc = libc::statx(
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_INO | libc::STATX_SIZE,
            &mut stx,
        );
        if rc != 0 {
            return None;
        }
        stx
    };
    let has = |flag: libc::c_int| {
        let flag = flag as u64;
        stx.stx_attributes_mask & flag != 0 && stx.stx_attributes & flag != 0
    };
    Some(Attributes {
        dev: libc::makedev(stx.stx_dev_major, stx.stx_dev_minor),
        ino: stx.stx_ino,
        size: stx.stx_size,
        immutable: has(libc::STATX_ATTR_IMMUTABLE),
        append_only: has(libc::STATX_ATTR_APPEND),
    })
}

/// Without `statx`: identity and size only.
#[cfg(not(target_os = "linux"))]
fn attributes(path: &Path) -> Option<Attributes> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some(Attributes {
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.len(),
        immutable: false,
        append_only: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file `db.sqlite3` in a new folder, captured: the folder (kept while the
    /// test runs), the path, the storage.
    fn captured() -> (tempfile::TempDir, PathBuf, Storage) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite3");
        std::fs::write(&path, b"x").unwrap();
        let storage = Storage::capture(&path).unwrap();
        (dir, path, storage)
    }

    #[test]
    fn a_deleted_or_replaced_file_is_reported() {
        let (dir, path, storage) = captured();
        assert_eq!(storage.check(), Ok(()));
        let moved = dir.path().join("moved");
        std::fs::rename(&path, &moved).unwrap();
        assert!(matches!(storage.check(), Err(StorageFault::Missing(_))));
        // A new file at the path (the old one still exists, so its inode is not
        // reused).
        std::fs::write(&path, b"y").unwrap();
        assert!(matches!(storage.check(), Err(StorageFault::Replaced(_))));
    }

    #[test]
    fn readiness_names_the_file_in_its_answer() {
        let (dir, path, storage) = captured();
        assert!(storage.check_ready("budget database").is_ok());
        std::fs::rename(&path, dir.path().join("moved")).unwrap();
        let not_ready = storage.check_ready("budget database").unwrap_err();
        assert_eq!(
            not_ready,
            NotReady::File("the budget database file is gone".into())
        );
        assert_eq!(not_ready.into_reason(), "the budget database file is gone");
    }

    #[test]
    fn a_wal_index_that_shrank_is_not_touched() {
        let (dir, _, storage) = captured();
        let shm = dir.path().join("db.sqlite3-shm");
        // Not made yet: fine.
        assert_eq!(storage.check_mapped(), Ok(()));
        std::fs::write(&shm, vec![0u8; 65536]).unwrap();
        assert_eq!(storage.check_mapped(), Ok(()));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&shm)
            .unwrap()
            .set_len(32768)
            .unwrap();
        assert_eq!(storage.check_mapped().unwrap_err().short(), "truncated");
        // Moved away (kept alive under another name, so its inode is not reused)
        // and another file put there: neither is the file mapped.
        std::fs::rename(&shm, dir.path().join("old-shm")).unwrap();
        assert_eq!(storage.check_mapped(), Ok(()));
        std::fs::write(&shm, vec![0u8; 16]).unwrap();
        assert_eq!(storage.check_mapped(), Ok(()));
        assert!(storage.free_bytes().unwrap() > 0);
    }
}
