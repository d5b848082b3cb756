//! The `E` values of the sled store (see `layout`): a task's commits past its snapshot.
//!
//! An `E` value written since format 3 is a whole commit: a tag byte (1), the commit's
//! version and last seq (u64 BE each), the task's checkpoint as of the commit (a u32 BE
//! length and JSON; length 0: none), then its events as a JSON array. The commits after
//! the snapshot's last seq (its tail) are committed too: the task is its snapshot with
//! their events replayed, their version and their checkpoint (`store`). Events
//! moved out of a snapshot are kept as a JSON array alone; a store before format 3 holds
//! events alone in every `E` value (a JSON array, or one event).

use fundi_runtime::model::TaskEvent;
use fundi_runtime::store::StoreError;

/// A commit's events as one JSON array: an `E` value, or what `Inline::then` appends.
pub(crate) fn encode_events(events: &[TaskEvent]) -> Result<Vec<u8>, StoreError> {
    Ok(serde_json::to_vec(events)?)
}

/// The events of one `E` value.
pub(crate) fn decode_events(bytes: &[u8]) -> Result<Vec<TaskEvent>, StoreError> {
    Ok(match bytes.first() {
        Some(&COMMIT_TAG) => serde_json::from_slice(commit_parts(bytes)?.1)?,
        Some(b'[') => serde_json::from_slice(bytes)?,
        _ => vec![serde_json::from_slice(bytes)?],
    })
}

/// The first byte of an `E` value holding a whole commit (an older value starts with
/// `[` or `{`).
const COMMIT_TAG: u8 = 1;

/// Where a commit value's checkpoint starts: after its tag, version and last seq.
const COMMIT_WORDS_END: usize = 17;

/// A commit as an `E` value (see the module docs): `events` as `encode_events` wrote
/// them, and the checkpoint as JSON.
pub(crate) fn encode_commit(
    version: u64,
    last_seq: u64,
    checkpoint: Option<&[u8]>,
    events: &[u8],
) -> Result<Vec<u8>, StoreError> {
    let checkpoint = checkpoint.unwrap_or_default();
    let len = u32::try_from(checkpoint.len())
        .map_err(|_| StoreError::damaged("checkpoint over 4 GiB"))?;
    let mut bytes = Vec::with_capacity(COMMIT_WORDS_END + 4 + checkpoint.len() + events.len());
    bytes.push(COMMIT_TAG);
    bytes.extend_from_slice(&version.to_be_bytes());
    bytes.extend_from_slice(&last_seq.to_be_bytes());
    bytes.extend_from_slice(&len.to_be_bytes());
    bytes.extend_from_slice(checkpoint);
    bytes.extend_from_slice(events);
    Ok(bytes)
}

/// The version and last seq of a commit value (`None`: an older value, events alone).
pub(crate) fn commit_versions(bytes: &[u8]) -> Result<Option<(u64, u64)>, StoreError> {
    if bytes.first() != Some(&COMMIT_TAG) {
        return Ok(None);
    }
    Ok(Some((word(bytes, 1)?, word(bytes, 9)?)))
}

/// Reads the big-endian u64 at `at` of a commit value.
fn word(bytes: &[u8], at: usize) -> Result<u64, StoreError> {
    super::u64_at(bytes, at).ok_or_else(shorter_than_header)
}

fn shorter_than_header() -> StoreError {
    StoreError::damaged("commit value shorter than its header")
}

/// A commit value's checkpoint JSON (empty: none) and events JSON.
fn commit_parts(bytes: &[u8]) -> Result<(&[u8], &[u8]), StoreError> {
    let damaged = shorter_than_header;
    let len = super::u32_at(bytes, COMMIT_WORDS_END).ok_or_else(damaged)? as usize;
    let at = COMMIT_WORDS_END + 4;
    let checkpoint = bytes.get(at..at + len).ok_or_else(damaged)?;
    Ok((checkpoint, &bytes[at + len..]))
}

/// One commit of a task's tail, decoded.
#[derive(Debug)]
pub(crate) struct Commit {
    pub(crate) version: u64,
    pub(crate) last_seq: u64,
    /// The task's checkpoint as of this commit.
    pub(crate) checkpoint: Option<serde_json::Value>,
    pub(crate) events: Vec<TaskEvent>,
}

impl Commit {
    /// A commit value; an older value (events alone) is not one, and is an error.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Commit, StoreError> {
        let (version, last_seq) = commit_versions(bytes)?.ok_or_else(|| {
            StoreError::damaged("an event value past the snapshot is not a commit")
        })?;
        let (checkpoint, events) = commit_parts(bytes)?;
        Ok(Commit {
            version,
            last_seq,
            checkpoint: match checkpoint.is_empty() {
                true => None,
                false => Some(serde_json::from_slice(checkpoint)?),
            },
            events: serde_json::from_slice(events)?,
        })
    }
}
