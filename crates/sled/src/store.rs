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
//! By job: the tasks and their commits (`commit`, a `TaskTable`), reading them
//! (`read`), opening (here, and `open`), repairing (`repair`), setting aside what cannot
//! be read (`quarantine`), removing ended tasks (`retention`), the bytes (`layout`);
//! this module holds the store, `task_store` its `TaskStore` face.

use std::path::Path;
use std::time::Duration;

use crate::active_set::{ActiveSet, Sweeper, fresh_watermark, join_the_tail};
use crate::commit::TaskTable;
use crate::counts::Counts;
use crate::flusher::GroupFlusher;
use crate::layout::{
    CLEAN_MARKER, FORMAT_KEY, LIVE_MARKER, RESTING_FORMAT, STORE_FORMAT, WATERMARK_KEY,
    decode_entry,
};
use crate::log_sync::LogSync;
use crate::open;
use crate::quarantine::Quarantine;
use crate::repair;
use crate::resting;
use fundi_runtime::store::StoreError;

/// sled's page cache by default (sled's own default is 1 GiB).
pub const DEFAULT_CACHE_BYTES: u64 = 256 * 1024 * 1024;

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
    /// The tasks: snapshots, tails, the listing index, and what memory holds of the
    /// unfinished ones (see `commit`).
    pub(crate) tasks: TaskTable,
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
    pub(crate) quarantine: Quarantine,
    pub(crate) flusher: Option<GroupFlusher>,
    /// Makes a flush durable (see `log_sync`).
    pub(crate) log: std::sync::Arc<LogSync>,
    /// The thread writing the missing `A` keys every `SWEEP_INTERVAL`.
    pub(crate) sweeper: Option<Sweeper>,
    /// Whether dropping the store marks it closed cleanly (tests clear it to crash).
    pub(crate) close_cleanly: bool,
}

impl SledStore {
    /// Opens (or creates) the store in `path`. Must be called inside a tokio runtime.
    pub fn open(path: impl AsRef<Path>, durability: Durability) -> Result<SledStore, StoreError> {
        SledStore::open_with_cache(path, durability, DEFAULT_CACHE_BYTES)
    }

    /// Like [`SledStore::open`], with sled's page cache limited to `cache_bytes` (the
    /// store's share of memory; what does not fit is read from disk).
    pub fn open_with_cache(
        path: impl AsRef<Path>,
        durability: Durability,
        cache_bytes: u64,
    ) -> Result<SledStore, StoreError> {
        let path = path.as_ref();
        SledStore::open_config(
            sled::Config::new().path(path).cache_capacity(cache_bytes),
            durability,
            Some(path),
        )
    }

    /// A store in a temporary directory, removed when dropped (tests, benchmarks).
    pub fn temporary(durability: Durability) -> Result<SledStore, StoreError> {
        SledStore::open_config(sled::Config::new().temporary(true), durability, None)
    }

