//! Parking: a task that waits for a person gives up its actor once nothing has happened
//! to it for `runtime.park-after-ms`. Its state is in the store already (every change
//! is stored before it is told), so the actor that a message, a cancel, a decision or a
//! subscriber wakes is built from the stored record, as after a restart, and answers
//! the same. A parked task costs no actor, channel, run or subscriber list: 100,000
//! pending approvals cost their stored records, not 2 to 3 GiB of idle actors.
//!
//! The supervisor hands out a task's actor and callers then send to it; a caller can
//! race the park. The actor raises its `Parked` flag before it stops, so that the
//! supervisor, asked again by a caller whose message the stop dropped, wakes a new
//! actor instead of handing out the stopped one.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use ractor::ActorRef;

use super::task_msg::TaskMsg;

/// Why a parked task's actor stops.
pub(crate) const PARKED: &str = "parked: the task waits in the store until something wakes it";

/// Raised by a task's actor as it parks (before it stops); read by the supervisor.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parked(Arc<AtomicU8>);

/// `Parked`'s values.
const LIVE: u8 = 0;
const WAITING: u8 = 1;
const IDLE: u8 = 2;

impl Parked {
    pub(crate) fn is_raised(&self) -> bool {
        self.0.load(Ordering::Acquire) != LIVE
    }

    /// Whether the task parked while its run waited idle (not at rest).
    pub(crate) fn while_idle(&self) -> bool {
        self.0.load(Ordering::Acquire) == IDLE
    }

    fn raise(&self, idle: bool) {
        let value = if idle { IDLE } else { WAITING };
        self.0.store(value, Ordering::Release);
    }
}

/// A task actor's idle clock: how much has happened to it, and whether a `Park` check
/// is on its way.
pub(super) struct ParkTimer {
    after: Option<Duration>,
    /// Messages handled so far (`Park` checks aside).
    activity: u64,
    armed: bool,
    parked: Parked,
}

impl ParkTimer {
    pub(super) fn new(after: Option<Duration>, parked: Parked) -> ParkTimer {
        ParkTimer {
            after,
            activity: 0,
            armed: false,
            parked,
        }
    }

    /// How long a task waits idle before it parks (`None`: it never parks).
    pub(super) fn after(&self) -> Option<Duration> {
        self.after
    }

    /// Something happened to the task: the idle clock starts again.
    pub(super) fn touch(&mut self) {
        self.activity += 1;
    }

    /// Sends a `Park` check after the idle time, unless one is on its way already (it
    /// sees whether anything happened since, and sends the next).
    pub(super) fn arm(&mut self, myself: &ActorRef<TaskMsg>) {
        let Some(after) = self.after.filter(|_| !self.armed) else {
            return;
        };
        self.armed = true;
        let activity = self.activity;
        myself.send_after(after, move || TaskMsg::Park { activity });
    }

    /// A `Park` check sent when `activity` messages had been handled arrived: whether
    /// nothing happened since.
    pub(super) fn fired(&mut self, activity: u64) -> bool {
        self.armed = false;
        activity == self.activity
    }

    /// Marks the task parked: the supervisor hands this actor out no more.
    /// (`idle`: its run waits idle, and the task is not at rest.)
    pub(super) fn park(&self, idle: bool) {
        self.parked.raise(idle);
    }
}
