//! The embedded default store, on sled (layout: `sled_layout`).
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
//! without events (a checkpoint alone), the `SNAPSHOT_EVERY`th since the last snapshot,
//! and one whose snapshot is in an older layout:
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
//! not closed cleanly is then repaired from their snapshots and tails (`sled_repair`).

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;

use super::active_set::{ActiveSet, Sweeper, fresh_watermark, join_the_tail};
use super::counts::Counts;
use super::flusher::GroupFlusher;
use super::index::{IndexEntry, merge_newest_first, plan_page};
use super::live_index::{LiveIndex, is_persisted};
use super::log_sync::LogSync;
use super::positions::{Position, Positions, Turns};
use super::sled_layout::{
    CLEAN_MARKER, Commit, FORMAT_KEY, Header, LIVE_MARKER, STORE_FORMAT, WATERMARK_KEY, active_id,
    active_key, commit_versions, context_key, context_prefix, decode_entry, decode_events,
    decode_record, encode_commit, encode_events, encode_record, event_key, is_current,
    legacy_head_key, record_versions, task_key, updated_key,
};
use super::sled_quarantine::QUARANTINE_TREE;
use super::{ListPage, ListQuery, QuarantinedTask, StoreError, TaskRecord, TaskStore};
use crate::model::{TaskEvent, TaskId};
use crate::transition::replay;

/// sled's page cache by default (sled's own default is 1 GiB).
pub const DEFAULT_CACHE_BYTES: u64 = 256 * 1024 * 1024;

/// How many bytes of a task's first events its snapshot carries (see `snapshot`). A
/// blocking send's whole history fits, so it commits with one write each time; a
/// long-running task's events move out to values of their own, so that its snapshot
/// does not grow with its log.
pub(super) const INLINE_EVENTS_LIMIT: usize = 4 * 1024;

/// A task's snapshot is written again at least every this many commits: between, a
/// commit of an unfinished task writes its events alone (see `apply`), and a reader
/// replays at most this many commits onto the snapshot.
pub(super) const SNAPSHOT_EVERY: u64 = 32;

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
    pub(super) db: sled::Db,
    /// Push configs and cursors (see `sled_push`).
    pub(super) push: sled::Tree,
    /// Issues by fingerprint (see `issues::SledIssueStore`).
    pub(crate) issues: sled::Tree,
    /// What was set aside because it could not be read (see `sled_quarantine`).
    pub(super) quarantine: sled::Tree,
    flusher: Option<GroupFlusher>,
    /// Makes a flush durable (see `log_sync`).
    pub(super) log: std::sync::Arc<LogSync>,
    /// Tasks per owner and state.
    pub(super) counts: Counts,
    /// The listing entries of unfinished tasks (those of terminal tasks are in sled).
    pub(super) live: LiveIndex,
    /// Where unfinished tasks' logs end (see `positions`).
    pub(super) positions: Positions,
    /// Writers of one task take turns (see `positions`).
    writers: Turns,
    /// Which unfinished tasks have their `A` key yet.
    pub(super) active: std::sync::Arc<ActiveSet>,
    /// The thread writing the missing `A` keys every `SWEEP_INTERVAL`.
    sweeper: Option<Sweeper>,
    /// Whether dropping the store marks it closed cleanly (tests clear it to crash).
    close_cleanly: bool,
    /// Tests: how many more writes a commit may make before it "crashes".
    #[cfg(test)]
    pub(super) writes_left: std::sync::atomic::AtomicUsize,
    /// Tests: run before each write of a commit (another writer's write, say).
    #[cfg(test)]
    pub(super) before_each_write: WriteHook,
}

/// Tests: what `SledStore::before_each_write` runs, if anything.
#[cfg(test)]
#[derive(Default)]
pub(super) struct WriteHook(pub(super) std::sync::Mutex<Option<BeforeWrite>>);

