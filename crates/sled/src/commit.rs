//! Committing to a sled store's tasks (`TaskTable`): a commit encoded once (`encoded`),
//! then appended after the task's snapshot or written as a new snapshot (see `store`
//! for the order of the writes and the commit point), and the listing index moved.

#[cfg(test)]
pub(crate) mod crash_points;
mod listing;

use std::sync::Arc;

use crate::active_set::ActiveSet;
use crate::counts::Counts;
use crate::encoded::{Encoded, EncodedEvents};
use crate::layout::{Header, active_key, encode_record, event_key, legacy_head_key, task_key};
use crate::live_index::{LiveIndex, is_persisted};
use crate::positions::{Position, Positions, Turns};
use crate::read;
use crate::rest::Rest;
use crate::resting;
use fundi_runtime::model::TaskId;
use fundi_runtime::store::StoreError;
use fundi_runtime::store::index::IndexEntry;

/// How many bytes of a task's first events its snapshot carries (see `snapshot`). A
/// blocking send's whole history fits, so it commits with one write each time; a
/// long-running task's events move out to values of their own, so that its snapshot
/// does not grow with its log.
pub(crate) const INLINE_EVENTS_LIMIT: usize = 4 * 1024;

/// A task's snapshot is written again at least every this many commits: between, a
/// commit of an unfinished task writes its events alone (see `apply`), and a reader
/// replays at most this many commits onto the snapshot.
pub(crate) const SNAPSHOT_EVERY: u64 = 32;

/// A sled store's tasks: their snapshots, tails and listing index in sled, and what is
/// kept in memory about the unfinished ones.
#[derive(Debug)]
pub(crate) struct TaskTable {
    pub(crate) db: sled::Db,
    /// Tasks per owner and state.
    pub(crate) counts: Counts,
    /// The listing entries of unfinished tasks (those of terminal tasks are in sled).
    pub(crate) live: LiveIndex,
    /// Where unfinished tasks' logs end (see `positions`).
    pub(crate) positions: Positions,
    /// Writers of one task take turns (see `positions`).
    pub(crate) writers: Turns,
    /// Which unfinished tasks have their `A` key yet.
    pub(crate) active: Arc<ActiveSet>,
    /// Tests: a crash after any write of a commit, or a step before one.
    #[cfg(test)]
    pub(crate) crash: crash_points::CrashPoints,
}

impl TaskTable {
    /// The tasks of `db`, with the counts and active set read at open.
    pub(crate) fn new(db: sled::Db, counts: Counts, active: Arc<ActiveSet>) -> TaskTable {
        TaskTable {
            db,
            counts,
            live: LiveIndex::default(),
            positions: Positions::default(),
            writers: Turns::default(),
            active,
            #[cfg(test)]
            crash: Default::default(),
        }
    }

    /// Called before every write of a commit: in tests, fails once the allowance of
    /// writes is used up, leaving the commit half done as a crash would.
    pub(crate) fn before_write(&self) -> Result<(), StoreError> {
        #[cfg(test)]
        self.crash.before_write(&self.db)?;
        Ok(())
    }

    /// Whether `commit` can be written as its events alone, after the snapshot: the
    /// next commit of an unfinished task that stays unfinished and does not come to rest
    /// (a task waiting for a person or queued is snapshotted, so that opening the store
    /// and waking the task read its snapshot alone), its snapshot in the current layout
    /// and fewer than `SNAPSHOT_EVERY` commits old.
    pub(crate) fn appends(
        &self,
        commit: &Encoded<'_>,
        events: &EncodedEvents,
        at: &Position,
    ) -> bool {
        let record = commit.record;
        at.snapshot_current
            && at.since_snapshot() + 1 < SNAPSHOT_EVERY
            && !record.task.status.state.is_terminal()
            && Rest::of(record).is_none()
            && record.version == at.version + 1
            && events.first_seq == at.last_seq + 1
            && record.last_seq == events.last_seq
    }

