//! A commit encoded once, before any write: its listing entry, checkpoint and events as
//! the bytes `commit` writes.

use crate::layout::{encode_commit, encode_events};
use fundi_runtime::model::TaskEvent;
use fundi_runtime::store::index::IndexEntry;
use fundi_runtime::store::{StoreError, TaskRecord};

/// A commit, encoded before any write (but for its snapshot, which most commits of a
/// long-running task do not write).
pub(crate) struct Encoded<'a> {
    pub(crate) record: &'a TaskRecord,
    /// The record's checkpoint, as JSON.
    pub(crate) checkpoint: Option<Vec<u8>>,
    pub(crate) entry: IndexEntry,
    pub(crate) entry_bytes: Vec<u8>,
    pub(crate) events: Option<EncodedEvents>,
}

/// A commit's events, as one JSON array.
pub(crate) struct EncodedEvents {
    pub(crate) first_seq: u64,
    pub(crate) last_seq: u64,
    pub(crate) bytes: Vec<u8>,
}

impl<'a> Encoded<'a> {
    #[inline]
    pub(crate) fn new(
        record: &'a TaskRecord,
        events: &[TaskEvent],
    ) -> Result<Encoded<'a>, StoreError> {
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
    #[inline]
    pub(crate) fn commit_value(&self, events: &EncodedEvents) -> Result<Vec<u8>, StoreError> {
        encode_commit(
            self.record.version,
            events.last_seq,
            self.checkpoint.as_deref(),
            &events.bytes,
        )
    }
}
