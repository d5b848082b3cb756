//! Repair of a sled store that was not closed cleanly (a crash, a kill, a power cut).
//!
//! A commit writes its pieces in order (see `sled_store`), and sled recovers a prefix of
//! its log, so a crash leaves at most the last commit of each task half done, and only
//! for tasks in the active set. For each of those, the snapshot decides:
//!
//! - no snapshot: the task's first commit never happened; its events and active-set entry
//!   go;
//! - events past the snapshot's last sequence number were never committed; they go, and
//!   so do values holding events the snapshot still carries itself (a cut commit was
//!   moving them out);
//! - the listing entry is brought to the snapshot's: into the in-memory index of
//!   unfinished tasks, or into sled's (the header of `T` names the entry before it when
//!   that one was in sled's index, where a cut commit may have left it);
//! - a terminal task leaves the active set.
//!
//! The store then rebuilds the task counts (in memory, saved only at a clean close) from
//! the listing entries. The cost is one pass over the active set and one over the
//! index, paid only after an unclean stop.

use super::index::IndexEntry;
use super::sled_layout::{Header, active_key, event_key, event_prefix, legacy_head_key, task_key};
use super::{SledStore, StoreError};
use crate::model::TaskState;

/// What a repair found and mended.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Repaired {
    /// Active-set entries looked at.
    pub(super) checked: usize,
    /// Event values (a commit's events each) dropped because their commit never
    /// happened.
    pub(super) uncommitted_events: usize,
    /// Tasks whose first commit never happened.
    pub(super) uncreated_tasks: usize,
}

pub(super) fn repair(store: &SledStore) -> Result<Repaired, StoreError> {
    let started = std::time::Instant::now();
    let db = &store.db;
    let mut repaired = Repaired::default();
    for id in store.active_ids()? {
        repaired.checked += 1;
        let Some(bytes) = db.get(task_key(&id))? else {
            for key in db.scan_prefix(event_prefix(&id)).keys() {
                db.remove(key?)?;
                repaired.uncommitted_events += 1;
            }
            db.remove(active_key(&id))?;
            repaired.uncreated_tasks += 1;
            continue;
        };
        let header = Header::read(&bytes)?;
        let last_seq = header.last_seq;
        let mut stray = Vec::new();
        if header.inline_through > 0 {
            stray.push(event_key(&id, 0)..=event_key(&id, header.inline_through));
        }
        if last_seq < u64::MAX {
            stray.push(event_key(&id, last_seq + 1)..=event_key(&id, u64::MAX));
        }
        for range in stray {
            for key in db.range(range).keys() {
                db.remove(key?)?;
                repaired.uncommitted_events += 1;
            }
        }
        let entry: IndexEntry = serde_json::from_slice(&header.entry)?;
        let previous: Option<IndexEntry> = header
            .previous
            .as_deref()
            .map(serde_json::from_slice)
            .transpose()?;
        let old = header.previous.as_deref().zip(previous.as_ref());
        store.reindex(&id, header.version, old, &entry, &header.entry)?;
        if header.legacy {
            db.remove(legacy_head_key(&id))?;
        }
        if TaskState::from_number(entry.state.into()).is_some_and(TaskState::is_terminal) {
            db.remove(active_key(&id))?;
        }
    }
    tracing::info!(
        checked = repaired.checked,
        uncommitted_events = repaired.uncommitted_events,
        uncreated_tasks = repaired.uncreated_tasks,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "store was not closed cleanly: repaired"
    );
    Ok(repaired)
}
