//! Reading a sled store's tasks: a task's snapshot with the commits after it replayed
//! (its tail), and where its log ends. Only the database is read, and the positions of
//! unfinished tasks that spare a look for a tail.

use crate::layout::{
    Commit, commit_versions, decode_record, event_key, is_current, record_versions, task_key,
};
use crate::positions::{Position, Positions};
use fundi_runtime::model::TaskId;
use fundi_runtime::replay;
use fundi_runtime::store::{StoreError, TaskRecord};

/// Where the task's log ends, read from sled: its snapshot (`T` value) and tail.
#[inline]
pub(crate) fn position(
    db: &sled::Db,
    id: &TaskId,
    snapshot: &[u8],
) -> Result<Position, StoreError> {
    let (version, last_seq) = record_versions(snapshot)?;
    let at_snapshot = Position::at_snapshot(version, last_seq, is_current(snapshot));
    if !has_tail(db, id, last_seq)? {
        return Ok(at_snapshot);
    }
    let Some(last) = db.range(tail_range(id, last_seq)).next_back() else {
        return Ok(at_snapshot);
    };
    let (_, bytes) = last.map_err(StoreError::engine)?;
    let (version, last_seq) = commit_versions(&bytes)?.ok_or_else(|| {
        StoreError::damaged(format!(
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
#[inline]
pub(crate) fn task(
    db: &sled::Db,
    positions: &Positions,
    id: &TaskId,
) -> Result<Option<TaskRecord>, StoreError> {
    let Some(bytes) = db.get(task_key(id)).map_err(StoreError::engine)? else {
        return Ok(None);
    };
    let record = decode_record(&bytes)?;
    // A terminal task's snapshot is its last commit (repair makes it so after a
    // crash); so is an unfinished one's that this store wrote last.
    let settled = record.state().is_terminal()
        || positions
            .get(id)
            .is_some_and(|at| at.is_snapshot(record.last_seq));
    match settled || !has_tail(db, id, record.last_seq)? {
        true => Ok(Some(record)),
        false => with_tail(db, record).map(Some),
    }
}

/// Whether commits follow the task's snapshot, whose last event is `last_seq`: the
/// first would be in the next slot. (A point read: a range scan costs sled a copy
/// of a tree node.)
#[inline]
pub(crate) fn has_tail(db: &sled::Db, id: &TaskId, last_seq: u64) -> Result<bool, StoreError> {
    let next = last_seq.saturating_add(1);
    db.contains_key(event_key(id, next))
        .map_err(StoreError::engine)
}

/// `record` (a snapshot) with the commits of its tail replayed: their events (as
/// they were applied when committed), versions and checkpoints.
#[inline]
pub(crate) fn with_tail(db: &sled::Db, mut record: TaskRecord) -> Result<TaskRecord, StoreError> {
    for item in db.range(tail_range(record.id(), record.last_seq)) {
        let (_, bytes) = item.map_err(StoreError::engine)?;
        let commit = Commit::decode(&bytes)?;
        for event in commit.events.iter().filter(|e| e.seq > record.last_seq) {
            replay(&mut record.task, &event.kind);
            record.inputs.replay(&record.task, &event.kind);
        }
        record.version = commit.version;
        record.last_seq = commit.last_seq;
        record.checkpoint = commit.checkpoint;
        // A commit after the snapshot: the task no longer parks idle (if it did).
        record.idle_until = None;
    }
    Ok(record)
}

/// The keys of the commits after a snapshot whose last event is `last_seq` (its tail).
#[inline]
pub(crate) fn tail_range(id: &TaskId, last_seq: u64) -> std::ops::RangeInclusive<Vec<u8>> {
    event_key(id, last_seq.saturating_add(1))..=event_key(id, u64::MAX)
}
