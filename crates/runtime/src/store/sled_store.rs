//! The embedded default store: one sled tree with byte-ordered keys.
//!
//! | key                                   | value        |
//! |---------------------------------------|--------------|
//! | `T` task id                           | `TaskRecord` |
//! | `E` task id `\0` seq (u64 BE)         | `TaskEvent`  |
//! | `U` update ms (i64 BE, biased) task id| `IndexEntry` |
//! | `C` context id `\0` update ms task id | `IndexEntry` |
//! | `A` task id                           | (empty): the task is not terminal |
//! | `V` task id                           | `Head`: version and current index entry |
//! | `N` scope `\0` state (u8)              | count of tasks (u64 BE); scope `=owner` or empty for all owners, state 0 for any |
//! | `M` `counts`                           | (marker) the counts are complete |
//!
//! Every commit is one sled transaction: snapshot, event and index entries together.
//! sled runs transactions under a process-wide exclusive lock, so everything that can be
//! done outside it (encoding) is, and inside it only the small `Head` is read.

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sled::transaction::{ConflictableTransactionError, TransactionError, TransactionalTree};

use super::flusher::GroupFlusher;
use super::index::{IndexEntry, plan_page};
use super::{ListPage, ListQuery, StoreError, TaskRecord, TaskStore};
use crate::issues::{Issue, IssueStatus, IssueStore, NewIssue, merge};
use crate::model::{ContextId, TaskEvent, TaskId};

/// sled's page cache by default (sled's own default is 1 GiB).
pub const DEFAULT_CACHE_BYTES: u64 = 256 * 1024 * 1024;

/// When a committed change is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Flushed before the change is acknowledged; concurrent writers share flushes.
    Sync,
    /// Acknowledged at once and flushed in the background at least every `window`:
    /// a crash loses at most the changes of the last window.
    Batched {
        /// The longest time a change stays unflushed.
        window: Duration,
    },
}

/// A `TaskStore` on sled.
#[derive(Debug)]
pub struct SledStore {
    db: sled::Db,
    /// Push configs and cursors (see `sled_push`).
    pub(super) push: sled::Tree,
    /// Issues by fingerprint.
    issues: sled::Tree,
    flusher: Option<GroupFlusher>,
}

impl SledStore {
    /// Opens (or creates) the store in `path`. Must be called inside a tokio runtime.
    pub fn open(path: impl AsRef<Path>, durability: Durability) -> Result<SledStore, StoreError> {
        SledStore::open_with_cache(path, durability, DEFAULT_CACHE_BYTES)
    }

    /// Like [`SledStore::open`], with sled's page cache limited to `cache_bytes` (the
    /// store's share of memory; what does not fit is read from disk).
    pub fn open_with_cache(
        path: impl AsRef<Path>,
        durability: Durability,
        cache_bytes: u64,
    ) -> Result<SledStore, StoreError> {
        SledStore::with_config(
            sled::Config::new().path(path).cache_capacity(cache_bytes),
            durability,
        )
    }

    /// A store in a temporary directory, removed when dropped (tests, benchmarks).
    pub fn temporary(durability: Durability) -> Result<SledStore, StoreError> {
        SledStore::with_config(sled::Config::new().temporary(true), durability)
    }

    fn with_config(config: sled::Config, durability: Durability) -> Result<SledStore, StoreError> {
        let config = match durability {
            // Every commit asks for its own (shared) flush; no timer needed.
            Durability::Sync => config.flush_every_ms(None),
            Durability::Batched { window } => {
                config.flush_every_ms(Some(window.as_millis().max(1) as u64))
            }
        };
        let db = config.open()?;
        ensure_counts(&db)?;
        let push = db.open_tree("push")?;
        let issues = db.open_tree("issues")?;
        let flusher = match durability {
            Durability::Sync => Some(GroupFlusher::default()),
            Durability::Batched { .. } => None,
        };
        Ok(SledStore {
            db,
            push,
            issues,
            flusher,
        })
    }