    /// Writes one commit: appended or with a snapshot (see the module docs).
    pub(crate) fn apply(
        &self,
        commit: &Encoded<'_>,
        expected_version: u64,
    ) -> Result<(), StoreError> {
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
        // Before its first write, a commit takes its task out of the rest index.
        let mut known = self.positions.get(id);
        if let Some(at) = &mut known {
            StoreError::check_version(id, expected_version, at.version)?;
            self.leave_rest(id, Some(at))?;
            if let Some((events, previous)) = appending(at) {
                return self.append(commit, events, &previous, at);
            }
        }
        let old = self.db.get(task_key(id)).map_err(StoreError::engine)?;
        let at = match (known, old.as_deref()) {
            (Some(at), Some(_)) => Some(at),
            (_, bytes) => bytes.map(|b| read::position(&self.db, id, b)).transpose()?,
        };
        let found = at.as_ref().map_or(0, |at| at.version);
        StoreError::check_version(id, expected_version, found)?;
        if known.is_none() && old.is_some() {
            self.leave_rest(id, None)?;
        }
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
    pub(crate) fn append(
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
            .compare_and_swap(&slot, None::<&[u8]>, Some(value))
            .map_err(StoreError::engine)?
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
    pub(crate) fn snapshot(
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
            self.db
                .insert(active_key(id), &[])
                .map_err(StoreError::engine)?;
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
                        .compare_and_swap(&slot, None::<&[u8]>, Some(bytes.as_slice()))
                        .map_err(StoreError::engine)?
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
        if self
            .db
            .compare_and_swap(&key, old, Some(bytes))
            .map_err(StoreError::engine)?
            .is_err()
        {
            if at.is_some() && own_written {
                // This commit is in (its own slot is written, past the snapshot it read):
                // the snapshot swapped in meanwhile is a later commit's, which read it.
                return Ok(());
            }
            return Err(self.conflict(id, expected_version, &written));
        }
        // At rest: indexed, last (see `resting`).
        let rest = Rest::of(record);
        match terminal {
            true => self.positions.forget(id),
            false => self.positions.reached(
                id,
                Position {
                    rest,
                    ..Position::at_snapshot(record.version, record.last_seq, true)
                },
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
            self.db
                .remove(legacy_head_key(id))
                .map_err(StoreError::engine)?;
        }
        if terminal && self.active.leave(id) {
            self.before_write()?;
            self.db.remove(active_key(id)).map_err(StoreError::engine)?;
        }
        if let Some(rest) = rest {
            self.before_write()?;
            let (version, seq) = (record.version, record.last_seq);
            resting::index(&self.db, id, version, seq, &commit.entry, rest)?;
        }
        Ok(())
    }

    /// Before a commit's first write: takes the task out of the rest index if its
    /// position (`None`: not known) says it may be in it.
    fn leave_rest(&self, id: &TaskId, at: Option<&mut Position>) -> Result<(), StoreError> {
        if resting::must_leave(at) {
            self.before_write()?;
            resting::remove(&self.db, id)?;
        }
        Ok(())
    }

    /// A lost race: takes back the events this commit wrote (their slots) and names the
    /// version found.
    pub(crate) fn conflict(&self, id: &TaskId, expected: u64, written: &[Vec<u8>]) -> StoreError {
        self.positions.forget(id);
        for slot in written {
            if let Err(e) = self.db.remove(slot) {
                return StoreError::engine(e);
            }
        }
        let found = match self.db.get(task_key(id)) {
            Ok(Some(bytes)) => match read::position(&self.db, id, &bytes) {
                Ok(at) => at.version,
                Err(e) => return e,
            },
            Ok(None) => 0,
            Err(e) => return StoreError::engine(e),
        };
        StoreError::Conflict {
            task_id: id.clone(),
            expected,
            found,
        }
    }
}
