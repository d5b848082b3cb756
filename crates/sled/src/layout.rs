//! How the sled store lays tasks out: keys, and the encoding of the values that have a
//! binary part. One tree, byte-ordered keys:
//!
//! | key                                    | value        |
//! |----------------------------------------|--------------|
//! | `T` task id                            | header (below), then the `TaskRecord` as JSON, compressed with the header's parts |
//! | `E` task id `\0` seq (u64 BE)          | the commit whose first event is `seq` (below), for the events not in the header; in older stores its events alone, as a JSON array or one `TaskEvent` |
//! | `U` update ms (i64 BE, biased) task id | `IndexEntry` of a terminal task |
//! | `C` context id `\0` update ms task id  | `IndexEntry` of a terminal task |
//! | `A` task id                            | (empty): the task may not be terminal (written lazily, see `active_set`) |
//! | `N` scope `\0` state (u8)              | count of tasks (u64 BE), saved at a clean close; scope `=owner` or empty for all owners, state 0 for any |
//! | `D` owner (u32 BE length, `u32::MAX`: none, then its bytes) first message id | when the task was created (i64 BE ms), then its id: the task this owner created with this first message (`TaskStore::created_by`); written before the task's commit point, so an entry may name a task a crash kept out |
//! | `R` task id                            | a removal under way (retention, see `retention`): the task's listing entry, then its `D` key |
//! | `W` task id                            | a task at rest whose snapshot is its last commit: that snapshot's version and last seq (u64 BE each), then the task's `IndexEntry` as JSON (see `resting`) |
//! | `Mclean`                               | (empty): the store was closed cleanly |
//! | `Mlive`                                | (empty): `U` and `C` hold terminal tasks only |
//! | `Mswept`                               | a task id: every unfinished task with an id at or below it has its `A` key |
//! | `Mformat`                              | the store's format (u64 BE, see `STORE_FORMAT`); none: written before it |
//!
//! The header of `T` holds what a commit, a repair and a reader of events need without
//! decoding the record: a format byte (2), the version, the last event seq and the last
//! seq of the events in the header (u64 BE each), then its parts: the record's
//! `IndexEntry`, the one before this commit if that one is in `U` and `C`, and the
//! task's first events as a JSON array (each a u32 BE length and JSON; length 0: none).
//! The parts and the record's JSON are one LZ4 block (after its decompressed length, u32
//! LE): a snapshot repeats its task's and context's ids in every event and message, and
//! sled writes whole pages of snapshots again and again, so compressing them cuts what
//! the log and the page cache hold (a blocking echo's snapshot: 662 bytes, not 2,250).
//! A task's events are those of the header, then those of its `E` values (see
//! `store` for which go where); an `E` value at or below the header's last seq of
//! events is a copy left by a crash, which repair removes.
//!
//! An `E` value written since format 3 is a whole commit: a tag byte (1), the commit's
//! version and last seq (u64 BE each), the task's checkpoint as of the commit (a u32 BE
//! length and JSON; length 0: none), then its events as a JSON array. The commits after
//! the snapshot's last seq (its tail) are committed too: the task is its snapshot with
//! their events replayed, their version and their checkpoint (`store`). Events
//! moved out of a snapshot are kept as a JSON array alone.
//!
//! Stores written before compression have the same header with format byte 1 and its
//! parts and record uncompressed. Stores written before the format byte have headers
//! without it and without events (they start with the version's first byte, 0).
//! Stores written before the header hold the record's JSON alone in `T` (it starts with
//! `{`), and kept the indexed entry in `V` task id as `{"v": version, "e": entry}`.
//! All are still read, and a task's next commit moves its snapshot to the current
//! layout (its events stay in `E` values).

use std::ops::Range;

use fundi_runtime::model::{ContextId, TaskEvent, TaskId};
use fundi_runtime::store::index::IndexEntry;
use fundi_runtime::store::{StoreError, TaskRecord};

pub(crate) const CLEAN_MARKER: &[u8] = b"Mclean";

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