    /// Opens `config`; `dir` is where it lives (`None`: a temporary store).
    fn open_config(
        config: sled::Config,
        durability: Durability,
        dir: Option<&Path>,
    ) -> Result<SledStore, StoreError> {
        let config = match durability {
            // Every commit asks for its own (shared) flush; no timer needed.
            Durability::Sync => config.flush_every_ms(None),
            Durability::Batched { window } => {
                config.flush_every_ms(Some(window.as_millis().max(1) as u64))
            }
        };
        let db = config.open().map_err(open::opening)?;
        let log = std::sync::Arc::new(match dir {
            Some(dir) => LogSync::open(dir)?,
            None => LogSync::temporary(),
        });
        // Before anything is written: a newer layout is refused, not misread.
        let found = match db.get(FORMAT_KEY).map_err(StoreError::engine)? {
            Some(bytes) => <[u8; 8]>::try_from(bytes.as_ref())
                .map(u64::from_be_bytes)
                .map_err(|_| StoreError::damaged("the store format marker is not 8 bytes"))?,
            None => 0,
        };
        if found > STORE_FORMAT {
            return Err(StoreError::NewerFormat {
                found,
                supported: STORE_FORMAT,
            });
        }
        if found < STORE_FORMAT {
            db.insert(FORMAT_KEY, &STORE_FORMAT.to_be_bytes())
                .map_err(StoreError::engine)?;
        }
        let quarantine = Quarantine::open(&db, log.clone())?;
        let push = db.open_tree("push").map_err(StoreError::engine)?;
        let issues = db.open_tree("issues").map_err(StoreError::engine)?;
        let schedules = db.open_tree("schedules").map_err(StoreError::engine)?;
        let grants = db.open_tree("grants").map_err(StoreError::engine)?;
        let grant_digests = db.open_tree("grant_digests").map_err(StoreError::engine)?;
        let audit = db.open_tree("audit").map_err(StoreError::engine)?;
        let chaos = db.open_tree("chaos").map_err(StoreError::engine)?;
        let peers = db.open_tree("peers").map_err(StoreError::engine)?;
        let flusher = match durability {
            Durability::Sync => Some(GroupFlusher::default()),
            Durability::Batched { .. } => None,
        };
        // From here until a clean close, the store counts as possibly half written; the
        // marker's removal is on disk before anything else is written.
        let was_clean = db
            .remove(CLEAN_MARKER)
            .map_err(StoreError::engine)?
            .is_some();
        let counts = match was_clean {
            true => Counts::load(&db)?,
            false => Counts::default(),
        };
        // A store created just now has nothing to repair.
        let repair = !was_clean && db.was_recovered();
        let stored_watermark = db
            .get(WATERMARK_KEY)
            .map_err(StoreError::engine)?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        if let Some(watermark) = &stored_watermark {
            join_the_tail(&db, watermark, repair)?;
        }
        // After the tail's keys, so that a crash before it scans the tail again.
        let watermark = fresh_watermark(stored_watermark.as_deref());
        db.insert(WATERMARK_KEY, watermark.as_bytes())
            .map_err(StoreError::engine)?;
        let active = std::sync::Arc::new(ActiveSet::new(watermark));
        let mut store = SledStore {
            tasks: TaskTable::new(db.clone(), counts, active),
            db,
            push,
            issues,
            schedules,
            grants,
            grant_digests,
            audit,
            chaos,
            peers,
            quarantine,
            flusher,
            log,
            sweeper: None,
            close_cleanly: false,
        };
        if !store
            .db
            .contains_key(LIVE_MARKER)
            .map_err(StoreError::engine)?
        {
            open::take_live_entries_out_of_sled(&store.db)?;
        }
        // Tasks indexed at rest are loaded from their index entries; repair loads the
        // others' entries as it mends them.
        let (resting, others) = resting::split_active_set(&store.db)?;
        open::load_resting(&store.tasks, resting);
        match repair {
            true => repair::repair(&store.tasks, &store.quarantine, &others).map(|_| ())?,
            false => open::load_live_entries(&store.tasks, &store.quarantine, &others)?,
        }
        if found < RESTING_FORMAT {
            open::index_the_rest(&store.tasks, &others)?;
        }
        if repair {
            // A crash can stop a commit before its counts moved; and saved counts are
            // stale.
            let persisted = store.db.scan_prefix(b"U").map(decode_entry);
            store.tasks.counts = Counts::rebuild(persisted, &store.tasks.live)?;
            store.db.remove(b"Mcounts").map_err(StoreError::engine)?;
        }
        store.log.flush(&store.db)?;
        store.sweeper = Some(Sweeper::start(&store.db, &store.tasks.active)?);
        store.close_cleanly = true;
        Ok(store)
    }

    /// In `sync` mode, a ticket held while a write is applied (see `flusher`).
    pub(crate) fn begin_write(&self) -> Option<crate::flusher::Writing<'_>> {
        self.flusher.as_ref().map(GroupFlusher::begin)
    }

    /// In `sync` mode, returns once everything written before the call is on disk.
    pub(crate) async fn settle_writes(&self) -> Result<(), StoreError> {
        match &self.flusher {
            Some(flusher) => flusher.settle(&self.db, &self.log).await,
            None => Ok(()),
        }
    }

    /// For writes outside `TaskStore::write` (push configs, issues), which are durable
    /// when they return: settles what the caller has just written.
    pub(crate) async fn flush_if_sync(&self) -> Result<(), StoreError> {
        drop(self.begin_write());
        self.settle_writes().await
    }

    /// Flushes everything written so far (used at shutdown in batched mode).
    pub async fn flush(&self) -> Result<(), StoreError> {
        let (db, log) = (self.db.clone(), self.log.clone());
        tokio::task::spawn_blocking(move || log.flush(&db)).await??;
        Ok(())
    }

    /// Writes the missing `A` keys now (tests; the sweeper does it every second).
    #[cfg(test)]
    pub(crate) fn sweep(&self) {
        self.tasks.active.sweep(&self.db).unwrap();
    }

    /// Drops the store as a crash would leave it: without marking it closed cleanly, so
    /// the next open repairs it. Everything written so far is flushed first (a crash
    /// loses unflushed writes too, but those are not what repair is for).
    #[cfg(test)]
    pub(crate) fn crash(mut self) {
        self.db.flush().unwrap();
        self.close_cleanly = false;
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
        let closed = self.tasks.active.sweep(&self.db).and_then(|()| {
            self.tasks.counts.save(&self.db)?;
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
