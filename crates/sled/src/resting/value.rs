//! The bytes of a `W` value: the snapshot's version and last seq (u64 BE each), then the
//! task's listing entry: its update time (i64 BE), state (u8), context id, owner and
//! skill (each a u32 BE length and UTF-8; length `u32::MAX`: none); then, for a task
//! queued for a slot, one byte `QUEUED`, for a task parked idle, one byte `IDLE` and the
//! end of its wait (i64 BE, ms since the epoch), and for one that waits for a person,
//! nothing. The task's id is the key's. Binary, not JSON: an open decodes a million of
//! them. A build that knows no `IDLE` finds such a value damaged, removes it and reads
//! the task from its snapshot: the index is derived data.

use std::collections::HashMap;

use fundi_runtime::model::{ContextId, SkillId, TaskId, TaskState, UserId};
use fundi_runtime::store::StoreError;
use fundi_runtime::store::index::IndexEntry;

use super::Resting;
use crate::positions::Position;
use crate::rest::Rest;

const NONE: u32 = u32::MAX;

/// The last byte of a queued task's value.
const QUEUED: u8 = 1;

/// The byte before the wait's end in an idle task's value.
const IDLE: u8 = 2;

/// The value indexing `entry`'s task resting as `rest`, its snapshot of `version` (last
/// event `last_seq`) its last commit.
pub(crate) fn encode(version: u64, last_seq: u64, entry: &IndexEntry, rest: Rest) -> Vec<u8> {
    let mut value = Vec::with_capacity(64 + entry.context_id.as_str().len());
    value.extend_from_slice(&version.to_be_bytes());
    value.extend_from_slice(&last_seq.to_be_bytes());
    value.extend_from_slice(&entry.ts_ms.to_be_bytes());
    value.push(entry.state);
    for text in [
        Some(entry.context_id.as_str()),
        entry.owner.as_deref(),
        entry.skill.as_ref().map(SkillId::as_str),
    ] {
        match text {
            // An id is far below 4 GiB (a request is limited well before); were one not,
            // its value would not decode, and the task be read from its snapshot.
            Some(text) => {
                let len = u32::try_from(text.len()).unwrap_or(NONE - 1);
                value.extend_from_slice(&len.to_be_bytes());
                value.extend_from_slice(&text.as_bytes()[..len as usize]);
            }
            None => value.extend_from_slice(&NONE.to_be_bytes()),
        }
    }
    match rest {
        Rest::Waiting => {}
        Rest::Queued => value.push(QUEUED),
        Rest::Idle { until_ms } => {
            value.push(IDLE);
            value.extend_from_slice(&until_ms.to_be_bytes());
        }
    }
    value
}

/// Decodes the values of one scan: owners and skills are few, so each distinct one is
/// allocated once and shared by the entries that name it.
#[derive(Default)]
pub(crate) struct Decoder {
    owners: HashMap<Box<str>, UserId>,
    skills: HashMap<Box<str>, SkillId>,
}

impl Decoder {
    /// The task `id` as its `W` value says.
    pub(crate) fn decode(&mut self, id: TaskId, value: &[u8]) -> Result<Resting, StoreError> {
        let mut bytes = Bytes {
            id: &id,
            value,
            at: 0,
        };
        let version = u64::from_be_bytes(bytes.take()?);
        let last_seq = u64::from_be_bytes(bytes.take()?);
        let ts_ms = i64::from_be_bytes(bytes.take()?);
        let [state] = bytes.take()?;
        let context_id = ContextId::from(bytes.text()?.ok_or_else(|| bytes.damaged())?);
        let owner = bytes.text()?.map(|o| shared(&mut self.owners, o));
        let skill = bytes.text()?.map(|s| shared(&mut self.skills, s));
        let rest = match bytes.at < value.len() {
            false => Rest::Waiting,
            true => match bytes.take::<1>()? {
                [QUEUED] => Rest::Queued,
                [IDLE] => Rest::Idle {
                    until_ms: i64::from_be_bytes(bytes.take()?),
                },
                _ => return Err(bytes.damaged()),
            },
        };
        let submitted = state == TaskState::Submitted.number();
        if bytes.at != value.len() || (rest == Rest::Queued && !submitted) {
            return Err(bytes.damaged());
        }
        let mut position = Position::at_snapshot(version, last_seq, true);
        position.rest = Some(rest);
        let entry = IndexEntry {
            ts_ms,
            task_id: id,
            context_id,
            state,
            owner,
            skill,
        };
        Ok(Resting { position, entry })
    }
}

/// The one id of `text` in `known`, made once.
fn shared<T: Clone + for<'a> From<&'a str>>(known: &mut HashMap<Box<str>, T>, text: &str) -> T {
    if let Some(id) = known.get(text) {
        return id.clone();
    }
    let id = T::from(text);
    known.insert(text.into(), id.clone());
    id
}

/// A `W` value being read.
struct Bytes<'a> {
    id: &'a TaskId,
    value: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    fn damaged(&self) -> StoreError {
        StoreError::damaged(format!("task {}: its rest index value is damaged", self.id))
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], StoreError> {
        let bytes = self
            .value
            .get(self.at..self.at + N)
            .and_then(|b| <[u8; N]>::try_from(b).ok())
            .ok_or_else(|| self.damaged())?;
        self.at += N;
        Ok(bytes)
    }

    fn text(&mut self) -> Result<Option<&'a str>, StoreError> {
        let len = u32::from_be_bytes(self.take()?);
        if len == NONE {
            return Ok(None);
        }
        let end = self.at + len as usize;
        let bytes = self.value.get(self.at..end).ok_or_else(|| self.damaged())?;
        let text = std::str::from_utf8(bytes).map_err(|_| self.damaged())?;
        self.at = end;
        Ok(Some(text))
    }
}
