//! The delivery workers of one push service: at most one running per config, and the
//! deliveries resting while their task has no actor.
//!
//! A worker watches its task (`TaskService::watch`), so the task may park. Once it has
//! no actor, the worker leaves its config here and ends; the runtime's wake hook
//! (`TaskService::on_wake`) starts a worker again for each config of a task that gets an
//! actor back. A resting delivery costs its config (`resting`), not a worker.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use fundi_runtime::TaskId;
use fundi_runtime::store::{PushConfig, PushEntry};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::cursor::{claim, finish};
use super::resting::{Rested, Resting, rest_unless_moved_on};
use super::{Shared, deliver};

/// Deliveries a resume looks at together, at most (each a few reads).
const RESUMING_AT_ONCE: usize = 16;

type WorkerKey = (TaskId, String);

/// The running delivery workers and the resting deliveries.
#[derive(Clone)]
pub(super) struct Workers {
    running: Arc<Mutex<HashMap<WorkerKey, (u64, CancellationToken)>>>,
    resting: Resting,
    generation: Arc<AtomicU64>,
    pub(super) shutdown: CancellationToken,
}

impl Workers {
    pub(super) fn new(shutdown: CancellationToken) -> Workers {
        Workers {
            running: Arc::default(),
            resting: Resting::default(),
            generation: Arc::default(),
            shutdown,
        }
    }

    /// Starts the worker of `config`, in place of one running for it (which stops) or
    /// of its delivery resting (a copy of the config as it was: a wake must not start
    /// a worker with it once a replacement's is under way).
    pub(super) fn start(&self, shared: &Arc<Shared>, config: PushConfig) {
        self.resting.take_back(&config.task_id, &config.id);
        let key = (config.task_id.clone(), config.id.clone());
        let generation = self.generation.fetch_add(1, Ordering::Relaxed);
        let stop = self.shutdown.child_token();
        let replaced = lock(&self.running).insert(key.clone(), (generation, stop.clone()));
        if let Some((_, old)) = replaced {
            old.cancel();
        }
        let (shared, workers) = (shared.clone(), self.clone());
        tokio::spawn(async move {
            deliver::run(shared, config, stop, &workers.resting).await;
            let mut running = lock(&workers.running);
            if running.get(&key).is_some_and(|(g, _)| *g == generation) {
                running.remove(&key);
            }
        });
    }

    /// Resumes the unfinished deliveries `entries` (none dead-lettered) in the
    /// background, a few at a time: each one this node takes rests at once if its task
    /// has no actor and nothing past its cursor (no worker; the task's wake starts one),
    /// and gets a worker otherwise. A start with many waiting tasks so reads their
    /// deliveries in turn, neither starting a worker for each nor waking their tasks.
    pub(super) fn resume(&self, shared: &Arc<Shared>, entries: Vec<PushEntry>) {
        let (shared, workers) = (shared.clone(), self.clone());
        tokio::spawn(async move {
            let (count, started) = (entries.len(), std::time::Instant::now());
            let each = futures::stream::iter(entries)
                .for_each_concurrent(RESUMING_AT_ONCE, |entry| workers.resume_one(&shared, entry));
            tokio::select! {
                () = workers.shutdown.cancelled() => {}
                () = each => {
                    let resting = workers.resting();
                    let seconds = started.elapsed().as_secs_f64();
                    tracing::info!(deliveries = count, resting, seconds, "push deliveries resumed");
                }
            }
        });
    }

    async fn resume_one(&self, shared: &Arc<Shared>, entry: PushEntry) {
        let PushEntry { config, mut cursor } = entry;
        // Started or rested since it was read (a request set the config again, or its
        // task woke): that is the newer, and it stays.
        if self.is_running(&config.task_id, &config.id) {
            return;
        }
        if !claim(shared, &config).await {
            return;
        }
        match rest_unless_moved_on(shared, &config, &mut cursor, &self.resting).await {
            Rested::GoOn { .. } => self.start(shared, config),
            Rested::Finished(ended) => finish(shared, &config, ended).await,
            Rested::Resting | Rested::Replaced => {}
        }
    }

    /// Stops the delivery of one config (deleted), running or resting.
    pub(super) fn stop(&self, task_id: &TaskId, id: &str) {
        self.resting.take_back(task_id, id);
        let key = (task_id.clone(), id.to_owned());
        let removed = lock(&self.running).remove(&key);
        if let Some((_, stop)) = removed {
            stop.cancel();
        }
    }

    /// Stops every delivery (the node is cut off from the database).
    pub(super) fn stop_all(&self) {
        self.resting.clear();
        for (_, (_, stop)) in lock(&self.running).drain() {
            stop.cancel();
        }
    }

    /// Whether this node delivers the config now, or rests it.
    pub(super) fn is_running(&self, task_id: &TaskId, id: &str) -> bool {
        lock(&self.running).contains_key(&(task_id.clone(), id.to_owned()))
            || self.resting.contains(task_id, id)
    }

    /// The task has an actor again (or was failed without one): a worker starts for
    /// each of its resting configs.
    pub(super) fn wake(&self, shared: &Arc<Shared>, task_id: &TaskId) {
        for config in self.resting.take_task(task_id) {
            self.start(shared, config);
        }
    }

    /// How many deliveries rest.
    pub(super) fn resting(&self) -> usize {
        self.resting.len()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
