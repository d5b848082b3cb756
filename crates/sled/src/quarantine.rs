//! Tasks whose stored data cannot be decoded are set aside, so that one damaged record
//! never stops the store from opening or recovery from serving every other task.
//!
//! Setting a task aside copies its raw values (`T` and every `E`) into the `quarantine`
//! tree under the same keys, with a `Q` task id entry saying why and when; then, if its
//! snapshot's header can still be read (its id, context, owner and position are there,
//! outside the record's JSON), the task gets a fresh snapshot that ends it `failed` with
//! the reason, so its owner sees what happened; otherwise it is removed from the task
//! tree and the active set. Its event log then holds the one failure event: what came
//! before is in the quarantine tree, for `fundi doctor` and a person to look at. Each
//! step can be repeated, so a crash part way through sets the task aside again at the
//! next open.

use chrono::Utc;
use serde::{Deserialize, Serialize};

use crate::layout::{
    Header, Inline, active_key, encode_events, encode_record, event_prefix, rest_key, task_key,
};
use std::sync::Arc;

use crate::commit::TaskTable;
use crate::log_sync::LogSync;
use fundi_runtime::model::{
    Message, Part, SkillId, Task, TaskEvent, TaskEventKind, TaskId, TaskState, TaskStatus,
};
use fundi_runtime::store::index::IndexEntry;
use fundi_runtime::store::{QuarantinedTask, StoreError, TaskRecord};

/// The name of the tree holding what was set aside.
const QUARANTINE_TREE: &str = "quarantine";

/// The skill named by a replacement record whose own could not be read.
const UNKNOWN_SKILL: &str = "unknown";

/// The quarantine tree, and the log that makes its copies durable before the originals
/// are removed.
#[derive(Debug)]
pub(crate) struct Quarantine {
    pub(crate) tree: sled::Tree,
    log: Arc<LogSync>,
}

fn note_key(id: &TaskId) -> Vec<u8> {
    [b"Q", id.as_str().as_bytes()].concat()
}

/// Only the skill of a record, read without the rest (which may be what is damaged).
#[derive(Deserialize)]
struct SkillOnly {
    skill: SkillId,
}

#[derive(Serialize, Deserialize)]
struct Note {
    reason: String,
    at: chrono::DateTime<Utc>,
    failed: bool,
}

impl Quarantine {
    /// The quarantine tree of `db`.
    pub(crate) fn open(db: &sled::Db, log: Arc<LogSync>) -> Result<Quarantine, StoreError> {
        let tree = db.open_tree(QUARANTINE_TREE).map_err(StoreError::engine)?;
        Ok(Quarantine { tree, log })
    }

