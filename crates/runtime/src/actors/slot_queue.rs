//! `SlotQueue`: new tasks waiting for a slot of their skill with no actor. A task
//! submitted while every slot of its skill is taken, that nobody follows (no stream, no
//! submitter waiting for its outcome), waits as its id and one small future on the
//! skill's fair semaphore (`Slots::take`), in line with every other task that waits
//! there; its actor starts once it has its slot (`SupervisorMsg::Resume`), as a task a
//! restart queued does. A backlog of 100,000 queued tasks costs their stored records
//! and a few hundred bytes each, not an idle actor each.
//!
//! One pump holds every queued task's wait, and starts each in the order the tasks were
//! queued: a wait takes its place in the semaphore's line when first polled, and waits
//! spawned as tasks of their own would be first polled in no set order.
//!
//! A call or a subscriber that reaches a queued task starts its actor at once; the
//! wait keeps the task's place in line and hands the actor its slot.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use ractor::ActorRef;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::slots::Slots;
use super::supervisor_msg::SupervisorMsg;
use crate::model::{SkillId, TaskId};

pub(crate) struct SlotQueue {
    slots: Arc<Slots>,
    /// Queued here and not started yet: their first run is a fresh one, not one that
    /// resumes after a restart.
    queued: HashSet<TaskId>,
    /// The pump, started with the first task queued.
    pump: Option<Pump>,
}

/// The task that holds the queued tasks' waits, and where tasks are sent to it.
struct Pump {
    tasks: mpsc::UnboundedSender<(TaskId, SkillId)>,
    task: AbortHandle,
}

impl SlotQueue {
    pub(crate) fn new(slots: Arc<Slots>) -> SlotQueue {
        SlotQueue {
            slots,
            queued: HashSet::new(),
            pump: None,
        }
    }

    /// Queues `task_id` for a slot of `skill`: `Resume` is cast to `supervisor` with
    /// the slot once the task has one.
    pub(crate) fn push(
        &mut self,
        task_id: TaskId,
        skill: SkillId,
        supervisor: &ActorRef<SupervisorMsg>,
    ) {
        self.queued.insert(task_id.clone());
        let pump = self.pump.get_or_insert_with(|| {
            let (tasks, queued) = mpsc::unbounded_channel();
            let (slots, supervisor) = (self.slots.clone(), supervisor.clone());
            let task = tokio::spawn(pump(slots, queued, supervisor)).abort_handle();
            Pump { tasks, task }
        });
        // The pump lives as long as this queue's handle on it (`stop_all` aborts it).
        let _ = pump.tasks.send((task_id, skill));
    }

    /// Whether `task_id` waits here, its run not started yet.
    pub(crate) fn holds(&self, task_id: &TaskId) -> bool {
        self.queued.contains(task_id)
    }

    /// `task_id` has its slot (or no longer needs one): it waits here no more.
    pub(crate) fn remove(&mut self, task_id: &TaskId) {
        self.queued.remove(task_id);
    }

    /// Stops every wait: the tasks stay stored as they are, for the next start or the
    /// re-claim that follows a cut-off.
    pub(crate) fn stop_all(&mut self) {
        if let Some(pump) = self.pump.take() {
            pump.task.abort();
        }
        self.queued = HashSet::new();
    }
}

/// Takes each task sent on `queued` into the line for its skill's slot, in the order
/// sent, and casts `Resume` with the slot once it has one.
async fn pump(
    slots: Arc<Slots>,
    mut queued: mpsc::UnboundedReceiver<(TaskId, SkillId)>,
    supervisor: ActorRef<SupervisorMsg>,
) {
    let mut waits = FuturesUnordered::new();
    loop {
        tokio::select! {
            // New tasks first: a wait pushed is polled (takes its place) in push order.
            biased;
            next = queued.recv() => match next {
                Some((task_id, skill)) => {
                    let slots = slots.clone();
                    waits.push(async move { (task_id, slots.take(&skill).await) });
                }
                None => return,
            },
            Some((task_id, slot)) = waits.next(), if !waits.is_empty() => {
                // `None`: the skill is not registered (not reached: a task is queued
                // only for a registered one).
                if let Some(slot) = slot {
                    // The supervisor gone: the slot is dropped with the message, freed.
                    let _ = supervisor.cast(SupervisorMsg::Resume { task_id, slot });
                }
            }
        }
    }
}
