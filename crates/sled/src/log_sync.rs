//! Flushes that are durable. sled 0.34's `flush` writes its log with `sync_file_range`,
//! which flushes neither the disk's write cache nor the file's metadata (the log's
//! length, as it grows): after a power loss the disk may hold less than sled flushed
//! (sled issue #1452; a killed process loses nothing either way, the kernel has the
//! pages). So every flush fundi relies on is followed by an `fdatasync` of the log file.
//! sled's own background flusher, which `batched` mode uses, already `fsync`s after each
//! flush; values too large for the log, which sled writes as files of their own, are
//! synced by the vendored patch (`vendor/sled/FUNDI-PATCH.md`).

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use fundi_runtime::store::StoreError;

#[derive(Debug)]
pub(crate) struct LogSync {
    /// sled's log (`db` in the store's directory); `None` for a temporary store.
    file: Option<File>,
    /// Syncs made so far.
    syncs: AtomicU64,
}

impl LogSync {
    /// For the store sled has just opened in `dir`. Also syncs sled's `conf` (which sled
    /// writes once, when it creates the store, and never syncs), then `dir` and its
    /// parent, so that the names of a store created just now are on disk too: best
    /// effort, as some file systems cannot sync a directory and a parent may not be
    /// readable.
    pub(crate) fn open(dir: &Path) -> Result<LogSync, StoreError> {
        let failed = |what: &str, path: &Path, e: std::io::Error| {
            StoreError::io(format!("{what} {}", path.display()), e)
        };
        let dir = dir
            .canonicalize()
            .map_err(|e| failed("resolving", dir, e))?;
        let log = dir.join("db");
        let file = File::options()
            .read(true)
            .write(true)
            .open(&log)
            .map_err(|e| failed("opening sled's log", &log, e))?;
        let conf = dir.join("conf");
        File::open(&conf)
            .and_then(|f| f.sync_all())
            .map_err(|e| failed("syncing sled's configuration", &conf, e))?;
        for dir in std::iter::once(dir.as_path()).chain(dir.parent()) {
            if let Err(error) = File::open(dir).and_then(|d| d.sync_all()) {
                tracing::warn!(%error, dir = %dir.display(), "could not sync the directory");
            }
        }
        Ok(LogSync {
            file: Some(file),
            syncs: AtomicU64::new(0),
        })
    }

    /// For a temporary store: nothing to make durable.
    pub(crate) fn temporary() -> LogSync {
        LogSync {
            file: None,
            syncs: AtomicU64::new(0),
        }
    }

    /// sled's flush, then the log's sync: on disk when this returns. Blocks.
    pub(crate) fn flush(&self, db: &sled::Db) -> Result<(), StoreError> {
        db.flush().map_err(StoreError::engine)?;
        if let Some(file) = &self.file {
            file.sync_data()
                .map_err(|e| StoreError::io("syncing sled's log", e))?;
            self.syncs.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// How many syncs of the log were made (tests).
    #[cfg(test)]
    pub(crate) fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }
}
