//! The `T` values of the sled store (see `layout`): a task's snapshot and its header.
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
//! Stores written before compression have the same header with format byte 1 and its
//! parts and record uncompressed. Stores written before the format byte have headers
//! without it and without events (they start with the version's first byte, 0).
//! Stores written before the header hold the record's JSON alone in `T` (it starts with
//! `{`), and kept the indexed entry in `V` task id as `{"v": version, "e": entry}`.
//! All are still read, and a task's next commit moves its snapshot to the current
//! layout (its events stay in `E` values).

use std::ops::Range;

use fundi_runtime::model::TaskEvent;
use fundi_runtime::store::index::IndexEntry;
use fundi_runtime::store::{StoreError, TaskRecord};

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
    super::u64_at(bytes, at).ok_or_else(truncated)
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
            let len = super::u32_at(bytes, at).ok_or_else(truncated)? as usize;
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
