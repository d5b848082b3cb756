//! `Resumer`: carries out recovery's plan (`recovery_plan`) at start, for tasks taken
//! over from a node that stopped renewing their leases (a store several nodes share),
//! and for those re-claimed after a cut-off: counting what was found, queueing resumes
//! for their slots, handing the supervisor the idle waits to wake, failing what cannot
//! resume, reporting what the store set aside.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::{StreamExt, TryStreamExt};
use ractor::ActorRef;
use tokio::task::AbortHandle;

use crate::actors::{Slots, SupervisorMsg, TaskJournal};
use crate::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::model::{SkillId, TaskId};
use crate::recovery_plan::{RecoveryReport, plan};
use crate::skill::SkillCard;
use crate::store::{TaskStore, UnfinishedTask};
use crate::telemetry;

/// Failure commits in flight at once, so that they share flushes.
const PARALLEL_FAILS: usize = 64;

/// What resumes stored tasks, and its queues of tasks waiting for a slot to resume.
pub(crate) struct Resumer {
    store: Arc<dyn TaskStore>,
    supervisor: ActorRef<SupervisorMsg>,
    slots: Arc<Slots>,
    config: Arc<RuntimeConfig>,
    /// Whether each registered skill's tasks resume after a restart (its card says).
    resumable: HashMap<SkillId, bool>,
    /// The queues of tasks to resume as slots free up (stopped at shutdown).
    queues: Mutex<Vec<AbortHandle>>,
}

impl Resumer {
    pub(crate) fn new(
        store: Arc<dyn TaskStore>,
        supervisor: ActorRef<SupervisorMsg>,
        slots: Arc<Slots>,
        config: Arc<RuntimeConfig>,
        cards: &[SkillCard],
    ) -> Resumer {
        Resumer {
            store,
            supervisor,
            slots,
            config,
            resumable: cards.iter().map(|c| (c.id.clone(), c.resumable)).collect(),
            queues: Mutex::default(),
        }
    }

    /// Recovers the tasks a previous run left unfinished (before new work is taken).
    pub(crate) async fn recover(&self) -> Result<RecoveryReport, RuntimeError> {
        let tasks = self.store.unfinished_tasks().await?;
        // Set aside by the store while it opened or read the active tasks just now: read
        // before any resume starts, as a resumed task that cannot be read is set aside
        // when it wakes and is not the start's to count.
        let quarantined = self.store.quarantined().await?;
        let mut report = self.carry_out(tasks).await?;
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
        let records = self.store.take_over().await?;
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
        let plan = plan(tasks, |skill| self.resumable.get(skill).copied());
        let metrics = telemetry::metrics();
        for ((skill, state), tasks) in &plan.found {
            metrics.found(skill, *state, *tasks);
        }
        let mut report = RecoveryReport {
            resumed: plan.resume.values().map(Vec::len).sum(),
            waiting_for_input: plan.waiting.len(),
            idle: plan.idle.len(),
            ..RecoveryReport::default()
        };
        metrics.recovered_n("waiting", report.waiting_for_input);
        metrics.recovered_n("idle", report.idle);
        if !plan.idle.is_empty() {
            // No actor either: each wakes when its wait ends, as it would have.
            tracing::info!(
                tasks = report.idle,
                "tasks whose runs wait idle stay parked until their waits end"
            );
            let _ = (self.supervisor).cast(SupervisorMsg::StillIdle(plan.idle));
        }
        metrics.recovered_n("resumed", report.resumed);
        // No actor yet: each starts once its task has a slot, in the order read.
        for (skill, ids) in plan.resume {
            // Once per skill: a backlog of a million would be as many lines.
            tracing::info!(%skill, tasks = ids.len(), "resuming tasks after restart, each once it has a slot");
            for id in &ids {
                tracing::debug!(task_id = %id, "resuming task after restart");
            }
            self.resume_in_turn(skill, ids);
        }
        let store = self.store.clone();
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

    /// Resumes these submitted or working tasks of `skill`, in order, each once it has a
    /// slot: its actor starts then (see `SupervisorMsg::Resume`), so a backlog of tasks
    /// waiting for slots after a restart holds no actors. Up to the skill's concurrency
    /// wait for a slot at once, queued with the tasks submitted since.
    fn resume_in_turn(&self, skill: SkillId, ids: Vec<TaskId>) {
        let slots = self.slots.clone();
        let supervisor = self.supervisor.clone();
        let at_once = self.config.concurrency_of(&skill).max(1);
        let resumer = tokio::spawn(async move {
            let mut backlog = slots.backlog(ids.len());
            let asks = ids.into_iter().map(|task_id| {
                backlog.asking();
                let (slots, skill, supervisor) = (slots.clone(), skill.clone(), supervisor.clone());
                async move {
                    if let Some(slot) = slots.take(&skill).await {
                        let _ = supervisor.cast(SupervisorMsg::Resume { task_id, slot });
                    }
                }
            });
            futures::stream::iter(asks)
                .buffered(at_once)
                .for_each(|()| async {})
                .await;
        });
        let mut queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        queues.retain(|r| !r.is_finished());
        queues.push(resumer.abort_handle());
    }

    /// Stops the queues of tasks waiting to resume (what they hold stays stored).
    pub(crate) fn abort(&self) {
        let mut queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        for queue in queues.drain(..) {
            queue.abort();
        }
    }
}