/// Tests: a step run on the raw database before a write.
#[cfg(test)]
pub(super) type BeforeWrite = Box<dyn FnMut(&sled::Db) + Send>;

#[cfg(test)]
impl std::fmt::Debug for WriteHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WriteHook")
    }
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
        SledStore::with_config(
            sled::Config::new().path(path).cache_capacity(cache_bytes),
            durability,
            Some(path),
        )
    }

    /// A store in a temporary directory, removed when dropped (tests, benchmarks).
    pub fn temporary(durability: Durability) -> Result<SledStore, StoreError> {
        SledStore::with_config(sled::Config::new().temporary(true), durability, None)
    }

    /// Opens `config`; `dir` is where it lives (`None`: a temporary store).
    fn with_config(
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
        let db = config.open()?;
        let log = std::sync::Arc::new(match dir {
            Some(dir) => LogSync::open(dir)?,
            None => LogSync::temporary(),
        });
        // Before anything is written: a newer layout is refused, not misread.
        let found = match db.get(FORMAT_KEY)? {
            Some(bytes) => <[u8; 8]>::try_from(bytes.as_ref())
                .map(u64::from_be_bytes)
                .map_err(|_| StoreError::Codec("the store format marker is not 8 bytes".into()))?,
            None => 0,
        };
        if found > STORE_FORMAT {
            return Err(StoreError::NewerFormat {
                found,
                supported: STORE_FORMAT,
            });
        }
        if found < STORE_FORMAT {
            db.insert(FORMAT_KEY, &STORE_FORMAT.to_be_bytes())?;
        }
        let push = db.open_tree("push")?;
        let issues = db.open_tree("issues")?;
        let quarantine = db.open_tree(QUARANTINE_TREE)?;
        let flusher = match durability {
            Durability::Sync => Some(GroupFlusher::default()),
            Durability::Batched { .. } => None,
        };
        // From here until a clean close, the store counts as possibly half written; the
        // marker's removal is on disk before anything else is written.
        let was_clean = db.remove(CLEAN_MARKER)?.is_some();
        let counts = match was_clean {
            true => Counts::load(&db)?,
            false => Counts::default(),
        };
        // A store created just now has nothing to repair.
        let repair = !was_clean && db.was_recovered();
        let stored_watermark = db
            .get(WATERMARK_KEY)?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        if let Some(watermark) = &stored_watermark {
            join_the_tail(&db, watermark, repair)?;
        }
        // After the tail's keys, so that a crash before it scans the tail again.
        let watermark = fresh_watermark(stored_watermark.as_deref());
        db.insert(WATERMARK_KEY, watermark.as_bytes())?;
        let mut store = SledStore {
            db,
            push,
            issues,
            quarantine,
            flusher,
            log,
            counts,
            live: LiveIndex::default(),
            positions: Positions::default(),
            writers: Turns::default(),
            active: std::sync::Arc::new(ActiveSet::new(watermark)),
            sweeper: None,
            close_cleanly: false,
            #[cfg(test)]
            writes_left: std::sync::atomic::AtomicUsize::new(usize::MAX),
            #[cfg(test)]
            before_each_write: Default::default(),
        };
        if !store.db.contains_key(LIVE_MARKER)? {
            store.take_live_entries_out_of_sled()?;
        }
        if repair {
            super::sled_repair::repair(&store)?;
        }
        store.load_live_entries()?;
        if repair {
            // A crash can stop a commit before its counts moved; and saved counts are
            // stale.
            let persisted = store.db.scan_prefix(b"U").map(decode_entry);
            let entries = persisted.chain(store.live.newest_first(None));
            store.counts = Counts::rebuild(entries)?;
            store.db.remove(b"Mcounts")?;
        }
        store.log.flush(&store.db)?;
        store.sweeper = Some(Sweeper::start(&store.db, &store.active)?);
        store.close_cleanly = true;
        Ok(store)
    }

    /// Writes the missing `A` keys now (tests; the sweeper does it every second).
    #[cfg(test)]
    pub(super) fn sweep(&self) {
        self.active.sweep(&self.db).unwrap();
    }

    /// Drops the store as a crash would leave it: without marking it closed cleanly, so
    /// the next open repairs it. Everything written so far is flushed first (a crash
    /// loses unflushed writes too, but those are not what repair is for).
    #[cfg(test)]
    pub(super) fn crash(mut self) {
        self.db.flush().unwrap();
        self.close_cleanly = false;
    }

    /// The ids of the active set (tasks that may not be terminal).
    pub(super) fn active_ids(&self) -> Result<Vec<TaskId>, StoreError> {
        self.db
            .scan_prefix(b"A")
            .keys()
            .map(|key| Ok(active_id(&key?)))
            .collect()
    }

    /// The snapshot headers of the active set's tasks (the set can also name a task
    /// whose first commit failed: it has none).
    fn active_headers(
        &self,
    ) -> Result<impl Iterator<Item = Result<Header, StoreError>> + '_, StoreError> {
        let ids = self.active_ids()?.into_iter();
        Ok(ids.filter_map(|id| match self.db.get(task_key(&id)) {
            Ok(Some(bytes)) => Some(Header::read(&bytes)),
            Ok(None) => None,
            Err(e) => Some(Err(e.into())),
        }))
    }

    /// Stores written before `LIVE_MARKER` kept every task's entry in `U` and `C`: takes
    /// those of unfinished tasks out (the entry before a commit a crash cut too), once.
    fn take_live_entries_out_of_sled(&self) -> Result<(), StoreError> {
        for header in self.active_headers()? {
            let header = header?;
            for json in [Some(&header.entry), header.previous.as_ref()]
                .into_iter()
                .flatten()
            {
                let entry: IndexEntry = serde_json::from_slice(json)?;
                if !is_persisted(&entry) {
                    self.db.remove(updated_key(&entry))?;
                    self.db.remove(context_key(&entry))?;
                }
            }
        }
        // After the removals in sled's log, so a crash before it repeats them.
        self.db.insert(LIVE_MARKER, &[])?;
        Ok(())
    }

    /// Rebuilds the in-memory entries of unfinished tasks from the active set: a task's
    /// snapshot names its entry, unless commits followed it (its tail). Their positions
    /// too, which spares recovery's reads of them a look for a tail.
    /// A task that cannot be decoded is set aside (`sled_quarantine`), never an error.
    fn load_live_entries(&self) -> Result<(), StoreError> {
        for id in self.active_ids()? {
            let Some(bytes) = self.db.get(task_key(&id))? else {
                continue;
            };
            let (entry, at) = match self.live_entry(&id, &bytes) {
                Ok(found) => found,
                Err(error @ StoreError::Codec(_)) => {
                    self.set_aside(&id, &error)?;
                    continue;
                }
                Err(error) => return Err(error),
            };
            if !is_persisted(&entry) {
                self.live.put(at.version, &entry);
                self.positions.reached(&id, at);
            }
        }
        Ok(())
    }

    /// An unfinished task's listing entry and position, from its snapshot (`bytes`) and
    /// tail.
    fn live_entry(&self, id: &TaskId, bytes: &[u8]) -> Result<(IndexEntry, Position), StoreError> {
        let header = Header::read(bytes)?;
        let mut at = Position::at_snapshot(header.version, header.last_seq, is_current(bytes));
        let entry = match self.has_tail(id, header.last_seq)? {
            false => serde_json::from_slice(&header.entry)?,
            true => {
                let record = self.with_tail(header.record(bytes)?)?;
                (at.version, at.last_seq) = (record.version, record.last_seq);
                IndexEntry::of(&record)
            }
        };
        Ok((entry, at))
    }

    fn count(&self, owner: Option<&str>, state: Option<crate::model::TaskState>) -> usize {
        self.counts.get(owner, state.map(|s| s.number())) as usize
    }

    /// In `sync` mode, a ticket held while a write is applied (see `flusher`).
    fn begin_write(&self) -> Option<super::flusher::Writing<'_>> {
        self.flusher.as_ref().map(GroupFlusher::begin)
    }

    /// In `sync` mode, returns once everything written before the call is on disk.
    async fn settle_writes(&self) -> Result<(), StoreError> {
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

    /// Called before every write of a commit: in tests, fails once the allowance of
    /// writes is used up, leaving the commit half done as a crash would.
    fn before_write(&self) -> Result<(), StoreError> {
        #[cfg(test)]
        {
            use std::sync::atomic::Ordering;
            let left = self.writes_left.load(Ordering::Acquire);
            if left == 0 {
                return Err(StoreError::io(
                    "a test's write",
                    std::io::Error::other("simulated crash"),
                ));
            }
            self.writes_left.store(left - 1, Ordering::Release);
            if let Some(hook) = self.before_each_write.0.lock().unwrap().as_mut() {
                hook(&self.db);
            }
        }
        Ok(())
    }

    /// Where the task's log ends, read from sled: its snapshot (`T` value) and tail.
    fn read_position(&self, id: &TaskId, snapshot: &[u8]) -> Result<Position, StoreError> {
        let (version, last_seq) = record_versions(snapshot)?;
        let at_snapshot = Position::at_snapshot(version, last_seq, is_current(snapshot));
        if !self.has_tail(id, last_seq)? {
            return Ok(at_snapshot);
        }
        let Some(last) = self.db.range(tail_range(id, last_seq)).next_back() else {
            return Ok(at_snapshot);
        };
        let (_, bytes) = last?;
        let (version, last_seq) = commit_versions(&bytes)?.ok_or_else(|| {
            StoreError::Codec(format!(
                "task {id}: an event value past the snapshot is not a commit"
            ))
        })?;
        Ok(Position {
            version,
            last_seq,
            ..at_snapshot
        })
    }

    /// The task as stored: its snapshot with its tail's commits replayed.
    fn read_task(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        let Some(bytes) = self.db.get(task_key(id))? else {
            return Ok(None);
        };
        let record = decode_record(&bytes)?;
        // A terminal task's snapshot is its last commit (repair makes it so after a
        // crash); so is an unfinished one's that this store wrote last.
        let settled = record.state().is_terminal()
            || self
                .positions
                .get(id)
                .is_some_and(|at| at.is_snapshot(record.last_seq));
        match settled || !self.has_tail(id, record.last_seq)? {
            true => Ok(Some(record)),
            false => self.with_tail(record).map(Some),
        }
    }

    /// Whether commits follow the task's snapshot, whose last event is `last_seq`: the
    /// first would be in the next slot. (A point read: a range scan costs sled a copy
    /// of a tree node.)
    fn has_tail(&self, id: &TaskId, last_seq: u64) -> Result<bool, StoreError> {
        let next = last_seq.saturating_add(1);
        Ok(self.db.contains_key(event_key(id, next))?)
    }

    /// `record` (a snapshot) with the commits of its tail replayed: their events (as
    /// they were applied when committed), versions and checkpoints.
    pub(super) fn with_tail(&self, mut record: TaskRecord) -> Result<TaskRecord, StoreError> {
        for item in self.db.range(tail_range(record.id(), record.last_seq)) {
            let (_, bytes) = item?;
            let commit = Commit::decode(&bytes)?;
            for event in commit.events.iter().filter(|e| e.seq > record.last_seq) {
                replay(&mut record.task, &event.kind);
            }
            record.version = commit.version;
            record.last_seq = commit.last_seq;
            record.checkpoint = commit.checkpoint;
        }
        Ok(record)
    }

    /// Whether `commit` can be written as its events alone, after the snapshot: the
    /// next commit of an unfinished task that stays unfinished, its snapshot in the
    /// current layout and fewer than `SNAPSHOT_EVERY` commits old.
    fn appends(&self, commit: &Encoded<'_>, events: &EncodedEvents, at: &Position) -> bool {
        let record = commit.record;
        at.snapshot_current
            && at.since_snapshot() + 1 < SNAPSHOT_EVERY
            && !record.state().is_terminal()
            && record.version == at.version + 1
            && events.first_seq == at.last_seq + 1
            && record.last_seq == events.last_seq
    }

    /// Writes one commit: appended or with a snapshot (see the module docs).
    fn apply(&self, commit: &Encoded<'_>, expected_version: u64) -> Result<(), StoreError> {
        let id = commit.record.id();
        // An unfinished task's entry is in memory: the entry an append moves from.
        let appending = |at: &Position| match &commit.events {
            Some(events) if self.appends(commit, events, at) => {
                self.live.entry(id).map(|previous| (events, previous))
            }
            _ => None,
        };
        // A task written or loaded since the store opened: its position is exact (its
        // writers take turns, see `write`), so an append reads nothing from sled.
        let known = self.positions.get(id);
        if let Some(at) = &known {
            StoreError::check_version(id, expected_version, at.version)?;
            if let Some((events, previous)) = appending(at) {
                return self.append(commit, events, &previous, at);
            }
        }
        let old = self.db.get(task_key(id))?;
        let at = match (known, old.as_deref()) {
            (Some(at), Some(_)) => Some(at),
            (_, bytes) => bytes.map(|b| self.read_position(id, b)).transpose()?,
        };
        let found = at.as_ref().map_or(0, |at| at.version);
        StoreError::check_version(id, expected_version, found)?;
        if known.is_none()
            && let Some(at) = &at
            && let Some((events, previous)) = appending(at)
        {
            return self.append(commit, events, &previous, at);
        }
        self.snapshot(commit, expected_version, old, at)
    }

    /// Writes a commit as its events alone, in the slot of the first (which must be
    /// free: a writer racing from the same version wants the same). **This is the
    /// commit point.**
    fn append(
        &self,
        commit: &Encoded<'_>,
        events: &EncodedEvents,
        previous: &IndexEntry,
        at: &Position,
    ) -> Result<(), StoreError> {
        let record = commit.record;
        let id = record.id();
        let value = commit.commit_value(events)?;
        self.before_write()?;
        let slot = event_key(id, events.first_seq);
        if self
            .db
            .compare_and_swap(&slot, None::<&[u8]>, Some(value))?
            .is_err()
        {
            return Err(self.conflict(id, at.version, &[]));
        }
        self.positions.reached(
            id,
            Position {
                version: record.version,
                last_seq: events.last_seq,
                ..*at
            },
        );
        self.reindex(
            id,
            record.version,
            Some(previous),
            &commit.entry,
            &commit.entry_bytes,
        )
    }

    /// Writes a commit with a new snapshot of its task (see the module docs).
    fn snapshot(
        &self,
        commit: &Encoded<'_>,
        expected_version: u64,
        old: Option<sled::IVec>,
        at: Option<Position>,
    ) -> Result<(), StoreError> {
        let record = commit.record;
        let id = record.id();
        let terminal = record.state().is_terminal();
        let old_header = old.as_deref().map(Header::read).transpose()?;
        if old.is_none() && !terminal && !self.active.join_lazily(id) {
            self.before_write()?;
            self.db.insert(active_key(id), &[])?;
        }
        // A task's first events ride in its snapshot (one write a commit), as long as
        // every event so far does. The commit that would take them past
        // `INLINE_EVENTS_LIMIT`, or that follows commits written apart, moves them out to
        // a value of their own, keyed by the first (1), so that the snapshot stops
        // carrying them; it and every commit after it put their events in the slot of
        // their first one, as a whole commit (were the snapshot not to follow, a crash
        // in between, the commit is there). Each slot must be free: a writer racing
        // from the same version wants the same.
        let mut inline = match (&old_header, &old) {
            (Some(header), Some(bytes)) => header.inline(bytes),
            _ => Default::default(),
        };
        let all_inline = inline.through == at.as_ref().map_or(0, |at| at.last_seq);
        let mut written = Vec::new();
        let mut own_written = false;
        if let Some(events) = &commit.events {
            if all_inline && inline.events.len() + events.bytes.len() <= INLINE_EVENTS_LIMIT {
                inline = inline.then(events.last_seq, &events.bytes);
            } else {
                let moved = std::mem::take(&mut inline).events;
                let own = commit.commit_value(events)?;
                let own_seq = events.first_seq;
                let slots = [(1, moved), (own_seq, own)];
                for (seq, bytes) in slots.into_iter().filter(|(_, b)| !b.is_empty()) {
                    let slot = event_key(id, seq);
                    self.before_write()?;
                    match self
                        .db
                        .compare_and_swap(&slot, None::<&[u8]>, Some(bytes.as_slice()))?
                    {
                        Ok(()) => written.push(slot),
                        // The same copy, left by a move that failed after it (the
                        // snapshot still carries those events): it serves as well.
                        Err(taken)
                            if seq != own_seq && taken.current.as_deref() == Some(&bytes) => {}
                        Err(_) => return Err(self.conflict(id, expected_version, &written)),
                    }
                }
                own_written = true;
            }
        }
        // The entry this commit moves from: an unfinished task's is in memory (its
        // snapshot's may be older than its tail), a terminal one's in the snapshot.
        let previous = match self.live.entry(id) {
            Some(entry) => Some(entry),
            None => old_header
                .as_ref()
                .map(|h| serde_json::from_slice::<IndexEntry>(&h.entry))
                .transpose()?,
        };
        // Repair needs the entry before this commit only to take it out of sled's index,
        // where only a terminal task's entry is.
        let in_sled = old_header
            .as_ref()
            .map(|h| h.entry.as_slice())
            .filter(|_| previous.as_ref().is_some_and(is_persisted));
        let record_json = serde_json::to_vec(record)?;
        let bytes = encode_record(record, &record_json, &commit.entry_bytes, in_sled, &inline)?;
        self.before_write()?;
        let key = task_key(id);
        if self.db.compare_and_swap(&key, old, Some(bytes))?.is_err() {
            if at.is_some() && own_written {
                // This commit is in (its own slot is written, past the snapshot it read):
                // the snapshot swapped in meanwhile is a later commit's, which read it.
                return Ok(());
            }
            return Err(self.conflict(id, expected_version, &written));
        }
        match terminal {
            true => self.positions.forget(id),
            false => self.positions.reached(
                id,
                Position::at_snapshot(record.version, record.last_seq, true),
            ),
        }
        self.reindex(
            id,
            record.version,
            previous.as_ref(),
            &commit.entry,
            &commit.entry_bytes,
        )?;
        if old_header.as_ref().is_some_and(|h| h.legacy) {
            self.before_write()?;
            self.db.remove(legacy_head_key(id))?;
        }
        if terminal && self.active.leave(id) {
            self.before_write()?;
            self.db.remove(active_key(id))?;
        }
        Ok(())
    }

    /// A lost race: takes back the events this commit wrote (their slots) and names the
    /// version found.
    fn conflict(&self, id: &TaskId, expected: u64, written: &[Vec<u8>]) -> StoreError {
        self.positions.forget(id);
        for slot in written {
            if let Err(e) = self.db.remove(slot) {
                return e.into();
            }
        }
        let found = match self.db.get(task_key(id)) {
            Ok(Some(bytes)) => match self.read_position(id, &bytes) {
                Ok(at) => at.version,
                Err(e) => return e,
            },
            Ok(None) => 0,
            Err(e) => return e.into(),
        };
        StoreError::Conflict {
            task_id: id.clone(),
            expected,
            found,
        }
    }

    /// Moves the task's listing entry from `old` (`None`: a new task) to `entry`
    /// (`entry_bytes` as JSON), written by the commit of `version`, and its counts with
    /// it: in memory while the task is unfinished, in sled once it is terminal.
    /// Idempotent, so repair can run it again for a commit a crash interrupted.
    pub(super) fn reindex(
        &self,
        id: &TaskId,
        version: u64,
        old: Option<&IndexEntry>,
        entry: &IndexEntry,
        entry_bytes: &[u8],
    ) -> Result<(), StoreError> {
        if old == Some(entry) {
            return Ok(());
        }
        debug_assert!(old.is_none_or(|o| &o.task_id == id));
        let mut written = Vec::new();
        if is_persisted(entry) {
            for key in [updated_key(entry), context_key(entry)] {
                self.before_write()?;
                self.db.insert(&key, entry_bytes)?;
                written.push(key);
            }
            self.live.remove(version, id);
        } else {
            self.live.put(version, entry);
        }
        // A terminal task's entry never moves in the runtime; a store does not rely on it.
        if let Some(old) = old.filter(|old| is_persisted(old)) {
            for stale in [updated_key(old), context_key(old)] {
                if !written.contains(&stale) {
                    self.before_write()?;
                    self.db.remove(stale)?;
                }
            }
        }
        self.counts.moved(old, entry);
        Ok(())
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
            self.db.insert(CLEAN_MARKER, &[])?;
            self.log.flush(&self.db)?;
            Ok(())
        });
        if let Err(e) = closed {
            tracing::warn!(error = %e, "store not marked closed cleanly; the next open repairs it");
        }
    }
}

