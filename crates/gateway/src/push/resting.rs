//! Deliveries at rest: configs whose task has no actor on this node, so that their
//! worker ended (see `workers`). A resting delivery costs its config here, not a worker.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use fundi_runtime::TaskId;
use fundi_runtime::store::PushConfig;

/// The resting deliveries of one push service, by task.
#[derive(Clone, Default)]
pub(super) struct Resting(Arc<Mutex<HashMap<TaskId, Vec<PushConfig>>>>);

impl Resting {
    /// Leaves `config` resting until its task wakes.
    pub(super) fn rest(&self, config: &PushConfig) {
        let mut resting = self.lock();
        let configs = resting.entry(config.task_id.clone()).or_default();
        configs.retain(|c| c.id != config.id);
        configs.push(config.clone());
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
        taken
    }

    /// Takes every resting config of the task.
    pub(super) fn take_task(&self, task_id: &TaskId) -> Vec<PushConfig> {
        self.lock().remove(task_id).unwrap_or_default()
    }

    pub(super) fn contains(&self, task_id: &TaskId, id: &str) -> bool {
        self.lock()
            .get(task_id)
            .is_some_and(|configs| configs.iter().any(|c| c.id == id))
    }

    pub(super) fn clear(&self) {
        self.lock().clear();
    }

    /// How many configs rest.
    pub(super) fn len(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<TaskId, Vec<PushConfig>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
