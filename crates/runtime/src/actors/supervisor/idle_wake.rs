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
use crate::error::RuntimeError;
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
                    self.failed_wakes.add(&task_id, &error);
                    self.idle.insert(task_id, now + RETRY);
                    continue;
                }
            }
            self.idle.remove(&task_id);
        }
        if let Some(Untold {
            tasks,
            first,
            error,
        }) = self.failed_wakes.untold(now)
        {
            tracing::warn!(tasks, %first, %error, "could not wake tasks whose idle wait is over; trying again in a second");
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

/// Wakes that failed, told in one line at most every `RETRY`: an outage fails every
/// wake, in every check, and a check wakes `WAKES_PER_CHECK` tasks at a time.
#[derive(Default)]
pub(super) struct FailedWakes {
    /// Failed since last told: how many, and the first.
    tasks: usize,
    first: Option<(TaskId, String)>,
    told_at: Option<Instant>,
}

/// What a warning of failed wakes says.
#[derive(Debug, PartialEq)]
struct Untold {
    tasks: usize,
    first: TaskId,
    error: String,
}

impl FailedWakes {
    fn add(&mut self, task_id: &TaskId, error: &RuntimeError) {
        self.tasks += 1;
        if self.first.is_none() {
            self.first = Some((task_id.clone(), error.to_string()));
        }
    }

    /// The failures to tell now, if there are any and none were told in the last
    /// `RETRY`.
    fn untold(&mut self, now: Instant) -> Option<Untold> {
        if self.told_at.is_some_and(|at| now < at + RETRY) {
            return None;
        }
        let (first, error) = self.first.take()?;
        self.told_at = Some(now);
        let tasks = std::mem::take(&mut self.tasks);
        Some(Untold {
            tasks,
            first,
            error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_wakes_are_told_at_most_once_a_retry_with_their_count() {
        let (now, mut failed) = (Instant::now(), FailedWakes::default());
        assert_eq!(failed.untold(now), None);
        let down = RuntimeError::TaskNotFound("gone".into());
        for task in ["a", "b", "c"] {
            failed.add(&task.into(), &down);
        }
        let told = failed.untold(now).unwrap();
        assert_eq!((told.tasks, told.first.as_str()), (3, "a"));
        failed.add(&"d".into(), &down);
        failed.add(&"e".into(), &down);
        assert_eq!(failed.untold(now + RETRY / 2), None);
        let told = failed.untold(now + RETRY).unwrap();
        assert_eq!((told.tasks, told.first.as_str()), (2, "d"));
        assert_eq!(failed.untold(now + RETRY * 3), None);
    }
}
