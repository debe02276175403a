//! Is the database file we have open still the one at the configured path, and
//! writable? A write acknowledged 201/200 must never be lost, and SQLite happily
//! keeps writing into a file that was deleted (`rm -rf data/`) or replaced by
//! another one: those writes vanish at the next start. So the file's identity
//! (device and inode) is captured when the server opens it and compared before and
//! after every API write, and `/readyz` checks it too.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// The database file the server opened: its path and identity at that moment.
#[derive(Debug, Clone)]
pub struct Storage {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

/// Why the file at the configured path cannot take a write now. The messages name
/// the path, for logs and `/readyz`; API answers do not show them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageFault {
    #[error("the database file {0} is gone")]
    Missing(String),
    #[error("the database file {0} is another file than the one open (replaced or moved)")]
    Replaced(String),
    #[error("the database file {path} is not writable: {reason}")]
    NotWritable { path: String, reason: String },
}

impl StorageFault {
    /// A few words without the path, for answers: `gone`, `replaced`,
    /// `not writable`.
    pub fn short(&self) -> &'static str {
        match self {
            StorageFault::Missing(_) => "gone",
            StorageFault::Replaced(_) => "replaced",
            StorageFault::NotWritable { .. } => "not writable",
        }
    }
}

impl Storage {
    /// Captures the identity of `path`, which must exist (open it first).
    ///
    /// Errors: the file's metadata cannot be read.
    pub fn capture(path: &Path) -> std::io::Result<Self> {
        let meta = std::fs::metadata(path)?;
        Ok(Self {
            path: path.to_owned(),
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }

    /// The configured path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Ok when the file at the path is still the one captured and can be opened
    /// for writing. Costs a `stat` and an `open`/`close`: a few microseconds.
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
        std::fs::OpenOptions::new()
            .write(true)
            .open(&self.path)
            .map(drop)
            .map_err(|e| StorageFault::NotWritable {
                path: shown(),
                reason: e.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_or_replaced_file_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite3");
        std::fs::write(&path, b"x").unwrap();
        let storage = Storage::capture(&path).unwrap();
        assert_eq!(storage.check(), Ok(()));
        let moved = dir.path().join("moved");
        std::fs::rename(&path, &moved).unwrap();
        assert!(matches!(storage.check(), Err(StorageFault::Missing(_))));
        // A new file at the path (the old one still exists, so its inode is not
        // reused).
        std::fs::write(&path, b"y").unwrap();
        assert!(matches!(storage.check(), Err(StorageFault::Replaced(_))));
    }
}