/// A commit, encoded before any write (but for its snapshot, which most commits of a
/// long-running task do not write).
struct Encoded<'a> {
    record: &'a TaskRecord,
    /// The record's checkpoint, as JSON.
    checkpoint: Option<Vec<u8>>,
    entry: IndexEntry,
    entry_bytes: Vec<u8>,
    events: Option<EncodedEvents>,
}

/// The keys of the commits after a snapshot whose last event is `last_seq` (its tail).
pub(super) fn tail_range(id: &TaskId, last_seq: u64) -> std::ops::RangeInclusive<Vec<u8>> {
    event_key(id, last_seq.saturating_add(1))..=event_key(id, u64::MAX)
}

/// A commit's events, as one JSON array.
struct EncodedEvents {
    first_seq: u64,
    last_seq: u64,
    bytes: Vec<u8>,
}

impl<'a> Encoded<'a> {
    fn new(record: &'a TaskRecord, events: &[TaskEvent]) -> Result<Encoded<'a>, StoreError> {
        let entry = IndexEntry::of(record);
        Ok(Encoded {
            record,
            checkpoint: record
                .checkpoint
                .as_ref()
                .map(serde_json::to_vec)
                .transpose()?,
            entry_bytes: serde_json::to_vec(&entry)?,
            entry,
            events: match (events.first(), events.last()) {
                (Some(first), Some(last)) => Some(EncodedEvents {
                    first_seq: first.seq,
                    last_seq: last.seq,
                    bytes: encode_events(events)?,
                }),
                _ => None,
            },
        })
    }

    /// This commit as a value of its own, written in the slot of its first event.
    fn commit_value(&self, events: &EncodedEvents) -> Result<Vec<u8>, StoreError> {
        encode_commit(
            self.record.version,
            events.last_seq,
            self.checkpoint.as_deref(),
            &events.bytes,
        )
    }
}

#[async_trait]
impl TaskStore for SledStore {
    async fn write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        let encoded = Encoded::new(record, events)?;
        let _writing = self.begin_write();
        let _turn = self.writers.turn(record.id());
        let applied = self.apply(&encoded, expected_version);
        if applied.is_err() {
            // A write may have failed after the commit point: read the position from
            // sled next time.
            self.positions.forget(record.id());
        }
        applied
    }

