//! Tasks whose stored data cannot be decoded are set aside, so that one damaged record
//! never stops recovery from serving every other task (as the sled store does).
//!
//! Setting a task aside copies its record (with its checkpoint) and events, as stored,
//! into `quarantine` and `quarantined_events`, then gives the task a fresh record that
//! ends it `failed` with the reason (its id, context and owner are columns of their
//! own, outside the JSON), so that its owner sees what happened; its event log then
//! holds that one failure event. All of it is one transaction: a crash part way through leaves the task as it
//! was, to be set aside at the next start.

use chrono::{DateTime, Utc};
use fundi_runtime::store::{QuarantinedTask, StoreError, TaskRecord};
use fundi_runtime::{
    ContextId, Message, Part, SkillId, Task, TaskEvent, TaskEventKind, TaskId, TaskState,
    TaskStatus,
};

use crate::database::Database;
use crate::errors::db;
use crate::snapshot;

/// The skill named by a replacement record whose own could not be read.
const UNKNOWN_SKILL: &str = "unknown";

/// The task record read by `snapshot::columns` from column `record_at` of `row`, or
/// `None` when it cannot be decoded: then the task (its id in column `id_at`) is set aside, never a reason not
/// to start; the others are recovered.
pub(crate) async fn record_or_set_aside(
    database: &Database,
    row: &tokio_postgres::Row,
    id_at: usize,
    record_at: usize,
) -> Result<Option<TaskRecord>, StoreError> {
    match snapshot::decode(row, record_at) {
        Ok(record) => Ok(Some(record)),
        Err(error) => {
            let id = TaskId::from(row.get::<_, String>(id_at));
            set_aside(database, &id, &error).await?;
            Ok(None)
        }
    }
}

/// Sets the task aside because reading it failed with `error` (see the module docs).
pub(crate) async fn set_aside(
    database: &Database,
    id: &TaskId,
    error: &StoreError,
) -> Result<(), StoreError> {
    let reason = error.to_string();
    tracing::error!(task_id = %id, %reason, "a stored task cannot be read: setting it aside");
    let (tasks, events) = (database.table("tasks"), database.table("events"));
    let mut client = database.client().await?;
    let tx = client.transaction().await.map_err(db)?;
    // The parts of the record read without decoding it whole.
    let row = tx
        .query_opt(
            &format!(
                "SELECT version, context_id, owner, record->>'skill', \
                 greatest(coalesce((record->>'lastSeq')::bigint, 0), \
                          coalesce((SELECT max(seq) FROM {events} WHERE task_id = $1), 0)) \
                 FROM {tasks} WHERE id = $1 AND NOT terminal FOR UPDATE"
            ),
            &[&id.as_str()],
        )
        .await
        .map_err(db)?;
    // Ended or gone meanwhile: nothing to set aside.
    let Some(row) = row else {
        return Ok(());
    };
    let at = Utc::now();
    tx.execute(
        &format!(
            "INSERT INTO {} (task_id, reason, at, failed, record, checkpoint) \
             SELECT id, $2, $3, true, record, checkpoint FROM {tasks} WHERE id = $1 \
             ON CONFLICT (task_id) DO NOTHING",
            database.table("quarantine")
        ),
        &[&id.as_str(), &reason, &at],
    )
    .await
    .map_err(db)?;
    tx.execute(
        &format!(
            "INSERT INTO {} (task_id, seq, event) SELECT task_id, seq, event FROM {events} \
             WHERE task_id = $1 ON CONFLICT DO NOTHING",
            database.table("quarantined_events")
        ),
        &[&id.as_str()],
    )
    .await
    .map_err(db)?;
    tx.execute(
        &format!("DELETE FROM {events} WHERE task_id = $1"),
        &[&id.as_str()],
    )
    .await
    .map_err(db)?;
    let version: i64 = row.get(0);
    let last_seq: i64 = row.get(4);
    let (record, event) = failure(
        id,
        ContextId::from(row.get::<_, String>(1)),
        row.get(2),
        row.get::<_, Option<String>>(3)
            .map_or_else(|| UNKNOWN_SKILL.into(), SkillId::from),
        version as u64 + 1,
        last_seq as u64 + 1,
        &reason,
        at,
    );
    tx.execute(
        &format!(
            "UPDATE {tasks} SET version = $2, record = $3, state = $4, terminal = true, \
             updated_ms = $5, tail_after = NULL, checkpoint = NULL WHERE id = $1"
        ),
        &[
            &id.as_str(),
            &(record.version as i64),
            &serde_json::to_value(&record)?,
            &record.state().wire_name(),
            &at.timestamp_millis(),
        ],
    )
    .await
    .map_err(db)?;
    tx.execute(
        &format!("INSERT INTO {events} (task_id, seq, event) VALUES ($1, $2, $3)"),
        &[
            &id.as_str(),
            &(event.seq as i64),
            &serde_json::to_value(&event)?,
        ],
    )
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)
}

/// Every task set aside so far, oldest first.
pub(crate) async fn quarantined(database: &Database) -> Result<Vec<QuarantinedTask>, StoreError> {
    let client = database.client().await?;
    let rows = client
        .query(
            &format!(
                "SELECT task_id, reason, at, failed FROM {} ORDER BY at, task_id",
                database.table("quarantine")
            ),
            &[],
        )
        .await
        .map_err(db)?;
    Ok(rows
        .iter()
        .map(|row| QuarantinedTask {
            task_id: TaskId::from(row.get::<_, String>(0)),
            reason: row.get(1),
            at: row.get(2),
            failed: row.get(3),
        })
        .collect())
}

/// The record and event that end a set-aside task `failed`, saying why.
#[allow(clippy::too_many_arguments)]
fn failure(
    id: &TaskId,
    context_id: ContextId,
    owner: Option<String>,
    skill: SkillId,
    version: u64,
    seq: u64,
    reason: &str,
    at: DateTime<Utc>,
) -> (TaskRecord, TaskEvent) {
    let text = format!(
        "the stored task could not be read and was set aside ({reason}); its history and \
         artifacts are kept for an operator"
    );
    let status = TaskStatus {
        state: TaskState::Failed,
        message: Some(Message::agent(vec![Part::text(text)])),
        timestamp: at,
    };
    let task = Task {
        id: id.clone(),
        context_id: context_id.clone(),
        status: status.clone(),
        artifacts: Vec::new(),
        history: Vec::new(),
        metadata: None,
    };
    let mut record = TaskRecord::new(task, skill);
    record.version = version;
    record.last_seq = seq;
    record.owner = owner.map(Into::into);
    let event = TaskEvent {
        seq,
        task_id: id.clone(),
        context_id,
        kind: TaskEventKind::Status(status),
    };
    (record, event)
}
