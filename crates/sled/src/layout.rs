//! How the sled store lays tasks out: keys, and the encoding of the values that have a
//! binary part. One tree, byte-ordered keys:
//!
//! | key                                    | value        |
//! |----------------------------------------|--------------|
//! | `T` task id                            | header (see `snapshot`), then the `TaskRecord` as JSON, compressed with the header's parts |
//! | `E` task id `\0` seq (u64 BE)          | the commit whose first event is `seq` (see `commit_values`), for the events not in the header; in older stores its events alone, as a JSON array or one `TaskEvent` |
//! | `U` update ms (i64 BE, biased) task id | `IndexEntry` of a terminal task |
//! | `C` context id `\0` update ms task id  | `IndexEntry` of a terminal task |
//! | `A` task id                            | (empty): the task may not be terminal (written lazily, see `active_set`) |
//! | `N` scope `\0` state (u8)              | count of tasks (u64 BE), saved at a clean close; scope `=owner` or empty for all owners, state 0 for any |
//! | `D` owner (u32 BE length, `u32::MAX`: none, then its bytes) first message id | when the task was created (i64 BE ms), then its id: the task this owner created with this first message (`TaskStore::created_by`); written before the task's commit point, so an entry may name a task a crash kept out |
//! | `R` task id                            | a removal under way (retention, see `retention`): the task's listing entry, then its `D` key |
//! | `W` task id                            | a task at rest whose snapshot is its last commit: that snapshot's version and last seq (u64 BE each), then the task's listing entry in binary, and a last byte for a task queued for a slot, or a byte and the end of its wait (i64 BE ms) for a task parked idle (see `resting/value.rs`) |
//! | `Mclean`                               | (empty): the store was closed cleanly |
//! | `Mlive`                                | (empty): `U` and `C` hold terminal tasks only |
//! | `Mswept`                               | a task id: every unfinished task with an id at or below it has its `A` key |
//! | `Mformat`                              | the store's format (u64 BE, see `STORE_FORMAT`); none: written before it |
//!
//! `T` values (a task's snapshot and its header, and the older layouts still read) are
//! laid out in `snapshot`; `E` values (its commits past the snapshot) in
//! `commit_values`.

use fundi_runtime::model::{ContextId, TaskId};
use fundi_runtime::store::StoreError;
use fundi_runtime::store::index::IndexEntry;

mod commit_values;
mod snapshot;

pub(crate) use commit_values::{
    Commit, commit_versions, decode_events, encode_commit, encode_events,
};
#[cfg(test)]
pub(crate) use snapshot::WORDS_END;
pub(crate) use snapshot::{
    Header, Inline, decode_record, encode_record, is_current, record_versions,
};

pub(crate) const CLEAN_MARKER: &[u8] = b"Mclean";

/// The big-endian u64 at `at` of a value, if the value reaches that far.
fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let word = bytes.get(at..at.checked_add(8)?)?;
    Some(u64::from_be_bytes(word.try_into().ok()?))
}

/// The big-endian u32 at `at` of a value (a length), if the value reaches that far.
fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let word = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes(word.try_into().ok()?))
}

/// Unfinished tasks' listing entries are kept in memory (`live_index`), not in `U` and
/// `C`; stores written before hold every task's there until their first open since.
pub(crate) const LIVE_MARKER: &[u8] = b"Mlive";

/// The active set's watermark (see `active_set`); stores written before it have every
/// unfinished task's marker.
pub(crate) const WATERMARK_KEY: &[u8] = b"Mswept";

/// The store's format, written at every open: a build refuses a store whose format is
/// newer than its own instead of misreading it.
pub(crate) const FORMAT_KEY: &[u8] = b"Mformat";

/// The newest format this build reads and writes: 5, tasks at rest are indexed in `W`
/// (4: a task's events may be messages queued for its run and the run taking them, and
/// its record where they are in the history; 3: a commit may write its events alone,
/// after the snapshot; 2: snapshots are compressed; 1: snapshots carry their task's
/// first events). A build before 5 would commit such a task without removing its `W`
/// key, leaving it to name a snapshot that is no longer the task's last; one before 4
/// could not decode such events, and one before 3 would read such a task as it was at
/// its snapshot, so they must refuse the store. Stores without `FORMAT_KEY` were written
/// before it (and are read), as are values in every older layout: a store moves to the
/// current one a task at a time, as each task commits (the first open of a store
/// before 5 indexes its tasks at rest, see `resting`).
pub(crate) const STORE_FORMAT: u64 = 5;

/// The first format whose tasks at rest are indexed in `W`.
pub(crate) const RESTING_FORMAT: u64 = 5;

pub(crate) fn task_key(id: &TaskId) -> Vec<u8> {
    [b"T", id.as_str().as_bytes()].concat()
}

