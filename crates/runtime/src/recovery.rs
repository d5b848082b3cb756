//! Carrying out recovery's plan (`recovery_plan`) at start, and for tasks taken over from
//! a node that stopped renewing their leases (a store several nodes share): counting
//! what was found, queueing resumes for their slots, failing what cannot resume,
//! reporting what the store set aside.

use futures::{StreamExt, TryStreamExt};

use crate::actors::TaskJournal;
use crate::error::RuntimeError;
use crate::handle::RuntimeHandle;
use crate::recovery_plan::{RecoveryReport, plan};
use crate::store::UnfinishedTask;
use crate::telemetry;

/// Failure commits in flight at once, so that they share flushes.
const PARALLEL_FAILS: usize = 64;

impl RuntimeHandle {
    /// Recovers the tasks a previous run left unfinished (before new work is taken).
    pub(crate) async fn recover(&self) -> Result<RecoveryReport, RuntimeError> {
        let tasks = self.store().unfinished_tasks().await?;
        let mut report = self.carry_out(tasks).await?;
        // Set aside by the store while it opened or read the active tasks just now.
        let quarantined = self.store().quarantined().await?;
        if !quarantined.is_empty() {
            report.quarantined = quarantined.len();
            telemetry::metrics().recovered_n("quarantined", quarantined.len());
            tracing::warn!(
                tasks = quarantined.len(),
                "stored tasks that cannot be read are set aside; `fundi doctor` lists them"
            );
        }
        Ok(report)
    }

    /// Takes over the tasks of nodes that stopped renewing their leases, as a start
    /// recovers a node's own (see `TaskStore::take_over`).
    pub(crate) async fn take_over(&self) -> Result<RecoveryReport, RuntimeError> {
        let records = self.store().take_over().await?;
        if records.is_empty() {
            return Ok(RecoveryReport::default());
        }
        for record in &records {
            tracing::info!(task_id = %record.id(), "taking over a task whose node stopped renewing its lease");
        }
        self.carry_out(records.iter().map(UnfinishedTask::of).collect())
            .await
    }

    /// Resumes, re-waits or fails each of `tasks` as `plan` decides (at start, for
    /// tasks taken over, and for those re-claimed after a cut-off).
    pub(crate) async fn carry_out(
        &self,
        tasks: Vec<UnfinishedTask>,
    ) -> Result<RecoveryReport, RuntimeError> {
        let plan = plan(tasks, |skill| self.skill_card(skill).map(|c| c.resumable));
        let metrics = telemetry::metrics();
        for (skill, id, state) in &plan.found {
            metrics.state_changed(skill, id, None, *state);
        }
        let mut report = RecoveryReport {
            resumed: plan.resume.values().map(Vec::len).sum(),
            waiting_for_input: plan.waiting.len(),
            ..RecoveryReport::default()
        };
        metrics.recovered_n("waiting", report.waiting_for_input);
        metrics.recovered_n("resumed", report.resumed);
        // No actor yet: each starts once its task has a slot, in the order read.
        for (skill, ids) in plan.resume {
            for id in &ids {
                tracing::info!(task_id = %id, "resuming task after restart");
            }
            self.resume_in_turn(skill, ids);
        }
        let store = self.store().clone();
        report.failed = futures::stream::iter(plan.fail)
            .map(|(id, reason)| {
                let store = store.clone();
                async move {
                    tracing::info!(task_id = %id, %reason, "failing task after restart");
                    metrics.recovered("failed");
                    TaskJournal::fail_stored(&store, &id, &reason, "restart").await
                }
            })
            .buffer_unordered(PARALLEL_FAILS)
            .try_fold(0, |n, changed| async move { Ok(n + usize::from(changed)) })
            .await?;
        Ok(report)
    }
}