/// A commit value's checkpoint JSON (empty: none) and events JSON.
fn commit_parts(bytes: &[u8]) -> Result<(&[u8], &[u8]), StoreError> {
    let damaged = || StoreError::damaged("commit value shorter than its header");
    let len = bytes
        .get(COMMIT_WORDS_END..COMMIT_WORDS_END + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(u32::from_be_bytes)
        .ok_or_else(damaged)? as usize;
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

/// The first byte of a `T` value written before compression, its parts and record
/// uncompressed (a header without a format byte starts with a version's first byte, 0;
/// a legacy record with `{`).
const FORMAT_INLINE: u8 = 1;

/// The first byte of a `T` value in the current layout: the header's words as in
/// `FORMAT_INLINE`, then its parts and the record compressed together (see
/// `decompress`).
const FORMAT_COMPRESSED: u8 = 2;

/// Where the header's words end (format byte, version, last seq, last inline seq).
pub(crate) const WORDS_END: usize = 25;

/// More than an LZ4 block can expand: a match costs at least one byte per 255 it
/// repeats.
const LZ4_MAX_RATIO: usize = 255;

/// The events a snapshot carries in its own value: the task's events from the first
/// through `through`, as one JSON array (empty when there are none).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Inline {
    pub(crate) through: u64,
    pub(crate) events: Vec<u8>,
}

impl Inline {
    /// These events followed by a commit's, `through` the last of them (a non-empty
    /// JSON array, as `encode_events` writes it).
    pub(crate) fn then(&self, through: u64, events: &[u8]) -> Inline {
        let mut joined = Vec::with_capacity(self.events.len() + events.len());
        match self.events.strip_suffix(b"]") {
            Some(open) => {
                joined.extend_from_slice(open);
                joined.push(b',');
                joined.extend_from_slice(&events[1..]);
            }
            None => joined.extend_from_slice(events),
        }
        Inline {
            through,
            events: joined,
        }
    }

    pub(crate) fn decode(&self) -> Result<Vec<TaskEvent>, StoreError> {
        if self.events.is_empty() {
            return Ok(Vec::new());
        }
        Ok(serde_json::from_slice(&self.events)?)
    }
}

/// A record as `T` stores it (see the module docs), from its JSON.
pub(crate) fn encode_record(
    record: &TaskRecord,
    json: &[u8],
    entry: &[u8],
    previous: Option<&[u8]>,
    inline: &Inline,
) -> Result<Vec<u8>, StoreError> {
    let previous = previous.unwrap_or_default();
    let parts = [entry, previous, inline.events.as_slice()];
    let mut body =
        Vec::with_capacity(12 + parts.iter().map(|p| p.len()).sum::<usize>() + json.len());
    for part in parts {
        let len = u32::try_from(part.len())
            .map_err(|_| StoreError::damaged("snapshot header part too long"))?;
        body.extend_from_slice(&len.to_be_bytes());
        body.extend_from_slice(part);
    }
    body.extend_from_slice(json);
    u32::try_from(body.len()).map_err(|_| StoreError::damaged("task snapshot over 4 GiB"))?;
    let packed = lz4_flex::compress_prepend_size(&body);
    let mut bytes = Vec::with_capacity(WORDS_END + packed.len());
    bytes.push(FORMAT_COMPRESSED);
    bytes.extend_from_slice(&record.version.to_be_bytes());
    bytes.extend_from_slice(&record.last_seq.to_be_bytes());
    bytes.extend_from_slice(&inline.through.to_be_bytes());
    bytes.extend_from_slice(&packed);
    Ok(bytes)
}

/// The parts and record of a compressed `T` value: the length they decompress to (u32
/// LE, as `lz4_flex` prepends it), then one LZ4 block. A length the block cannot reach
/// is refused before anything is allocated for it: a damaged value is an error, not a
/// huge allocation or a panic.
fn decompress(packed: &[u8]) -> Result<Vec<u8>, StoreError> {
    let damaged = |what: &str| StoreError::damaged(format!("task snapshot: {what}"));
    let (len, block) = packed.split_first_chunk::<4>().ok_or_else(truncated)?;
    let len = u32::from_le_bytes(*len) as usize;
    if len > block.len().saturating_mul(LZ4_MAX_RATIO) {
        return Err(damaged(&format!(
            "claims {len} bytes, more than its {} compressed bytes can hold",
            block.len()
        )));
    }
    let mut body = vec![0; len];
    let written =
        lz4_flex::block::decompress_into(block, &mut body).map_err(|e| damaged(&e.to_string()))?;
    if written != len {
        return Err(damaged(&format!(
            "decompresses to {written} bytes, not the {len} it claims"
        )));
    }
    Ok(body)
}

/// What `T`'s header says, or for an older store what its record and `V` say.
#[derive(Debug)]
pub(crate) struct Header {
    pub(crate) version: u64,
    pub(crate) last_seq: u64,
    /// The record's index entry (JSON).
    pub(crate) entry: Vec<u8>,
    /// The entry before the commit that wrote this record (JSON), if any.
    pub(crate) previous: Option<Vec<u8>>,
    /// The last seq of the events kept in this value (0: none, as in the layouts
    /// before it).
    pub(crate) inline_through: u64,
    /// Where those events are in the body (see `body`).
    inline_at: Range<usize>,
    /// Where the record's JSON starts in the body.
    json_at: usize,
    /// Written before headers existed (its task may still have a `V` key).
    pub(crate) legacy: bool,
    /// The decompressed parts and record, when the value holds them compressed.
    body: Option<Vec<u8>>,
}

fn is_legacy(bytes: &[u8]) -> bool {
    bytes.first() == Some(&b'{')
}

fn truncated() -> StoreError {
    StoreError::damaged("task snapshot shorter than its header")
}

/// Reads the big-endian u64 at `at`.
fn word(bytes: &[u8], at: usize) -> Result<u64, StoreError> {
    bytes
        .get(at..at + 8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_be_bytes)
        .ok_or_else(truncated)
}

/// Where the version word starts: after the format byte, if there is one.
fn versions_at(bytes: &[u8]) -> usize {
    usize::from(matches!(
        bytes.first(),
        Some(&(FORMAT_INLINE | FORMAT_COMPRESSED))
    ))
}

impl Header {
    /// Reads the header of a `T` value.
    pub(crate) fn read(bytes: &[u8]) -> Result<Header, StoreError> {
        if is_legacy(bytes) {
            // Written in one transaction with its index entry: they agree.
            let record: TaskRecord = serde_json::from_slice(bytes)?;
            return Ok(Header {
                version: record.version,
                last_seq: record.last_seq,
                entry: serde_json::to_vec(&IndexEntry::of(&record))?,
                previous: None,
                inline_through: 0,
                inline_at: 0..0,
                json_at: 0,
                legacy: true,
                body: None,
            });
        }
        let (version, last_seq) = record_versions(bytes)?;
        let format = bytes.first().copied();
        let with_inline = matches!(format, Some(FORMAT_INLINE | FORMAT_COMPRESSED));
        let (through, mut at) = match with_inline {
            true => (word(bytes, 17)?, WORDS_END),
            false => (0, 16),
        };
        let body = match format {
            Some(FORMAT_COMPRESSED) => {
                at = 0;
                Some(decompress(&bytes[WORDS_END..])?)
            }
            _ => None,
        };
        let bytes = body.as_deref().unwrap_or(bytes);
        let mut part = || -> Result<Range<usize>, StoreError> {
            let len = bytes
                .get(at..at + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_be_bytes)
                .ok_or_else(truncated)? as usize;
            let value = at + 4..at + 4 + len;
            bytes.get(value.clone()).ok_or_else(truncated)?;
            at += 4 + len;
            Ok(value)
        };
        let entry = bytes[part()?].to_vec();
        let previous = Some(bytes[part()?].to_vec()).filter(|p| !p.is_empty());
        let inline_at = match with_inline {
            true => part()?,
            false => 0..0,
        };
        Ok(Header {
            version,
            last_seq,
            entry,
            previous,
            inline_through: through,
            inline_at,
            json_at: at,
            legacy: false,
            body,
        })
    }

    /// The events kept in `bytes`, the value this header was read from (copied only
    /// here: most readers of a header need none of them).
    pub(crate) fn inline(&self, bytes: &[u8]) -> Inline {
        let bytes = self.body(bytes);
        Inline {
            through: self.inline_through,
            events: bytes
                .get(self.inline_at.clone())
                .unwrap_or_default()
                .to_vec(),
        }
    }

    /// Where the parts and the record are: decompressed in the header, or in `bytes`.
    fn body<'a>(&'a self, bytes: &'a [u8]) -> &'a [u8] {
        self.body.as_deref().unwrap_or(bytes)
    }

    /// The record's JSON, undecoded.
    pub(crate) fn record_json<'a>(&'a self, bytes: &'a [u8]) -> Option<&'a [u8]> {
        self.body(bytes).get(self.json_at..)
    }

    /// The record itself.
    pub(crate) fn record(&self, bytes: &[u8]) -> Result<TaskRecord, StoreError> {
        let bytes = self.body(bytes);
        Ok(serde_json::from_slice(
            bytes.get(self.json_at..).ok_or_else(truncated)?,
        )?)
    }
}

/// Whether a `T` value is in the current layout (older ones move to it at their
/// task's next snapshot).
pub(crate) fn is_current(bytes: &[u8]) -> bool {
    bytes.first() == Some(&FORMAT_COMPRESSED)
}

pub(crate) fn decode_record(bytes: &[u8]) -> Result<TaskRecord, StoreError> {
    if is_legacy(bytes) {
        return Ok(serde_json::from_slice(bytes)?);
    }
    Header::read(bytes)?.record(bytes)
}

/// The version and last event sequence number of a stored record.
pub(crate) fn record_versions(bytes: &[u8]) -> Result<(u64, u64), StoreError> {
    if is_legacy(bytes) {
        let record: TaskRecord = serde_json::from_slice(bytes)?;
        return Ok((record.version, record.last_seq));
    }
    let at = versions_at(bytes);
    Ok((word(bytes, at)?, word(bytes, at + 8)?))
}
