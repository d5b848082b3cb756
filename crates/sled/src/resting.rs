//! Tasks at rest, indexed in sled (`W` task id), so that opening a store finds them in
//! one ordered scan of small values instead of a snapshot read each.
//!
//! A task at rest (waiting for input, for an approver, queued for a slot of its skill, or
//! parked while its run waits idle) can wait for days, and one node may hold a million. Opening the store needs each
//! unfinished task's listing entry and position; read from its snapshot, that is a tree
//! descent, a page read past sled's cache and a decompression per task. So the commit that
//! brings a task to rest writes, after its snapshot, the task's `W` key: the snapshot's
//! version and last seq, and the listing entry. Any later commit of the task removes that
//! key before its own first write. sled recovers a prefix of its log after a crash, so a
//! `W` key found at open names the task's last commit, written whole: the task needs no
//! repair, and its snapshot is not read. A task without one (running, or whose commit a
//! crash cut) is read from its snapshot as before.
//!
//! A task rests queued when its commit leaves it submitted with no approver to wait
//! for: stored to wait for a slot (one with a slot at once is stored working), or of a
//! skill that says itself when its work begins. Either way a restart runs it again in
//! turn, which is all recovery needs to know of it; the key says which of the two
//! submitted kinds it is (an approval's, or a queued one's). A task rests idle when its
//! commit parks it while its run waits idle (`TaskRecord::idle_until`): the key holds
//! when the wait ends, and recovery leaves it parked until then.
//!
//! A task's position says whether and how it is indexed (`Position::rest`), so its next
//! commit removes the key without looking; a commit that finds no position (one of its
//! task's writes failed before) removes it whether or not it is there.
//!
//! Stores written before format 5 have no `W` keys: their first open indexes every
//! task at rest (`open::index_the_rest`).

mod value;

use crate::active_set::active_ids;
use crate::layout::{keyed_id, rest_key};
use crate::positions::Position;
use crate::rest::Rest;
use fundi_runtime::model::TaskId;
use fundi_runtime::store::StoreError;
use fundi_runtime::store::index::IndexEntry;

/// A task found at rest at open.
#[derive(Debug)]
pub(crate) struct Resting {
    pub(crate) position: Position,
    pub(crate) entry: IndexEntry,
}

/// Indexes the task as resting so: its snapshot of `version`, just written, is its last
/// commit. Written after everything else of that commit.
pub(crate) fn index(
    db: &sled::Db,
    id: &TaskId,
    version: u64,
    last_seq: u64,
    entry: &IndexEntry,
    rest: Rest,
) -> Result<(), StoreError> {
    let value = value::encode(version, last_seq, entry, rest);
    db.insert(rest_key(id), value).map_err(StoreError::engine)?;
    Ok(())
}

/// Whether a commit must remove its task's key before its first write: `at` is the
/// task's known position (its flag cleared here), `None` when not known (the key is
/// then removed if it is there).
pub(crate) fn must_leave(at: Option<&mut Position>) -> bool {
    match at {
        Some(at) => at.rest.take().is_some(),
        None => true,
    }
}

/// Takes the task out of the index.
pub(crate) fn remove(db: &sled::Db, id: &TaskId) -> Result<(), StoreError> {
    db.remove(rest_key(id)).map_err(StoreError::engine)?;
    Ok(())
}

/// The active set at open, split: the tasks indexed as at rest, and the ids of the
/// others (to be read from their snapshots), both in id order. A `W` key of a task
/// outside the active set, or one that cannot be read, is removed: the index is derived
/// data, and such a task is read from its snapshot if it is unfinished.
pub(crate) fn split_active_set(db: &sled::Db) -> Result<(Vec<Resting>, Vec<TaskId>), StoreError> {
    // The two scans read different pages: one on each core.
    let (active, indexed) = std::thread::scope(|scope| {
        let indexed = scope.spawn(|| read_index(db));
        let active = active_ids(db);
        let indexed = indexed
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (active, indexed)
    });
    let (active, indexed) = (active?, indexed?);
    let (mut resting, mut others) = (Vec::with_capacity(indexed.len()), Vec::new());
    let mut indexed = indexed.into_iter().peekable();
    for id in active {
        let mut found = None;
        while let Some(task) = indexed.next_if(|task| task.entry.task_id <= id) {
            match task.entry.task_id == id {
                true => found = Some(task),
                false => remove_stray(db, &task.entry.task_id)?,
            }
        }
        match found {
            Some(task) => resting.push(task),
            None => others.push(id),
        }
    }
    for task in indexed {
        remove_stray(db, &task.entry.task_id)?;
    }
    Ok((resting, others))
}

/// Every task indexed at rest, in id order. An entry that cannot be read is removed:
/// its task is read from its snapshot.
fn read_index(db: &sled::Db) -> Result<Vec<Resting>, StoreError> {
    let mut decoder = value::Decoder::default();
    let mut found = Vec::new();
    for item in db.scan_prefix(b"W") {
        let (key, value) = item.map_err(StoreError::engine)?;
        let id = keyed_id(&key);
        match decoder.decode(id.clone(), &value) {
            Ok(task) => found.push(task),
            Err(error) => {
                tracing::warn!(task_id = %id, %error, "a task's rest index entry cannot be read: the task is read from its snapshot");
                db.remove(key).map_err(StoreError::engine)?;
            }
        }
    }
    Ok(found)
}

/// A `W` value read back (tests check the index against the tasks).
#[cfg(test)]
pub(crate) fn decode(id: TaskId, value: &[u8]) -> Result<Resting, StoreError> {
    value::Decoder::default().decode(id, value)
}

/// Removes the `W` key of a task outside the active set (terminal, or gone).
fn remove_stray(db: &sled::Db, id: &TaskId) -> Result<(), StoreError> {
    tracing::warn!(task_id = %id, "a task indexed at rest is not in the active set: its index entry is removed");
    db.remove(rest_key(id)).map_err(StoreError::engine)?;
    Ok(())
}
