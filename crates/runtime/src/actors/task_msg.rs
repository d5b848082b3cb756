//! What a task actor is sent (`TaskMsg`), how it was started (`StartMode`), who waits
//! for its outcome (`Waiter`), and how its skill's run ended (`RunOutcome`).

use ractor::RpcReplyPort;
use tokio::sync::oneshot;

use super::fanout::LiveEvents;
use super::slots::Slot;
use crate::error::RuntimeError;
use crate::model::{Message, Task};
use crate::requests::TaskSnapshot;
use crate::run_link::{SkillCall, SkillReply};
use crate::skill::{SkillError, SkillOutput};

/// How a skill run ended.
pub(crate) enum RunOutcome {
    Returned(Result<SkillOutput, SkillError>),
    Panicked(String),
    Aborted,
}

pub(crate) enum TaskMsg {
    /// The task got a concurrency slot: start the queued run (or hand the waiting run
    /// its answer).
    Start(Slot),
    /// A call of the run with this id.
    Skill(SkillCall, RpcReplyPort<SkillReply>, u64),
    /// The run posted a note to an empty queue (`PostedNotes`): commit what waits.
    Posted,
    /// A user's follow-up message, and who waits for the task's outcome after it.
    Deliver(
        Message,
        RpcReplyPort<Result<TaskSnapshot, RuntimeError>>,
        Option<Waiter>,
    ),
    Cancel(RpcReplyPort<Result<Task, RuntimeError>>),
    Subscribe(RpcReplyPort<LiveEvents>),
    /// Like `Subscribe`, for a watcher that does not keep the task from parking.
    Watch(RpcReplyPort<LiveEvents>),
    /// A subscriber dropped its receiver: let go of its queue.
    SubscriberLeft,
    RunFinished {
        run: u64,
        outcome: RunOutcome,
    },
    GraceExpired {
        run: u64,
    },
    /// This node is cut off from the database: the run is told to stop and has
    /// `stop_within` to do so; nothing more is written from here, and the actor stops.
    CutOff {
        stop_within: std::time::Duration,
    },
    /// The time a run had to stop after a cut-off is over: the actor stops (and aborts
    /// its run).
    CutOffExpired,
    /// Whether the task may park (`park`): sent once it came to rest, when `activity`
    /// messages had been handled.
    Park {
        activity: u64,
    },
    /// An approver's decision on a task that waits for one.
    Decide(
        crate::approval::Decision,
        RpcReplyPort<Result<Task, RuntimeError>>,
    ),
}

/// Why the actor was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartMode {
    /// A new task: run it once a slot is free.
    Fresh,
    /// A task a restart interrupted while submitted or working: run it again.
    Resume,
    /// A new task that waited for a slot with no actor (`SlotQueue`): run it from its
    /// first message, once it has its slot (the queue hands it over).
    Queued,
    /// A working task that parked while its run waited idle (`SkillContext::idle`),
    /// woken here (its wait over, or by a message, a cancel or a subscriber): its run
    /// starts again from its checkpoint, and says nothing of it (no restart happened).
    IdleWake,
    /// A task at rest (waiting for input or an approver) woken by a message, a cancel,
    /// a decision or a subscriber, after a restart or a park: no run yet.
    Wake,
}

/// A submitter that tells only the task's outcome: the actor answers it with the task
/// as it stands once the task is at rest (`approval::at_rest`: ended, or waiting for
/// someone). Written, not yet durable: the submitter settles before telling it.
pub(crate) type Waiter = oneshot::Sender<TaskSnapshot>;

/// Why a task actor stops when its node is cut off from the database.
pub(crate) const CUT_OFF: &str = "this node is cut off from the database";
