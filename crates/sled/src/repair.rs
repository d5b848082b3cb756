//! Repair of a sled store that was not closed cleanly (a crash, a kill, a power cut).
//!
//! A commit writes its pieces in order (see `store`), and sled recovers a prefix of
//! its log, so a crash leaves at most the last commit of each task half done, and only
//! for tasks in the active set. A task indexed at rest needs nothing: its index entry
//! is written after the rest of its last commit, and removed before any later commit's
//! first write (see `resting`). For each of the others, the snapshot decides:
//!
//! - no snapshot: the task's first commit never happened; its events and active-set entry
//!   go;
//! - values holding events the snapshot still carries itself go (a cut commit was moving
//!   them out), and so do values past the snapshot in the layout before commit values
//!   (an older build's cut commit: its events, never committed);
//! - commit values past the snapshot are commits (the snapshot may be behind them by
//!   design, or a crash cut a commit between its events and its snapshot): the task is
//!   its snapshot with them replayed; if that is terminal, its snapshot is written now;
//! - the listing entry is brought to the task's: into the in-memory index of unfinished
//!   tasks, or into sled's (the header of `T` names the entry before it when that one
//!   was in sled's index, where a cut commit may have left it);
//! - a terminal task leaves the active set.
//!
//! An unfinished task's listing entry and log position go into memory as they are
//! mended: a repaired store opens without a second pass over the active set.
//!
//! The store then rebuilds the task counts (in memory, saved only at a clean close) from
//! the listing entries. The cost is one pass over the active set and one over the
//! index, paid only after an unclean stop.

use crate::commit::TaskTable;
use crate::layout::{
    Header, active_key, commit_versions, encode_record, event_key, event_prefix, is_current,
    legacy_head_key, task_key,
};
use crate::live_index::is_persisted;
use crate::positions::Position;
use crate::quarantine::Quarantine;
use crate::read::{self, tail_range};
use fundi_runtime::store::StoreError;
use fundi_runtime::store::index::IndexEntry;

use fundi_runtime::model::{TaskId, TaskState};

/// What a repair found and mended.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Repaired {
    /// Active-set entries looked at (those not indexed at rest).
    pub(crate) checked: usize,
    /// Event values (a commit's events each) dropped because their commit never
    /// happened.
    pub(crate) uncommitted_events: usize,
    /// Tasks whose first commit never happened.
    pub(crate) uncreated_tasks: usize,
    /// Tasks whose last commit was in, but not its snapshot (written by repair).
    pub(crate) snapshots_written: usize,
    /// Tasks that could not be read, set aside (see `quarantine`).
    pub(crate) set_aside: usize,
}

/// Repairs these tasks of the active set: those not indexed at rest, whose last
/// commit a crash may have cut (see `resting`).
pub(crate) fn repair(
    tasks: &TaskTable,
    quarantine: &Quarantine,
    ids: &[TaskId],
) -> Result<Repaired, StoreError> {
    let started = std::time::Instant::now();
    let mut repaired = Repaired::default();
    for id in ids {
        repaired.checked += 1;
        match repair_task(tasks, id, &mut repaired) {
            Ok(()) => {}
            // Unreadable: set aside, and the rest repaired all the same.
            Err(error @ StoreError::Codec { .. }) => {
                quarantine.set_aside(tasks, id, &error)?;
                repaired.set_aside += 1;
            }
            Err(error) => return Err(error),
        }
    }
    tracing::info!(
        checked = repaired.checked,
        uncommitted_events = repaired.uncommitted_events,
        uncreated_tasks = repaired.uncreated_tasks,
        snapshots_written = repaired.snapshots_written,
        set_aside = repaired.set_aside,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "store was not closed cleanly: repaired"
    );
    Ok(repaired)
}

/// Repairs one task of the active set (see the module docs).
fn repair_task(tasks: &TaskTable, id: &TaskId, repaired: &mut Repaired) -> Result<(), StoreError> {
    let db = &tasks.db;
    let Some(bytes) = db.get(task_key(id)).map_err(StoreError::engine)? else {
        for key in db.scan_prefix(event_prefix(id)).keys() {
            db.remove(key.map_err(StoreError::engine)?)
                .map_err(StoreError::engine)?;
            repaired.uncommitted_events += 1;
        }
        db.remove(active_key(id)).map_err(StoreError::engine)?;
        repaired.uncreated_tasks += 1;
        return Ok(());
    };
    let header = Header::read(&bytes)?;
    // Each range below is looked into only when its first key is there: a cut move
    // writes its copy at the first event's slot, and a tail starts right after the
    // snapshot (sled recovers a prefix of what was written, in order). A point lookup
    // costs far less than a range, which matters with a million tasks at rest.
    let present = |seq: u64| {
        db.contains_key(event_key(id, seq))
            .map_err(StoreError::engine)
    };
    if header.inline_through > 0 && present(1)? {
        let copies = event_key(id, 0)..=event_key(id, header.inline_through);
        for key in db.range(copies).keys() {
            db.remove(key.map_err(StoreError::engine)?)
                .map_err(StoreError::engine)?;
            repaired.uncommitted_events += 1;
        }
    }
    // Past the snapshot, a commit value is a commit; an older value holds the events
    // of a commit an older build never finished.
    let mut tail = false;
    let after_snapshot = header.last_seq.saturating_add(1);
    let tail_values = match present(after_snapshot)? {
        true => Some(db.range(tail_range(id, header.last_seq))),
        false => None,
    };
    for item in tail_values.into_iter().flatten() {
        let (key, value) = item.map_err(StoreError::engine)?;
        match commit_versions(&value)? {
            Some(_) => tail = true,
            None => {
                db.remove(key).map_err(StoreError::engine)?;
                repaired.uncommitted_events += 1;
            }
        }
    }
    let mut at = Position::at_snapshot(header.version, header.last_seq, is_current(&bytes));
    let entry: IndexEntry = match tail {
        false => serde_json::from_slice(&header.entry)?,
        true => {
            let record = read::with_tail(db, header.record(&bytes)?)?;
            let entry = IndexEntry::of(&record);
            if record.state().is_terminal() {
                // Cut between its events and its snapshot, a task's last commit:
                // its snapshot is written now, as readers expect of a terminal task.
                let json = serde_json::to_vec(&record)?;
                let entry_json = serde_json::to_vec(&entry)?;
                let previous = header.previous.as_deref();
                let inline = header.inline(&bytes);
                let snapshot = encode_record(&record, &json, &entry_json, previous, &inline)?;
                db.insert(task_key(id), snapshot)
                    .map_err(StoreError::engine)?;
                repaired.snapshots_written += 1;
            }
            (at.version, at.last_seq) = (record.version, record.last_seq);
            entry
        }
    };
    let previous: Option<IndexEntry> = header
        .previous
        .as_deref()
        .map(serde_json::from_slice)
        .transpose()?;
    // Only an entry kept in sled is written out (the counts are rebuilt after repair).
    let entry_bytes = match is_persisted(&entry) {
        true => serde_json::to_vec(&entry)?,
        false => Vec::new(),
    };
    tasks.move_entry(id, at.version, previous.as_ref(), &entry, &entry_bytes)?;
    if !is_persisted(&entry) {
        tasks.positions.reached(id, at);
    }
    if header.legacy {
        db.remove(legacy_head_key(id)).map_err(StoreError::engine)?;
    }
    if entry.state().is_some_and(TaskState::is_terminal) {
        db.remove(active_key(id)).map_err(StoreError::engine)?;
    }
    Ok(())
}
