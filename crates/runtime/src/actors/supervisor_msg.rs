//! What the supervisor is sent (`SupervisorMsg`), what it answers a route with
//! (`Routed`), what a new task actor starts with (`Spawn`), and what it counts
//! (`LiveCount`).

use ractor::{ActorRef, RpcReplyPort};

use super::journal::TaskJournal;
use super::slots::Slot;
use super::task_msg::{StartMode, TaskMsg, Waiter};
use crate::error::RuntimeError;
use crate::model::{SkillId, TaskId};

pub(crate) enum SupervisorMsg {
    /// Start an actor for a stored task. Answers with the task's actor (one already
    /// live, if any; `None` when none could start, and the task was failed).
    Spawn {
        spawn: Box<Spawn>,
        reply: RpcReplyPort<Result<Option<ActorRef<TaskMsg>>, RuntimeError>>,
    },
    /// The live actor of a task, starting one for a non-terminal task that has none
    /// (interrupted by a restart, or parked) if this node runs it. With `to_cancel` (the
    /// call is a cancel), a task parked idle wakes with no run, which the cancel would
    /// stop as soon as it started.
    Route {
        task_id: TaskId,
        to_cancel: bool,
        reply: RpcReplyPort<Result<Routed, RuntimeError>>,
    },
    /// The live actor of a task, for a subscriber. With `wake`, an unfinished task
    /// without one gets one: queued for a slot after a restart, it waits for its slot;
    /// at rest (parked, or waiting for input or an approver after a restart), it wakes
    /// with no run. Without (a watcher), it is left as it is.
    Live {
        task_id: TaskId,
        wake: bool,
        reply: RpcReplyPort<Routed>,
    },
    /// Whether the task has a live actor on this node (one that parked has not).
    Awake {
        task_id: TaskId,
        reply: RpcReplyPort<bool>,
    },
    /// Queue a new task, stored submitted, for a slot of its skill with no actor
    /// (`SlotQueue`): `Resume` follows once it has one.
    Queue { task_id: TaskId, skill: SkillId },
    /// Start the actor of a task queued for a slot (by recovery, or as it was
    /// submitted), with this slot. A task that has an actor already (woken by a call)
    /// is handed the slot; one no longer submitted or working frees it.
    Resume { task_id: TaskId, slot: Slot },
    /// The runtime shuts down: no task actor starts for a subscriber or a queued resume
    /// any more (what is unfinished stays stored for the next start).
    ShuttingDown,
    /// This node is cut off from the database: every task actor is told so (its run has
    /// `stop_within` to stop), and none starts until `Regained`.
    CutOff { stop_within: std::time::Duration },
    /// This node holds the database again: task actors may start.
    Regained,
    /// A task started (true) or stopped (false) waiting for a user's input.
    WaitingForInput { task_id: TaskId, waiting: bool },
    /// A task parked while its run waits idle (`SkillContext::idle`): wake it at `at`,
    /// when the wait is over (its run starts again from its checkpoint).
    WakeAt {
        task_id: TaskId,
        at: tokio::time::Instant,
    },
    /// Wake the parked idle tasks whose wait is over.
    WakeIdle,
    /// Tasks a start (or a takeover, or a re-claim) found parked idle: wake each when
    /// its stored wait ends.
    StillIdle(Vec<(TaskId, chrono::DateTime<chrono::Utc>)>),
}

/// Where a task's calls go.
pub(crate) enum Routed {
    /// To its actor on this node; `None`: it has none (it ended, or is unknown).
    Here(Option<ActorRef<TaskMsg>>),
    /// To another node, which holds the task's lease (a store several nodes share).
    Elsewhere,
}

/// What a new task actor starts with.
pub(crate) struct Spawn {
    /// The task's journal: its record, and for a new task its subscriber and first
    /// events (see `TaskJournal::create`).
    pub(crate) journal: TaskJournal,
    pub(crate) mode: StartMode,
    /// A fresh task that has this slot of its skill (stored already working): the
    /// actor runs it at once.
    pub(crate) slot: Option<Slot>,
    /// A new task's submitter that tells only its outcome. A fresh task's run then has
    /// its first poll made on the actor's own task, so that a run that ends at once
    /// ends in one commit.
    pub(crate) waiter: Option<Waiter>,
}

/// How many tasks have a live actor, and how many of those are busy (not just waiting
/// for a user's input).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LiveCount {
    pub(crate) live: usize,
    pub(crate) busy: usize,
}
