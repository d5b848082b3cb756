//! Waking the tasks that parked while their runs waited idle (`SkillContext::idle`),
//! once each wait is over: the task gets an actor again and its run starts from its
//! checkpoint, as a task woken by a message would. One timer serves them all (the
//! soonest wait's end), so that a parked task costs an entry in `IdleWakes` and no timer
//! of its own.

use std::time::Duration;

use chrono::{DateTime, Utc};
use ractor::ActorRef;
use tokio::time::Instant;

use super::SupervisorState;
use crate::actors::supervisor_msg::SupervisorMsg;
use crate::model::TaskId;

/// How long after a failed wake (the store unreachable) it is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// The most tasks one check wakes; the rest are woken by the checks that follow at
/// once. Each wake asks the store (and, on a node of several, the database) in turn,
/// and the supervisor routes nothing else meanwhile, so that many waits ending
/// together would hold up every call and subscriber that needs it.
const WAKES_PER_CHECK: usize = 64;

impl SupervisorState {
    /// The task parked until `at`. Shutting down, it is left to the next start, which
    /// runs it again from its checkpoint as it does every task that was working.
    pub(super) fn wake_at(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        task_id: TaskId,
        at: Instant,
    ) {
        if self.shutting_down {
            return;
        }
        self.idle.insert(task_id, at);
        self.check_idle_later(myself);
    }

    /// Tasks found parked idle in the store (by a start, a takeover or a re-claim), each
    /// to wake when its stored wait ends, by this node's clock (one already past: at
    /// once).
    pub(super) fn still_idle(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        tasks: Vec<(TaskId, DateTime<Utc>)>,
    ) {
        if self.shutting_down {
            return;
        }
        let (now, wall) = (Instant::now(), Utc::now());
        for (task_id, until) in tasks {
            let left = (until - wall).to_std().unwrap_or_default();
            let left = left.min(crate::context::FOREVER);
            self.idle.insert_unless_known(&task_id, now + left);
        }
        self.check_idle_later(myself);
    }

    /// Wakes the tasks whose wait is over (`WAKES_PER_CHECK` at a time), unless
    /// something woke them first, or another node holds them now; cut off from the
    /// database, they are left to the re-claim that follows (it runs again what was
    /// working). A task the store could not be asked about is tried again `RETRY` later.
    pub(super) async fn wake_idle(&mut self, myself: &ActorRef<SupervisorMsg>) {
        self.idle.checked();
        let now = Instant::now();
        // Failed wakes, told in one line per check (an outage fails them all).
        let mut failed = None;
        for task_id in self.idle.due(now, WAKES_PER_CHECK) {
            let asleep =
                !self.shutting_down && !self.cut_off && self.live_actor(&task_id).is_none();
            if asleep {
                let woken = match self.held_elsewhere(&task_id).await {
                    // Its start takes its entry (and knows from it that it was idle).
                    Ok(false) => {
                        (self.try_start_unfinished(myself, &task_id, None).await).map(drop)
                    }
                    Ok(true) => Ok(()),
                    Err(error) => Err(error),
                };
                if let Err(error) = woken {
                    let (_, _, tasks) = failed.get_or_insert((task_id.clone(), error, 0));
                    *tasks += 1;
                    self.idle.insert(task_id, now + RETRY);
                    continue;
                }
            }
            self.idle.remove(&task_id);
        }
        if let Some((task_id, error, tasks)) = failed {
            tracing::warn!(tasks, first = %task_id, %error, "could not wake tasks whose idle wait is over; trying again in a second");
        }
        self.check_idle_later(myself);
    }

    /// Asks for the next wake check, when the soonest wait ends before any asked for
    /// (at once, behind the messages already sent, when some are due still).
    fn check_idle_later(&mut self, myself: &ActorRef<SupervisorMsg>) {
        if let Some(after) = self.idle.next_check(Instant::now()) {
            myself.send_after(after, || SupervisorMsg::WakeIdle);
        }
    }
}
