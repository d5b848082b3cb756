//! Group commit: writers that need durability share sled flushes.
//!
//! Writers never wait for the disk. Each write holds a ticket while it is applied
//! ([`GroupFlusher::begin`]); whoever needs what is readable so far on disk calls
//! [`GroupFlusher::settle`]. A settle covers every ticket issued before it was called,
//! writes still being applied included (a reader may already see part of one). One flush
//! runs at a time, on the blocking pool (sled's `flush_async` was seen to hang under
//! concurrency), ends with a sync of sled's log (`log_sync`: sled's flush alone does not
//! survive a power loss), and covers the tickets whose writes were all applied when it
//! started; settlers queued behind it usually find themselves covered. Before it starts,
//! the flusher yields once, so that writers the runtime was about to run join it. Under
//! load, many writes share each flush. There is no background task, so dropping the store
//! closes the database at once.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::log_sync::LogSync;
use fundi_runtime::store::StoreError;

#[derive(Debug, Default)]
pub(crate) struct GroupFlusher {
    /// Tickets issued so far, and those whose writes are still being applied.
    tickets: Mutex<Tickets>,
    /// Every ticket up to this one is on disk.
    covered: AtomicU64,
    /// Held while a flush runs (tokio's mutex is fair: waiters are served in order).
    running: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct Tickets {
    issued: u64,
    applying: BTreeSet<u64>,
}

/// A write being applied; dropping it marks the write applied (or abandoned).
pub(crate) struct Writing<'a> {
    flusher: &'a GroupFlusher,
    ticket: u64,
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.flusher.lock().applying.remove(&self.ticket);
    }
}

impl GroupFlusher {
    fn lock(&self) -> std::sync::MutexGuard<'_, Tickets> {
        // Two plain counters and a set, consistent after any panic: ignore poisoning.
        self.tickets.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a ticket for a write about to be applied; hold it until the write is done.
    pub(crate) fn begin(&self) -> Writing<'_> {
        let mut tickets = self.lock();
        tickets.issued += 1;
        let ticket = tickets.issued;
        tickets.applying.insert(ticket);
        Writing {
            flusher: self,
            ticket,
        }
    }

    /// The highest ticket up to which every write has been applied.
    fn applied_through(&self) -> u64 {
        let tickets = self.lock();
        match tickets.applying.first() {
            Some(first) => first - 1,
            None => tickets.issued,
        }
    }

    /// Returns once every write whose ticket was issued before this call is on disk.
    pub(crate) async fn settle(
        &self,
        db: &sled::Db,
        log: &std::sync::Arc<LogSync>,
    ) -> Result<(), StoreError> {
        let target = self.lock().issued;
        loop {
            if self.covered.load(Ordering::Acquire) >= target {
                return Ok(());
            }
            let _running = self.running.lock().await;
            if self.covered.load(Ordering::Acquire) >= target {
                return Ok(());
            }
            // Let whatever else is ready to run go first: writers about to finish join
            // this flush instead of waiting for the next one. Under load that makes the
            // groups larger (fewer flushes, each a sync); alone, nothing else is ready
            // and the flush starts at once.
            tokio::task::yield_now().await;
            // Read before the flush starts: everything it names is applied, so on disk
            // once the flush returns. A write still being applied waits for the next.
            let upto = self.applied_through();
            let (db, log) = (db.clone(), log.clone());
            tokio::task::spawn_blocking(move || log.flush(&db)).await??;
            self.covered.fetch_max(upto, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flush_covers_only_writes_applied_before_it_started() {
        let flusher = GroupFlusher::default();
        let (first, second, third) = (flusher.begin(), flusher.begin(), flusher.begin());
        drop(second);
        // The first is still being applied: a flush now covers nothing.
        assert_eq!(flusher.applied_through(), 0);
        drop(first);
        assert_eq!(flusher.applied_through(), 2);
        drop(third);
        assert_eq!(flusher.applied_through(), 3);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn writers_ready_together_share_one_flush() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().path(dir.path()).open().unwrap();
        let log = std::sync::Arc::new(LogSync::open(dir.path()).unwrap());
        let flusher = std::sync::Arc::new(GroupFlusher::default());
        // Spawned together on one thread: the first to settle runs before the others
        // have written. Its flush must wait for them, not go out with its write alone.
        let writers: Vec<_> = (0..8u8)
            .map(|i| {
                let (db, log, flusher) = (db.clone(), log.clone(), flusher.clone());
                tokio::spawn(async move {
                    {
                        let _writing = flusher.begin();
                        db.insert([i], &[i]).unwrap();
                    }
                    flusher.settle(&db, &log).await.unwrap();
                })
            })
            .collect();
        for writer in writers {
            writer.await.unwrap();
        }
        assert_eq!(flusher.covered.load(Ordering::Acquire), 8);
        assert_eq!(log.syncs(), 1, "eight writers ready together, one flush");
    }

    #[tokio::test]
    async fn settle_returns_at_once_when_nothing_is_pending_and_flushes_otherwise() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let log = std::sync::Arc::new(LogSync::temporary());
        let flusher = GroupFlusher::default();
        flusher.settle(&db, &log).await.unwrap();
        assert_eq!(flusher.covered.load(Ordering::Acquire), 0);
        db.insert(b"k", b"v").unwrap();
        drop(flusher.begin());
        flusher.settle(&db, &log).await.unwrap();
        assert_eq!(flusher.covered.load(Ordering::Acquire), 1);
    }
}