/// The key of the task `owner` created with first message `message_id`.
pub(crate) fn created_key(owner: Option<&str>, message_id: &str) -> Vec<u8> {
    let mut key = vec![b'D'];
    match owner {
        Some(owner) => {
            let len = u32::try_from(owner.len()).unwrap_or(u32::MAX - 1);
            key.extend_from_slice(&len.to_be_bytes());
            key.extend_from_slice(owner.as_bytes());
        }
        None => key.extend_from_slice(&u32::MAX.to_be_bytes()),
    }
    key.extend_from_slice(message_id.as_bytes());
    key
}

/// A `D` value: when the task was created, and its id.
pub(crate) fn encode_created(id: &TaskId, at: chrono::DateTime<chrono::Utc>) -> Vec<u8> {
    [
        &at.timestamp_millis().to_be_bytes()[..],
        id.as_str().as_bytes(),
    ]
    .concat()
}

/// A `D` value read back.
pub(crate) fn decode_created(
    bytes: &[u8],
) -> Result<(TaskId, chrono::DateTime<chrono::Utc>), StoreError> {
    let damaged = || StoreError::damaged("a first-message entry is damaged");
    let (ms, id) = bytes.split_at_checked(8).ok_or_else(damaged)?;
    let ms = i64::from_be_bytes(ms.try_into().map_err(|_| damaged())?);
    let at = chrono::DateTime::from_timestamp_millis(ms).ok_or_else(damaged)?;
    let id = std::str::from_utf8(id).map_err(|_| damaged())?;
    Ok((TaskId::from(id), at))
}

/// The key that indexes a task at rest (see `resting`).
pub(crate) fn rest_key(id: &TaskId) -> Vec<u8> {
    [b"W", id.as_str().as_bytes()].concat()
}

pub(crate) fn active_key(id: &TaskId) -> Vec<u8> {
    [b"A", id.as_str().as_bytes()].concat()
}

/// The task a key of one letter and a task id names (`A`, `W`, `T`).
pub(crate) fn keyed_id(key: &[u8]) -> TaskId {
    TaskId::from(String::from_utf8_lossy(&key[1..]).into_owned())
}

pub(crate) fn event_prefix(id: &TaskId) -> Vec<u8> {
    [b"E", id.as_str().as_bytes(), b"\0"].concat()
}

pub(crate) fn event_key(id: &TaskId, seq: u64) -> Vec<u8> {
    [event_prefix(id).as_slice(), &seq.to_be_bytes()].concat()
}

/// The entry of a `U` or `C` item.
pub(crate) fn decode_entry(
    item: sled::Result<(sled::IVec, sled::IVec)>,
) -> Result<IndexEntry, StoreError> {
    let (_, value) = item.map_err(StoreError::engine)?;
    Ok(serde_json::from_slice(&value)?)
}

/// Milliseconds as big-endian bytes that sort like the signed number.
fn ts_bytes(ts_ms: i64) -> [u8; 8] {
    ((ts_ms as u64) ^ (1 << 63)).to_be_bytes()
}

pub(crate) fn updated_key(entry: &IndexEntry) -> Vec<u8> {
    [
        b"U".as_slice(),
        &ts_bytes(entry.ts_ms),
        entry.task_id.as_str().as_bytes(),
    ]
    .concat()
}

pub(crate) fn context_prefix(context: &ContextId) -> Vec<u8> {
    [b"C", context.as_str().as_bytes(), b"\0"].concat()
}

pub(crate) fn context_key(entry: &IndexEntry) -> Vec<u8> {
    [
        context_prefix(&entry.context_id).as_slice(),
        &ts_bytes(entry.ts_ms),
        entry.task_id.as_str().as_bytes(),
    ]
    .concat()
}

/// The key of a task count: by owner (`None`: every owner) and state (`None`: any).
pub(crate) fn count_key(owner: Option<&str>, state: Option<u8>) -> Vec<u8> {
    let mut key = vec![b'N'];
    if let Some(owner) = owner {
        key.push(b'=');
        key.extend_from_slice(owner.as_bytes());
    }
    key.push(0);
    key.push(state.unwrap_or(0));
    key
}

/// The counts a task of `owner` in `state` adds to (+1) or leaves (-1); `with_any`: the
/// state-free counts too (a task joins those once and never leaves them).
pub(crate) fn count_keys(owner: Option<&str>, state: u8, with_any: bool) -> Vec<Vec<u8>> {
    let mut keys = vec![count_key(None, Some(state))];
    if let Some(owner) = owner {
        keys.push(count_key(Some(owner), Some(state)));
    }
    if with_any {
        keys.push(count_key(None, None));
        if let Some(owner) = owner {
            keys.push(count_key(Some(owner), None));
        }
    }
    keys
}

pub(crate) fn read_count(bytes: &[u8]) -> u64 {
    <[u8; 8]>::try_from(bytes)
        .map(u64::from_be_bytes)
        .unwrap_or(0)
}

/// `V` task id: where stores before the `T` header kept the indexed entry (removed at
/// the task's next commit).
pub(crate) fn legacy_head_key(id: &TaskId) -> Vec<u8> {
    [b"V", id.as_str().as_bytes()].concat()
}