    async fn settle(&self) -> Result<(), StoreError> {
        self.settle_writes().await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        self.read_task(id)
    }

    async fn events(
        &self,
        id: &TaskId,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<TaskEvent>, StoreError> {
        let Some(bytes) = self.db.get(task_key(id))? else {
            return Ok(Vec::new());
        };
        let header = Header::read(&bytes)?;
        let mut events = Vec::new();
        if after_seq < header.inline_through {
            let inline = header.inline(&bytes).decode()?.into_iter();
            events.extend(inline.filter(|e| e.seq > after_seq).take(limit));
        }
        // Values at or below the snapshot's own events are copies a crash left.
        let after_seq = after_seq.max(header.inline_through);
        if events.len() >= limit {
            return Ok(events);
        }
        // The value holding event `after_seq + 1` is keyed by its commit's first event,
        // which may come before it.
        let wanted = event_key(id, after_seq + 1);
        let start = match self.db.range(event_key(id, 0)..=wanted.clone()).next_back() {
            Some(item) => item?.0.to_vec(),
            None => wanted,
        };
        // Every value is a commit's: one is written whole, at its commit point.
        for item in self.db.range(start..=event_key(id, u64::MAX)) {
            let (_, bytes) = item?;
            let fresh = decode_events(&bytes)?
                .into_iter()
                .filter(|e| e.seq > after_seq);
            events.extend(fresh);
            if events.len() >= limit {
                events.truncate(limit);
                break;
            }
        }
        Ok(events)
    }

    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        // Terminal tasks are listed from sled, unfinished ones from memory; a state filter
        // needs only one of them.
        let terminal = query.state.map(|s| s.is_terminal());
        let prefix = match &query.context_id {
            Some(context) => context_prefix(context),
            None => b"U".to_vec(),
        };
        let persisted = match terminal {
            Some(false) => None,
            _ => Some(self.db.scan_prefix(prefix).rev().map(decode_entry)),
        };
        let live = match terminal {
            Some(true) => None,
            _ => Some(self.live.newest_first(query.context_id.as_ref())),
        };
        let entries =
            merge_newest_first(persisted.into_iter().flatten(), live.into_iter().flatten());
        let total = match (&query.context_id, query.updated_after) {
            (None, None) => Some(self.count(query.owner.as_deref(), query.state)),
            _ => None,
        };
        let plan = plan_page(entries, query, total)?;
        let mut records = Vec::with_capacity(plan.ids.len());
        for id in &plan.ids {
            // The index is written after the snapshot, so a listed id has a snapshot; a
            // task is never deleted. One that cannot be read is left out, not the page.
            match self.get(id).await {
                Ok(Some(record)) => records.push(record),
                Ok(None) => {}
                Err(error @ StoreError::Codec(_)) => {
                    tracing::error!(task_id = %id, %error, "a stored task cannot be read: left out of a listing");
                }
                Err(error) => return Err(error),
            }
        }
        Ok(ListPage {
            records,
            next: plan.next,
            total: plan.total,
        })
    }

    async fn active(&self) -> Result<Vec<TaskRecord>, StoreError> {
        let mut ids: std::collections::BTreeSet<TaskId> = self.active_ids()?.into_iter().collect();
        // Those whose key the sweep has not written yet.
        ids.extend(self.active.unmarked());
        let mut records = Vec::new();
        for id in ids {
            // A task joins the active set just before its first commit and leaves it just
            // after its last, so the set can hold a task that is not (or no longer) active.
            match self.get(&id).await {
                Ok(Some(record)) if !record.state().is_terminal() => records.push(record),
                Ok(_) => {}
                Err(error @ StoreError::Codec(_)) => {
                    self.set_aside(&id, &error)?;
                }
                Err(error) => return Err(error),
            }
        }
        Ok(records)
    }

    async fn quarantined(&self) -> Result<Vec<QuarantinedTask>, StoreError> {
        self.quarantined_tasks()
    }
}
