//! Recovery at start: every stored task that is not terminal is resumed, left waiting
//! for input, or ended `failed` with the reason "interrupted by restart".

use std::collections::HashMap;

use futures::{StreamExt, TryStreamExt};

use crate::actors::fail_stored_task;
use crate::error::RuntimeError;
use crate::handle::RuntimeHandle;
use crate::model::TaskId;
use crate::telemetry;

/// The status message of a task that a restart interrupted and that cannot resume.
pub const INTERRUPTED_BY_RESTART: &str = "interrupted by restart";

/// Failure commits in flight at once, so that they share flushes.
const PARALLEL_FAILS: usize = 64;

/// What recovery did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Submitted or working tasks of resumable skills, run again from their checkpoint
    /// (each once it has a slot of its skill: queued until then, with no actor).
    pub resumed: usize,
    /// Tasks ended `failed` (their skill is not resumable, or no longer registered).
    pub failed: usize,
    /// Input- or auth-required tasks of resumable skills, waiting again (no actor until
    /// a message or a cancel arrives).
    pub waiting_for_input: usize,
    /// Tasks the store holds set aside because their data could not be decoded (this
    /// start's and earlier ones': see `TaskStore::quarantined`).
    pub quarantined: usize,
}

pub(crate) async fn recover(handle: &RuntimeHandle) -> Result<RecoveryReport, RuntimeError> {
    let mut report = RecoveryReport::default();
    let mut to_fail: Vec<(TaskId, String)> = Vec::new();
    let mut to_resume: HashMap<String, Vec<TaskId>> = HashMap::new();
    let metrics = telemetry::metrics();
    for record in handle.store().active().await? {
        let id = record.task.id.clone();
        // Counted afresh in this process: active tasks by state start here.
        metrics.state_changed(&record.skill, &id, None, record.state());
        match handle.skill_card(&record.skill) {
            None => to_fail.push((
                id,
                format!(
                    "{INTERRUPTED_BY_RESTART}; skill {:?} is no longer registered",
                    record.skill
                ),
            )),
            Some(card) if !card.resumable => to_fail.push((id, INTERRUPTED_BY_RESTART.into())),
            Some(_) if record.state().is_interrupted() => {
                metrics.recovered("waiting");
                report.waiting_for_input += 1;
            }
            Some(_) => {
                tracing::info!(task_id = %id, "resuming task after restart");
                metrics.recovered("resumed");
                report.resumed += 1;
                to_resume.entry(record.skill).or_default().push(id);
            }
        }
    }
    // Set aside by the store while it opened or read the active tasks just now.
    let quarantined = handle.store().quarantined().await?;
    if !quarantined.is_empty() {
        report.quarantined = quarantined.len();
        metrics.recovered_n("quarantined", quarantined.len());
        tracing::warn!(
            tasks = quarantined.len(),
            "stored tasks that cannot be read are set aside; `fundi doctor` lists them"
        );
    }
    // No actor yet: each starts once its task has a slot, in the order read.
    for (skill, ids) in to_resume {
        handle.resume_in_turn(skill, ids);
    }
    let store = handle.store().clone();
    report.failed = futures::stream::iter(to_fail)
        .map(|(id, reason)| {
            let store = store.clone();
            async move {
                tracing::info!(task_id = %id, %reason, "failing task after restart");
                metrics.recovered("failed");
                fail_stored_task(&*store, &id, &reason, "restart").await
            }
        })
        .buffer_unordered(PARALLEL_FAILS)
        .try_fold(0, |n, changed| async move { Ok(n + usize::from(changed)) })
        .await?;
    Ok(report)
}