    fn count(
        &self,
        owner: Option<&str>,
        state: Option<crate::model::TaskState>,
    ) -> Result<usize, StoreError> {
        let key = count_key(owner, state.map(|s| s.number()));
        Ok(read_count(self.db.get(key)?) as usize)
    }

    /// In `sync` mode, returns once everything written so far is on disk.
    pub(super) async fn flush_if_sync(&self) -> Result<(), StoreError> {
        match &self.flusher {
            Some(flusher) => flusher.flush(&self.db).await,
            None => Ok(()),
        }
    }

    /// Flushes everything written so far (used at shutdown in batched mode).
    pub async fn flush(&self) -> Result<(), StoreError> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || db.flush())
            .await
            .map_err(|e| StoreError::Engine(e.to_string()))??;
        Ok(())
    }
}

fn task_key(id: &TaskId) -> Vec<u8> {
    [b"T", id.as_str().as_bytes()].concat()
}

fn active_key(id: &TaskId) -> Vec<u8> {
    [b"A", id.as_str().as_bytes()].concat()
}

fn event_prefix(id: &TaskId) -> Vec<u8> {
    [b"E", id.as_str().as_bytes(), b"\0"].concat()
}

fn event_key(id: &TaskId, seq: u64) -> Vec<u8> {
    [event_prefix(id).as_slice(), &seq.to_be_bytes()].concat()
}

/// Milliseconds as big-endian bytes that sort like the signed number.
fn ts_bytes(ts_ms: i64) -> [u8; 8] {
    ((ts_ms as u64) ^ (1 << 63)).to_be_bytes()
}

fn updated_key(entry: &IndexEntry) -> Vec<u8> {
    [
        b"U".as_slice(),
        &ts_bytes(entry.ts_ms),
        entry.task_id.as_str().as_bytes(),
    ]
    .concat()
}

fn context_prefix(context: &ContextId) -> Vec<u8> {
    [b"C", context.as_str().as_bytes(), b"\0"].concat()
}

fn context_key(entry: &IndexEntry) -> Vec<u8> {
    [
        context_prefix(&entry.context_id).as_slice(),
        &ts_bytes(entry.ts_ms),
        entry.task_id.as_str().as_bytes(),
    ]
    .concat()
}

type TxResult<T> = Result<T, ConflictableTransactionError<StoreError>>;

fn abort(e: impl Into<StoreError>) -> ConflictableTransactionError<StoreError> {
    ConflictableTransactionError::Abort(e.into())
}

/// What a task's commit last wrote: its version, and the index entry to replace.
#[derive(Serialize, Deserialize)]
struct Head {
    #[serde(rename = "v")]
    version: u64,
    #[serde(rename = "e")]
    entry: IndexEntry,
}

fn head_key(id: &TaskId) -> Vec<u8> {
    [b"V", id.as_str().as_bytes()].concat()
}

/// A commit, encoded before the transaction starts.
struct Encoded<'a> {
    record: &'a TaskRecord,
    record_bytes: Vec<u8>,
    entry: IndexEntry,
    entry_bytes: Vec<u8>,
    head_bytes: Vec<u8>,
    events: Vec<(u64, Vec<u8>)>,
}