    /// Sets the task aside because reading it failed with `error` (see the module docs).
    pub(crate) fn set_aside(
        &self,
        tasks: &TaskTable,
        id: &TaskId,
        error: &StoreError,
    ) -> Result<QuarantinedTask, StoreError> {
        let db = &tasks.db;
        let reason = error.to_string();
        tracing::error!(task_id = %id, %reason, "a stored task cannot be read: setting it aside");
        let snapshot = db.get(task_key(id)).map_err(StoreError::engine)?;
        if let Some(bytes) = &snapshot {
            self.tree
                .insert(task_key(id), bytes)
                .map_err(StoreError::engine)?;
        }
        let mut event_keys = Vec::new();
        for item in db.scan_prefix(event_prefix(id)) {
            let (key, value) = item.map_err(StoreError::engine)?;
            self.tree.insert(&key, value).map_err(StoreError::engine)?;
            event_keys.push(key);
        }
        let header = snapshot.as_deref().and_then(|b| Header::read(b).ok());
        let entry = header
            .as_ref()
            .and_then(|h| serde_json::from_slice::<IndexEntry>(&h.entry).ok());
        let failed = header.is_some() && entry.is_some();
        let note = Note {
            reason: reason.clone(),
            at: Utc::now(),
            failed,
        };
        self.tree
            .insert(note_key(id), serde_json::to_vec(&note)?)
            .map_err(StoreError::engine)?;
        // The copies are on disk before anything is removed.
        self.log.flush(db)?;
        // No longer at rest as indexed (see `resting`), before its snapshot changes.
        db.remove(rest_key(id)).map_err(StoreError::engine)?;
        for key in &event_keys {
            db.remove(key).map_err(StoreError::engine)?;
        }
        match (header, entry, snapshot) {
            (Some(header), Some(entry), Some(bytes)) => {
                let skill = header
                    .record_json(&bytes)
                    .and_then(|json| serde_json::from_slice::<SkillOnly>(json).ok())
                    .map_or_else(|| UNKNOWN_SKILL.into(), |s| s.skill);
                replace_with_failure(tasks, &header, entry, skill, &reason)?;
            }
            _ => {
                db.remove(task_key(id)).map_err(StoreError::engine)?;
                // Listed and counted from its rest index entry, its header unread.
                if let Some(entry) = tasks.live.entry(id) {
                    tasks.counts.removed(&entry);
                }
                tasks.live.remove(u64::MAX, id);
            }
        }
        tasks.positions.forget(id);
        if tasks.active.leave(id)
            || db
                .contains_key(active_key(id))
                .map_err(StoreError::engine)?
        {
            db.remove(active_key(id)).map_err(StoreError::engine)?;
        }
        self.log.flush(db)?;
        Ok(QuarantinedTask {
            task_id: id.clone(),
            reason,
            at: note.at,
            failed,
        })
    }

    /// Every task set aside so far, oldest first.
    pub(crate) fn tasks(&self) -> Result<Vec<QuarantinedTask>, StoreError> {
        let mut tasks = Vec::new();
        for item in self.tree.scan_prefix(b"Q") {
            let (key, value) = item.map_err(StoreError::engine)?;
            let note: Note = serde_json::from_slice(&value)?;
            tasks.push(QuarantinedTask {
                task_id: TaskId::from(String::from_utf8_lossy(&key[1..]).into_owned()),
                reason: note.reason,
                at: note.at,
                failed: note.failed,
            });
        }
        tasks.sort_by_key(|task| task.at);
        Ok(tasks)
    }
}

/// A fresh snapshot of the task ending it `failed`: version and sequence after those
/// of the header it had.
fn replace_with_failure(
    tasks: &TaskTable,
    header: &Header,
    entry: IndexEntry,
    skill: SkillId,
    reason: &str,
) -> Result<(), StoreError> {
    let id = entry.task_id.clone();
    let text = format!(
        "the stored task could not be read and was set aside ({reason}); its history \
         and artifacts are kept for an operator (`fundi doctor`)"
    );
    let status = TaskStatus {
        state: TaskState::Failed,
        message: Some(Message::agent(vec![Part::text(text)])),
        timestamp: Utc::now(),
    };
    let seq = header.last_seq.max(header.inline_through) + 1;
    let task = Task {
        id: id.clone(),
        context_id: entry.context_id.clone(),
        status: status.clone(),
        artifacts: Vec::new(),
        history: Vec::new(),
        metadata: None,
    };
    let mut record = TaskRecord::new(task, skill);
    record.version = header.version + 1;
    record.last_seq = seq;
    record.owner = entry.owner.clone();
    let event = TaskEvent {
        seq,
        task_id: id.clone(),
        context_id: entry.context_id.clone(),
        kind: TaskEventKind::Status(status),
    };
    let new_entry = IndexEntry::of(&record);
    let entry_bytes = serde_json::to_vec(&new_entry)?;
    let inline = Inline::default().then(seq, &encode_events(&[event])?);
    let json = serde_json::to_vec(&record)?;
    let bytes = encode_record(&record, &json, &entry_bytes, None, &inline)?;
    tasks
        .db
        .insert(task_key(&id), bytes)
        .map_err(StoreError::engine)?;
    let previous = tasks.live.entry(&id).unwrap_or(entry);
    tasks.reindex(
        &id,
        record.version,
        Some(&previous),
        &new_entry,
        &entry_bytes,
    )
}
