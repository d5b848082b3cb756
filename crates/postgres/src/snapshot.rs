//! A task's row holds a snapshot of its record and, between snapshots, what brings it to
//! its last commit: the events after the snapshot (in `events`, where every commit's
//! events go anyway), the version (the `version` column, written by every commit) and
//! the checkpoint (the `checkpoint` column). So a commit of a long-running task sends its
//! events and state columns, not its whole record as JSON (which grows with its history
//! and artifacts, and which PostgreSQL parses on every commit).
//!
//! `tail_after` is NULL while the snapshot is the last commit; otherwise it is the seq
//! of the snapshot's last event, and readers replay the events after it, as the sled
//! store replays a snapshot's tail. A commit writes a snapshot when it creates its task,
//! ends it or brings it to rest (so that an ended task, and one waiting for a person,
//! read as one value), or parks it while its run waits idle (the record holds when the
//! wait ends; a later commit's tail clears it), when its events do not follow on from the last commit, and every
//! `SNAPSHOT_EVERY`th version, so that a read replays at most that many commits.

use fundi_runtime::TaskEvent;
use fundi_runtime::approval::at_rest;
use fundi_runtime::replay;
use fundi_runtime::store::{StoreError, TaskRecord};
use serde_json::Value;
use tokio_postgres::types::Json;

use crate::columns::decode_column;

/// A task's record is written whole at least every this many versions.
pub(crate) const SNAPSHOT_EVERY: u64 = 32;

/// The columns a read of a task selects from `tasks` (as `alias`, with a trailing dot,
/// or empty), in the order `decode` takes them: the snapshot, the version, where the
/// tail starts, the checkpoint and the tail's events (NULL without a tail).
pub(crate) fn columns(alias: &str, events: &str) -> String {
    format!(
        "{alias}record, {alias}version, {alias}tail_after, {alias}checkpoint, \
         CASE WHEN {alias}tail_after IS NULL THEN NULL ELSE ARRAY(\
            SELECT e.event FROM {events} e \
            WHERE e.task_id = {alias}id AND e.seq > {alias}tail_after ORDER BY e.seq) END"
    )
}

/// The task read by `columns`, starting at column `at` of `row`: its snapshot with the
/// tail replayed. A snapshot or event that cannot be decoded is an error.
pub(crate) fn decode(row: &tokio_postgres::Row, at: usize) -> Result<TaskRecord, StoreError> {
    let mut record: TaskRecord = decode_column(row, at)?;
    let tail_after: Option<i64> = read(row, at + 2)?;
    if tail_after.is_none() {
        return Ok(record);
    }
    let events: Vec<Json<TaskEvent>> = read(row, at + 4)?;
    for Json(event) in events {
        if event.seq <= record.last_seq {
            continue;
        }
        replay(&mut record.task, &event.kind);
        record.inputs.replay(&record.task, &event.kind);
        record.last_seq = event.seq;
    }
    record.version = read::<i64>(row, at + 1)? as u64;
    record.checkpoint = read::<Option<Json<Value>>>(row, at + 3)?.map(|Json(value)| value);
    // Commits followed the snapshot: the task no longer parks idle (if it did).
    record.idle_until = None;
    Ok(record)
}

fn read<'r, T: tokio_postgres::types::FromSql<'r>>(
    row: &'r tokio_postgres::Row,
    index: usize,
) -> Result<T, StoreError> {
    crate::columns::read_column(row, index, "a stored task")
}

/// What a commit writes of its task's record: all of it, or (`Tail`) the seq of the
/// last event before its own, which starts the tail if the row has none yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    Whole,
    Tail { after: u64 },
}

impl Written {
    /// What the commit of `record` (which read version `expected_version`) with
    /// `events` writes (see the module docs).
    pub(crate) fn of(record: &TaskRecord, expected_version: u64, events: &[TaskEvent]) -> Written {
        let after = match events.first() {
            Some(first) => first.seq.saturating_sub(1),
            None => record.last_seq,
        };
        let follows_on = events.windows(2).all(|pair| pair[1].seq == pair[0].seq + 1)
            && events.last().is_none_or(|last| last.seq == record.last_seq);
        let tail = expected_version != 0
            && record.version == expected_version + 1
            && record.version % SNAPSHOT_EVERY != 0
            && follows_on
            && !at_rest(&record.task.status)
            && record.idle_until.is_none();
        match tail {
            true => Written::Tail { after },
            false => Written::Whole,
        }
    }
}

#[cfg(test)]
mod tests;