impl<'a> Encoded<'a> {
    fn new(record: &'a TaskRecord, events: &[TaskEvent]) -> Result<Encoded<'a>, StoreError> {
        let entry = IndexEntry::of(record);
        let head = Head {
            version: record.version,
            entry: entry.clone(),
        };
        Ok(Encoded {
            record,
            record_bytes: serde_json::to_vec(record)?,
            entry_bytes: serde_json::to_vec(&entry)?,
            head_bytes: serde_json::to_vec(&head)?,
            entry,
            events: events
                .iter()
                .map(|e| serde_json::to_vec(e).map(|bytes| (e.seq, bytes)))
                .collect::<Result<_, _>>()?,
        })
    }
}

fn write_record(
    tx: &TransactionalTree,
    commit: &Encoded<'_>,
    expected_version: u64,
) -> TxResult<()> {
    let id = commit.record.id();
    let old = match tx.get(head_key(id))? {
        Some(bytes) => Some(serde_json::from_slice::<Head>(&bytes).map_err(abort)?),
        None => None,
    };
    let found = old.as_ref().map_or(0, |h| h.version);
    StoreError::check_version(id, expected_version, found).map_err(abort)?;
    if let Some(old) = &old {
        tx.remove(updated_key(&old.entry))?;
        tx.remove(context_key(&old.entry))?;
    }
    // Counts for totalSize without scanning the index.
    match &old {
        None => {
            for key in count_keys(&commit.entry, true) {
                adjust(tx, key, 1)?;
            }
        }
        Some(old) if old.entry.state != commit.entry.state => {
            for key in count_keys(&old.entry, false) {
                adjust(tx, key, -1)?;
            }
            for key in count_keys(&commit.entry, false) {
                adjust(tx, key, 1)?;
            }
        }
        Some(_) => {}
    }
    tx.insert(updated_key(&commit.entry), commit.entry_bytes.as_slice())?;
    tx.insert(context_key(&commit.entry), commit.entry_bytes.as_slice())?;
    if commit.record.state().is_terminal() {
        tx.remove(active_key(id))?;
    } else {
        tx.insert(active_key(id), &[])?;
    }
    for (seq, bytes) in &commit.events {
        tx.insert(event_key(id, *seq), bytes.as_slice())?;
    }
    tx.insert(head_key(id), commit.head_bytes.as_slice())?;
    tx.insert(task_key(id), commit.record_bytes.as_slice())?;
    Ok(())
}

/// The key of a task count: by owner (`None`: every owner) and state (`None`: any).
fn count_key(owner: Option<&str>, state: Option<u8>) -> Vec<u8> {
    let mut key = vec![b'N'];
    if let Some(owner) = owner {
        key.push(b'=');
        key.extend_from_slice(owner.as_bytes());
    }
    key.push(0);
    key.push(state.unwrap_or(0));
    key
}

/// The counts a task's entry adds to (+1) or leaves (-1).
fn count_keys(entry: &IndexEntry, with_any: bool) -> Vec<Vec<u8>> {
    let mut keys = vec![count_key(None, Some(entry.state))];
    if let Some(owner) = entry.owner.as_deref() {
        keys.push(count_key(Some(owner), Some(entry.state)));
    }
    if with_any {
        keys.push(count_key(None, None));
        if let Some(owner) = entry.owner.as_deref() {
            keys.push(count_key(Some(owner), None));
        }
    }
    keys
}

fn read_count(bytes: Option<sled::IVec>) -> u64 {
    bytes
        .and_then(|b| <[u8; 8]>::try_from(b.as_ref()).ok())
        .map(u64::from_be_bytes)
        .unwrap_or(0)
}

fn adjust(tx: &TransactionalTree, key: Vec<u8>, delta: i64) -> TxResult<()> {
    let count = read_count(tx.get(&key)?).saturating_add_signed(delta);
    tx.insert(key, &count.to_be_bytes())?;
    Ok(())
}

const COUNTS_MARKER: &[u8] = b"Mcounts";

/// Builds the task counts once for a store written before they existed.
fn ensure_counts(db: &sled::Db) -> Result<(), StoreError> {
    if db.contains_key(COUNTS_MARKER)? {
        return Ok(());
    }
    let mut counts: std::collections::HashMap<Vec<u8>, u64> = std::collections::HashMap::new();
    for item in db.scan_prefix(b"U") {
        let entry = decode_entry(item)?;
        for key in count_keys(&entry, true) {
            *counts.entry(key).or_default() += 1;
        }
    }
    let mut batch = sled::Batch::default();
    for (key, count) in counts {
        batch.insert(key, &count.to_be_bytes());
    }
    batch.insert(COUNTS_MARKER, &[]);
    db.apply_batch(batch)?;
    Ok(())
}

fn decode_entry(item: sled::Result<(sled::IVec, sled::IVec)>) -> Result<IndexEntry, StoreError> {
    let (_, value) = item?;
    Ok(serde_json::from_slice(&value)?)
}

#[async_trait]
impl TaskStore for SledStore {
    async fn commit(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        let encoded = Encoded::new(record, events)?;
        self.db
            .transaction(|tx| write_record(tx, &encoded, expected_version))
            .map_err(|e| match e {
                TransactionError::Abort(e) => e,
                TransactionError::Storage(e) => e.into(),
            })?;
        self.flush_if_sync().await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        match self.db.get(task_key(id))? {
            Some(bytes) => Ok(Some(serde_json::from_slice(&bytes)?)),
            None => Ok(None),
        }
    }

