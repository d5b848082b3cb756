//! Group commit: writers that need durability share sled flushes.
//!
//! A writer applies its write, takes a ticket, and waits for a flush that started after
//! the ticket was taken. One flush runs at a time, on the blocking pool (sled's
//! `flush_async` was seen to hang under concurrency). Whoever gets the flush lock runs
//! the flush for every ticket taken so far; writers queued behind it find their ticket
//! covered and return without flushing again. Under load, many writers share each flush.
//! There is no background task, so dropping the store closes the database at once.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Mutex;

use super::StoreError;

#[derive(Debug, Default)]
pub(crate) struct GroupFlusher {
    /// Tickets handed out so far.
    tickets: AtomicU64,
    /// Highest ticket covered by a finished, successful flush.
    covered: AtomicU64,
    /// Held while a flush runs (tokio's mutex is fair: waiters are served in order).
    running: Mutex<()>,
}

impl GroupFlusher {
    /// Returns once everything written to `db` before this call is on disk.
    pub(crate) async fn flush(&self, db: &sled::Db) -> Result<(), StoreError> {
        let ticket = self.tickets.fetch_add(1, Ordering::AcqRel) + 1;
        let _running = self.running.lock().await;
        if self.covered.load(Ordering::Acquire) >= ticket {
            return Ok(());
        }
        // Every ticket taken up to now belongs to a write that is already applied.
        let target = self.tickets.load(Ordering::Acquire);
        let db = db.clone();
        tokio::task::spawn_blocking(move || db.flush())
            .await
            .map_err(|e| StoreError::Engine(format!("flush task failed: {e}")))??;
        self.covered.fetch_max(target, Ordering::AcqRel);
        Ok(())
    }
}
