//! The embedded default store, on sled (layout: `layout`).
//!
//! Commits use single-key operations only, never sled transactions or batches: once a
//! process uses either, sled runs every operation under one process-wide lock, which
//! its flusher holds while it syncs the log, and writers queued behind every flush.
//! Instead, each commit has one write that is its commit point, and writes its other
//! pieces in an order that keeps the store recoverable.
//!
//! Most commits of a long-running task (progress notes, artifacts, a checkpoint with
//! them) **append**: the commit is one value holding its events, version and checkpoint,
//! in the slot of its first event's sequence number, which must be free (a writer racing
//! from the same version wants the same). That write is the commit point. The task's
//! snapshot stays as it was: a reader replays the commits after it (its tail), which
//! the slots keep in order. Then the listing entry moves, in memory.
//!
//! The other commits write a new **snapshot**: a task's first, one that ends it, one
//! that brings it to rest (waiting for input or an approver: opening the store and
//! waking it then read the snapshot alone), one without events (a checkpoint alone),
//! the `SNAPSHOT_EVERY`th since the last snapshot, and one whose snapshot is in an older
//! layout:
//!
//! 1. a new unfinished task joins the active set, so recovery will look at it: with an
//!    `A` key when its id is at or below the active set's watermark, else lazily (a sweep
//!    writes the key if the task is still unfinished a second later; see `active_set`);
//! 2. the commit's events, unless they ride in the snapshot (a task's first 4 KiB of
//!    events do, while every event so far does: most short tasks commit with one write
//!    each time), take the slot of the first one's sequence number as an appended commit
//!    would: **this is then the commit point**; the commit that first stops the snapshot
//!    from carrying its events moves them out first, to the slot of event 1;
//! 3. the snapshot (`T`) is swapped in if it still holds what the writer read: **the
//!    commit point** when the events ride in it;
//! 4. the derived data follows: the listing index, and leaving the active set. (Task
//!    counts live in memory, see `counts`; so do the listing entries of unfinished
//!    tasks, see `live_index`: only a terminal task's entry is written to sled.)
//!
//! Readers see a commit once its commit point is written: `get` replays the tail onto
//! the snapshot (a terminal task has none: its last commit is its snapshot), `events`
//! reads the snapshot's events and then every slot. Writers of one task take turns,
//! and find where its log ends in memory (`positions`), or the first time from its
//! snapshot and the tail's last value.
//!
//! sled recovers a prefix of its log after a crash, so a crash leaves at most one commit
//! per task half done, and only for tasks still in the active set. Opening a store
//! first brings the tasks above the watermark into the active set on disk; one that was
//! not closed cleanly is then repaired from their snapshots and tails (`repair`).
//!
//! By job: opening (`open`), committing (`commit`), reading (`read`),
//! repairing (`repair`), setting aside what cannot be read (`quarantine`),
//! the bytes (`layout`); this module holds the store, `task_store` its `TaskStore` face.

use std::time::Duration;

use crate::active_set::{ActiveSet, Sweeper};
use crate::counts::Counts;
use crate::flusher::GroupFlusher;
use crate::layout::CLEAN_MARKER;
use crate::live_index::LiveIndex;
use crate::log_sync::LogSync;
use crate::positions::{Positions, Turns};
use fundi_runtime::store::StoreError;

/// sled's page cache by default (sled's own default is 1 GiB).
pub const DEFAULT_CACHE_BYTES: u64 = 256 * 1024 * 1024;

/// How many bytes of a task's first events its snapshot carries (see `snapshot`). A
/// blocking send's whole history fits, so it commits with one write each time; a
/// long-running task's events move out to values of their own, so that its snapshot
/// does not grow with its log.
pub(crate) const INLINE_EVENTS_LIMIT: usize = 4 * 1024;

/// A task's snapshot is written again at least every this many commits: between, a
/// commit of an unfinished task writes its events alone (see `apply`), and a reader
/// replays at most this many commits onto the snapshot.
pub(crate) const SNAPSHOT_EVERY: u64 = 32;

