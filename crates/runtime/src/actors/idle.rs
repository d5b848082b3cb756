//! Idle runs: a run that told its task it has nothing to do until a given time
//! (`SkillContext::idle`), because it waits on something outside the task. A resumable
//! task whose wait still has `runtime.park-after-ms` to go once nothing has happened to
//! it for that long parks (`Rest::parkable`), and its run stops. The supervisor keeps
//! the time its wait ends (`IdleWakes`, a few dozen bytes per task) and wakes it then,
//! and its run starts again from its checkpoint. The commit that parks it stores that
//! time too (`TaskRecord::idle_until`), so that a start leaves it parked.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use tokio::time::Instant;

use crate::context::FOREVER;
use crate::model::TaskId;

/// The wait a run is in: which run, and until when.
#[derive(Debug, Clone, Copy)]
pub(super) struct IdleRun {
    pub(super) run: u64,
    pub(super) until: Instant,
}

impl IdleRun {
    /// Whether the wait still has at least `park_after` to go: long enough to park for.
    pub(super) fn long_enough(&self, park_after: Option<Duration>) -> bool {
        park_after
            .is_some_and(|after| self.until.saturating_duration_since(Instant::now()) >= after)
    }

    /// When the wait ends, by the wall clock (as stored, for a start to read).
    pub(super) fn ends_at(&self) -> DateTime<Utc> {
        let left = self.until.saturating_duration_since(Instant::now());
        let left = TimeDelta::from_std(left.min(FOREVER)).unwrap_or_default();
        Utc::now() + left
    }
}

/// When each parked idle task is to be woken, soonest first, and the time the
/// supervisor's next wake check is due.
#[derive(Default)]
pub(super) struct IdleWakes {
    by_time: BTreeSet<(Instant, TaskId)>,
    by_task: HashMap<TaskId, Instant>,
    /// When the check already asked for comes.
    check_at: Option<Instant>,
}

impl IdleWakes {
    /// The task parked until `at` (in place of any earlier wake of it).
    pub(super) fn insert(&mut self, task_id: TaskId, at: Instant) {
        if let Some(before) = self.by_task.insert(task_id.clone(), at) {
            self.by_time.remove(&(before, task_id.clone()));
        }
        self.by_time.insert((at, task_id));
    }

    /// The task parked until `at`, unless a wake of it is known already: one its actor
    /// asked for since is newer than what a start read, and one marked due now (its
    /// `WakeAt` still on its way, so that the start the caller makes knows) would only
    /// come sooner.
    pub(super) fn insert_unless_known(&mut self, task_id: &TaskId, at: Instant) {
        if !self.by_task.contains_key(task_id) {
            self.insert(task_id.clone(), at);
        }
    }

    /// Forgets the task's wake (it is woken now): whether it had one.
    pub(super) fn remove(&mut self, task_id: &TaskId) -> bool {
        let Some(at) = self.by_task.remove(task_id) else {
            return false;
        };
        self.by_time.remove(&(at, task_id.clone()));
        true
    }

    /// The tasks whose wait is over, at most `limit` of them, soonest first, taken off
    /// the timeline; each keeps its entry until it is woken or let go (`remove`), so
    /// that its start knows it was parked idle.
    pub(super) fn due(&mut self, now: Instant, limit: usize) -> Vec<TaskId> {
        let mut due = Vec::new();
        while due.len() < limit
            && let Some((at, _)) = self.by_time.first()
            && *at <= now
        {
            let Some((_, task_id)) = self.by_time.pop_first() else {
                break;
            };
            due.push(task_id);
        }
        due
    }

    /// How long until the next check, when one is needed that is not asked for yet: a
    /// wait ends sooner than the check asked for, or none is asked for. The caller asks
    /// for it (its time is recorded as asked for).
    pub(super) fn next_check(&mut self, now: Instant) -> Option<Duration> {
        let (soonest, _) = self.by_time.first()?;
        if self
            .check_at
            .is_some_and(|check| check <= *soonest && check > now)
        {
            return None;
        }
        self.check_at = Some(*soonest);
        Some(soonest.saturating_duration_since(now))
    }

    /// A check came: the next one is to be asked for anew.
    pub(super) fn checked(&mut self) {
        self.check_at = None;
    }

    /// Parked idle tasks waiting for their time.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_task.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_are_taken_soonest_first_and_a_task_waits_once() {
        let now = Instant::now();
        let mut wakes = IdleWakes::default();
        wakes.insert("a".into(), now + Duration::from_secs(5));
        wakes.insert("b".into(), now + Duration::from_secs(2));
        // Parked again: its later wait replaces the first.
        wakes.insert("b".into(), now + Duration::from_secs(7));
        assert_eq!(wakes.len(), 2);
        assert_eq!(wakes.next_check(now), Some(Duration::from_secs(5)));
        // Asked for already, and nothing ends sooner.
        assert_eq!(wakes.next_check(now), None);
        wakes.insert("c".into(), now + Duration::from_secs(1));
        assert_eq!(wakes.next_check(now), Some(Duration::from_secs(1)));
        assert!(wakes.due(now, 10).is_empty());
        let at_six = now + Duration::from_secs(6);
        // At most as many as asked for, soonest first; the rest stay due.
        assert_eq!(wakes.due(at_six, 1), vec![TaskId::from("c")]);
        wakes.checked();
        assert_eq!(wakes.next_check(at_six), Some(Duration::ZERO));
        assert_eq!(wakes.due(at_six, 10), vec![TaskId::from("a")]);
        assert!(wakes.remove(&TaskId::from("c")) && wakes.remove(&TaskId::from("a")));
        wakes.checked();
        assert_eq!(wakes.next_check(at_six), Some(Duration::from_secs(1)));
        assert!(wakes.remove(&TaskId::from("b")));
        assert!(!wakes.remove(&TaskId::from("b")));
        assert!(wakes.due(now + Duration::from_secs(7), 10).is_empty());
        assert_eq!(wakes.next_check(at_six), None);
        assert_eq!(wakes.len(), 0);
    }
}