    async fn events(
        &self,
        id: &TaskId,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<TaskEvent>, StoreError> {
        let start = event_key(id, after_seq.saturating_add(1));
        let end = event_key(id, u64::MAX);
        self.db
            .range(start..=end)
            .take(limit)
            .map(|item| {
                let (_, bytes) = item?;
                Ok(serde_json::from_slice(&bytes)?)
            })
            .collect()
    }

    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        let plan = match &query.context_id {
            Some(context) => plan_page(
                self.db
                    .scan_prefix(context_prefix(context))
                    .rev()
                    .map(decode_entry),
                query,
                None,
            )?,
            None => {
                let total = match query.updated_after {
                    None => Some(self.count(query.owner.as_deref(), query.state)?),
                    Some(_) => None,
                };
                plan_page(
                    self.db.scan_prefix(b"U").rev().map(decode_entry),
                    query,
                    total,
                )?
            }
        };
        let mut records = Vec::with_capacity(plan.ids.len());
        for id in &plan.ids {
            // The index and the snapshot are written in one transaction, so a listed id
            // has a snapshot; a task is never deleted.
            if let Some(record) = self.get(id).await? {
                records.push(record);
            }
        }
        Ok(ListPage {
            records,
            next: plan.next,
            total: plan.total,
        })
    }

    async fn active(&self) -> Result<Vec<TaskRecord>, StoreError> {
        let mut records = Vec::new();
        for item in self.db.scan_prefix(b"A") {
            let (key, _) = item?;
            let id = TaskId::from(String::from_utf8_lossy(&key[1..]).into_owned());
            match self.get(&id).await? {
                Some(record) => records.push(record),
                None => tracing::warn!(task_id = %id, "active-set entry without a snapshot"),
            }
        }
        Ok(records)
    }
}

#[async_trait]
impl IssueStore for SledStore {
    async fn record(&self, finding: NewIssue) -> Result<(Issue, bool), StoreError> {
        // Read, merge, compare-and-swap: concurrent runs finding the same issue both count.
        loop {
            let key = finding.fingerprint.as_bytes().to_vec();
            let old = self.issues.get(&key)?;
            let existing: Option<Issue> = old
                .as_ref()
                .map(|bytes| serde_json::from_slice(bytes))
                .transpose()?;
            let (issue, new) = merge(existing, finding.clone());
            let bytes = serde_json::to_vec(&issue)?;
            if self
                .issues
                .compare_and_swap(&key, old, Some(bytes))?
                .is_ok()
            {
                self.flush_if_sync().await?;
                return Ok((issue, new));
            }
        }
    }

    async fn issue(&self, id: &str) -> Result<Option<Issue>, StoreError> {
        self.issues
            .get(id.as_bytes())?
            .map(|bytes| Ok(serde_json::from_slice(&bytes)?))
            .transpose()
    }

    async fn issues(&self, source: Option<&str>) -> Result<Vec<Issue>, StoreError> {
        let mut all = Vec::new();
        for item in self.issues.iter() {
            let (_, bytes) = item?;
            let issue: Issue = serde_json::from_slice(&bytes)?;
            if source.is_none_or(|s| issue.finding.source == s) {
                all.push(issue);
            }
        }
        Ok(all)
    }

    async fn set_status(&self, id: &str, status: IssueStatus) -> Result<bool, StoreError> {
        let Some(mut issue) = self.issue(id).await? else {
            return Ok(false);
        };
        issue.status = status;
        self.issues
            .insert(id.as_bytes(), serde_json::to_vec(&issue)?)?;
        self.flush_if_sync().await?;
        Ok(true)
    }
}