/// When a committed change is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Flushed before the change is acknowledged; concurrent writers share flushes.
    Sync,
    /// Acknowledged at once and flushed in the background at least every `window`:
    /// a crash loses at most the changes of the last window.
    Batched {
        /// The longest time a change stays unflushed.
        window: Duration,
    },
}

/// A `TaskStore` on sled.
#[derive(Debug)]
pub struct SledStore {
    pub(crate) db: sled::Db,
    /// Push configs and cursors (see `push`).
    pub(crate) push: sled::Tree,
    /// Issues by fingerprint (see `issues::SledIssueStore`).
    pub(crate) issues: sled::Tree,
    /// Schedules by id (see `schedules::SledScheduleStore`).
    pub(crate) schedules: sled::Tree,
    /// Grants by id, and their ids by token digest (see `grants::SledGrantStore`).
    pub(crate) grants: sled::Tree,
    pub(crate) grant_digests: sled::Tree,
    /// The audit log by sequence number (see `audit::SledAuditLog`).
    pub(crate) audit: sled::Tree,
    /// Chaos events by task and number (see `chaos::SledChaosLog`).
    pub(crate) chaos: sled::Tree,
    /// Peers added at run time, by name (see `peers::SledPeerStore`).
    pub(crate) peers: sled::Tree,
    /// What was set aside because it could not be read (see `quarantine`).
    pub(crate) quarantine: sled::Tree,
    pub(crate) flusher: Option<GroupFlusher>,
    /// Makes a flush durable (see `log_sync`).
    pub(crate) log: std::sync::Arc<LogSync>,
    /// Tasks per owner and state.
    pub(crate) counts: Counts,
    /// The listing entries of unfinished tasks (those of terminal tasks are in sled).
    pub(crate) live: LiveIndex,
    /// Where unfinished tasks' logs end (see `positions`).
    pub(crate) positions: Positions,
    /// Writers of one task take turns (see `positions`).
    pub(crate) writers: Turns,
    /// Which unfinished tasks have their `A` key yet.
    pub(crate) active: std::sync::Arc<ActiveSet>,
    /// The thread writing the missing `A` keys every `SWEEP_INTERVAL`.
    pub(crate) sweeper: Option<Sweeper>,
    /// Whether dropping the store marks it closed cleanly (tests clear it to crash).
    pub(crate) close_cleanly: bool,
    /// Tests: how many more writes a commit may make before it "crashes".
    #[cfg(test)]
    pub(crate) writes_left: std::sync::atomic::AtomicUsize,
    /// Tests: run before each write of a commit (another writer's write, say).
    #[cfg(test)]
    pub(crate) before_each_write: WriteHook,
}

/// Tests: what `SledStore::before_each_write` runs, if anything.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct WriteHook(pub(crate) std::sync::Mutex<Option<BeforeWrite>>);

/// Tests: a step run on the raw database before a write.
#[cfg(test)]
pub(crate) type BeforeWrite = Box<dyn FnMut(&sled::Db) + Send>;

#[cfg(test)]
impl std::fmt::Debug for WriteHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WriteHook")
    }
}

impl Drop for SledStore {
    fn drop(&mut self) {
        drop(self.sweeper.take());
        if !self.close_cleanly {
            return;
        }
        // Everything is on disk before the marker says so. The last sweep leaves the
        // next open no tail to scan (were it to fail, that open would scan it).
        let closed = self.active.sweep(&self.db).and_then(|()| {
            self.counts.save(&self.db)?;
            self.log.flush(&self.db)?;
            self.db
                .insert(CLEAN_MARKER, &[])
                .map_err(StoreError::engine)?;
            self.log.flush(&self.db)?;
            Ok(())
        });
        if let Err(e) = closed {
            tracing::warn!(error = %e, "store not marked closed cleanly; the next open repairs it");
        }
    }
}
