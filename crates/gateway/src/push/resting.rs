//! Deliveries at rest: configs whose task has no actor on this node, so that no worker
//! follows them (see `workers`), and the decision to rest one. A resting delivery costs
//! its config here, not a worker.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use fundi_runtime::store::{PushConfig, PushCursor};
use fundi_runtime::{Access, Presence, RuntimeError, TaskId};

use super::Shared;
use super::cursor::{Ended, save};
use crate::telemetry;

/// `n` as a change of the resting gauge.
fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The resting deliveries of one push service, by task.
#[derive(Clone, Default)]
pub(super) struct Resting(Arc<Mutex<HashMap<TaskId, Vec<PushConfig>>>>);

impl Resting {
    /// Leaves `config` resting until its task wakes.
    pub(super) fn rest(&self, config: &PushConfig) {
        let mut resting = self.lock();
        let configs = resting.entry(config.task_id.clone()).or_default();
        let before = configs.len();
        configs.retain(|c| c.id != config.id);
        configs.push(config.clone());
        telemetry::metrics().push_resting(count(configs.len()) - count(before));
    }

    /// Takes a resting config back; false if it was not resting (a wake took it first).
    pub(super) fn take_back(&self, task_id: &TaskId, id: &str) -> bool {
        let mut resting = self.lock();
        let Some(configs) = resting.get_mut(task_id) else {
            return false;
        };
        let before = configs.len();
        configs.retain(|c| c.id != id);
        let taken = configs.len() < before;
        if configs.is_empty() {
            resting.remove(task_id);
        }
        if taken {
            telemetry::metrics().push_resting(-1);
        }
        taken
    }

    /// Takes every resting config of the task.
    pub(super) fn take_task(&self, task_id: &TaskId) -> Vec<PushConfig> {
        let taken = self.lock().remove(task_id).unwrap_or_default();
        telemetry::metrics().push_resting(-count(taken.len()));
        taken
    }

    pub(super) fn contains(&self, task_id: &TaskId, id: &str) -> bool {
        self.lock()
            .get(task_id)
            .is_some_and(|configs| configs.iter().any(|c| c.id == id))
    }

    pub(super) fn clear(&self) {
        let mut resting = self.lock();
        let cleared = resting.values().map(Vec::len).sum();
        resting.clear();
        telemetry::metrics().push_resting(-count(cleared));
    }

    /// How many configs rest.
    pub(super) fn len(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<TaskId, Vec<PushConfig>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What became of a delivery whose watch ended.
pub(super) enum Rested {
    /// Its task has an actor again, or events the watch did not yield: watch again
    /// (after a pause if `nothing_new`).
    GoOn { nothing_new: bool },
    /// Nothing is left to deliver: the task ended with everything delivered, or is gone.
    Finished(Ended),
    /// The delivery rests until its task wakes.
    Resting,
    /// A wake took the resting delivery first, and started another worker for it.
    Replaced,
}

/// Leaves the delivery resting, then looks whether it should go on after all. In this
/// order, no wake is missed: a task that gets an actor after the delivery rests calls
/// the wake hook, which finds it; one that got an actor before is awake now, or, if it
/// parked again already, has stored events past the cursor. (A task another node
/// holds is followed through the store: its delivery never rests here.)
pub(super) async fn rest_unless_moved_on(
    shared: &Shared,
    config: &PushConfig,
    cursor: &mut PushCursor,
    resting: &Resting,
) -> Rested {
    let (task_id, id) = (&config.task_id, config.id.as_str());
    resting.rest(config);
    let awake = shared.runtime.presence(task_id).await != Presence::Resting;
    // Whether the store holds events past the cursor (`None`: it could not tell).
    let moved_on = match shared.runtime.snapshot(task_id, Some(0), Access::Any).await {
        Ok(snapshot)
            if snapshot.task.status.state.is_terminal() && snapshot.seq <= cursor.delivered_seq =>
        {
            resting.take_back(task_id, id);
            cursor.finished = true;
            return Rested::Finished(save(shared, config, cursor).await);
        }
        Ok(snapshot) => Some(snapshot.seq > cursor.delivered_seq),
        Err(RuntimeError::TaskNotFound(_)) => {
            resting.take_back(task_id, id);
            return Rested::Finished(Ended::Done);
        }
        Err(error) => {
            tracing::warn!(%error, %task_id, "push: cannot read the task; looking again later");
            None
        }
    };
    if !awake && moved_on == Some(false) {
        return Rested::Resting;
    }
    match resting.take_back(task_id, id) {
        true => Rested::GoOn {
            nothing_new: moved_on != Some(true),
        },
        false => Rested::Replaced,
    }
}
