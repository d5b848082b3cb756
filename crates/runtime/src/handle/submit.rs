//! Submitting: one way in (`RuntimeHandle::submit`, a `Submission`), whose use says how the submitter
//! tells the outside about the task (`Delivery`), and so when it must be durable.
//! Awaited, the task as accepted is durable when it resolves; followed, so is each
//! event when it is yielded; waited on, only the outcome is told, so the accepted task
//! (written, readable) need only be durable by then, and one flush serves the send. The
//! task's actor answers that waiter itself, with the task as it stands once at rest.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::atomic::Ordering;

use tokio::sync::oneshot;

use crate::access::Access;

use super::dedup::{self, Found};
use super::outcome::Waiting;
use super::tasks::Attached;
use super::wire::TaskRequest;
use super::{Inner, RuntimeHandle};
use crate::actors::{Creation, NewTask, Reserved, Spawn, StartMode, TaskJournal, follower};
use crate::approval;
use crate::error::RuntimeError;
use crate::model::{ContextId, Role, TaskId};
use crate::requests::{SubmitRequest, TaskSnapshot};
use crate::subscription::{EventStream, Listen};
use crate::telemetry;

/// Longest accepted context id, in bytes.
const MAX_CONTEXT_ID_LEN: usize = 256;

/// A task to start, or a follow-up message to deliver, made by
/// [`RuntimeHandle::submit`]. Nothing happens until it is used:
///
/// - `.await`: the task as stored, once the message is durably accepted; the skill runs
///   in the background.
/// - [`Submission::follow`]: that, and the task's events after it, each durable.
/// - [`Submission::wait`]: for a caller that tells only the outcome (a blocking send).
#[must_use = "a submission does nothing until it is awaited, followed or waited on"]
pub struct Submission {
    handle: RuntimeHandle,
    request: SubmitRequest,
}

/// How a submitter tells the outside about the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delivery {
    /// The task as accepted, as soon as the submission returns.
    Accepted,
    /// Each event, as it follows them.
    Events,
    /// Only the outcome the task's actor answers with.
    Outcome,
}

/// What a submission was accepted as.
struct Accepted {
    /// The task after the message was accepted.
    snapshot: TaskSnapshot,
    /// A new task's actor and the queue it adopted for the submitter's stream.
    attached: Option<Attached>,
    /// The actor's answer once the task is at rest (for `Delivery::Outcome`, when the
    /// task's actor is on this node).
    outcome: Option<oneshot::Receiver<TaskSnapshot>>,
}

impl Accepted {
    /// A task as it stands, with no actor attached: found (a message sent again), or
    /// new and waiting with no actor. Nobody was told to answer.
    fn standing(snapshot: TaskSnapshot) -> Accepted {
        Accepted {
            snapshot,
            attached: None,
            outcome: None,
        }
    }
}

impl std::fmt::Debug for Submission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Submission")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}

impl IntoFuture for Submission {
    type Output = Result<TaskSnapshot, RuntimeError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let runtime = &self.handle.inner;
            let accepted = accept(runtime, self.request, Delivery::Accepted).await?;
            Ok(accepted.snapshot)
        })
    }
}

impl Submission {
    pub(super) fn new(handle: RuntimeHandle, request: SubmitRequest) -> Submission {
        Submission { handle, request }
    }

    /// Submits, and follows the task: the stream yields its events after the returned
    /// snapshot, each durable, as `subscribe(id, snapshot.seq)` would (a new task's
    /// stream is attached to its actor as the actor starts, which costs less than
    /// subscribing afterwards).
    pub async fn follow(self) -> Result<Following, RuntimeError> {
        let tasks = &self.handle.inner.tasks;
        let accepted = accept(&self.handle.inner, self.request, Delivery::Events).await?;
        let Accepted {
            snapshot, attached, ..
        } = accepted;
        let events =
            tasks.event_stream(&snapshot.task.id, snapshot.seq, attached, Listen::Subscribe);
        Ok(Following {
            accepted: snapshot,
            events,
        })
    }

    /// Submits for a caller that tells only the outcome (a blocking send):
    /// [`Waiting::outcome`] returns the task, durable, once it is at rest. The task as
    /// accepted is stored (readable) but not durable yet: tell its id, not more.
    pub async fn wait(self) -> Result<Waiting, RuntimeError> {
        let accepted = accept(&self.handle.inner, self.request, Delivery::Outcome).await?;
        Ok(Waiting::new(
            self.handle,
            accepted.snapshot,
            accepted.outcome,
        ))
    }
}

/// A submitted task and its events after the snapshot, each durable when yielded.
pub struct Following {
    /// The task as accepted (durable).
    pub accepted: TaskSnapshot,
    /// Its events after `accepted.seq`.
    pub events: EventStream,
}

impl std::fmt::Debug for Following {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Following")
            .field("accepted", &self.accepted)
            .finish_non_exhaustive()
    }
}

/// Checks and submits, as `delivery` tells the outside about it: durable before
/// it returns unless only the outcome is told.
async fn accept(
    runtime: &Inner,
    mut request: SubmitRequest,
    delivery: Delivery,
) -> Result<Accepted, RuntimeError> {
    if !runtime.accepting.load(Ordering::Acquire) {
        return Err(RuntimeError::Unavailable(
            "the runtime is shutting down".into(),
        ));
    }
    runtime.tasks.refuse_if_cut_off()?;
    let sender = request.owner.clone();
    request.message.stamp_sender(sender.as_deref());
    let message = &request.message;
    message.validate()?;
    if message.role != Role::User {
        return Err(RuntimeError::InvalidInput(
            "message.role must be ROLE_USER for messages sent to the agent".into(),
        ));
    }
    if let Some(context) = &message.context_id {
        validate_context_id(context)?;
    }
    if let Some(task_id) = message.task_id.clone() {
        let delivered = follow_up(runtime, task_id, request, delivery).await?;
        return told(runtime, delivery, delivered).await;
    }
    // The same first message from the same owner: the task it created.
    let owner = request.owner.as_deref();
    let window = runtime.config.dedup_window();
    let first = runtime
        .claims
        .first_message(&runtime.tasks, window, owner, &message.message_id);
    let mut claim = match first.await? {
        Found::Existing(existing) => {
            return told(runtime, delivery, Accepted::standing(*existing)).await;
        }
        Found::New(claim) => claim,
    };
    let created = create(runtime, request, delivery).await?;
    // Duplicates learn of the task now that it is stored; each settles as its own
    // delivery says before it tells anyone of it (`told`).
    claim.created(&created.snapshot.task.id);
    Ok(created)
}

/// The task a first message sent again created, as its owner sees it: told as a
/// submission that found its task.
async fn sent_again(
    runtime: &Inner,
    delivery: Delivery,
    id: &TaskId,
    owner: Option<&str>,
) -> Result<Accepted, RuntimeError> {
    let existing = dedup::snapshot_of(&runtime.tasks, id, owner).await?;
    told(runtime, delivery, Accepted::standing(existing)).await
}

/// A submission that found its task stored already, or delivered to it: durable
/// before it is told as accepted. One that tells only the outcome settles then
/// (`Waiting::outcome`).
async fn told(
    runtime: &Inner,
    delivery: Delivery,
    accepted: Accepted,
) -> Result<Accepted, RuntimeError> {
    if delivery != Delivery::Outcome {
        runtime.tasks.settle().await?;
    }
    Ok(accepted)
}

/// A new task: checked, stored, and started (or queued, or parked) as `delivery` needs.
async fn create(
    runtime: &Inner,
    request: SubmitRequest,
    delivery: Delivery,
) -> Result<Accepted, RuntimeError> {
    let intake = &runtime.intake;
    let skill = intake.select_skill(&request)?;
    intake.authorize(&skill, &request.grants)?;
    intake.check_message(&skill, &request.message)?;
    // A gated skill's task is stored waiting for an approver, and nothing runs.
    let gate = intake
        .gate(&skill, &request)
        .map(|r| approval::gate_status(&r));
    let gated = gate.is_some();
    // With a slot free, the task is stored already working, in the same commit: one
    // write fewer, and its actor runs it at once. With several nodes, that commit
    // takes the store's slot too (if none is free, the task is stored to queue).
    let reserved = match gated {
        true => None,
        false => runtime.slots.reserve(&skill),
    };
    let buffer = runtime.config.subscriber_buffer;
    let (follower, receiver) = (delivery == Delivery::Events)
        .then(|| follower(buffer))
        .unzip();
    let (waiter, outcome) = (delivery == Delivery::Outcome)
        .then(oneshot::channel)
        .unzip();
    // Stored working with its slot, unless its skill says when work begins.
    let sets_working = intake.sets_working(&skill);
    let window = runtime.config.dedup_window();
    let new = NewTask {
        dedup_window: (!window.is_zero()).then_some(window),
        context_id: request.message.context_id.clone(),
        message: request.message,
        skill,
        owner: request.owner,
        trace: telemetry::current_traceparent(),
        working: reserved.is_some() && !sets_working,
        gate,
    };
    // Stored before its skill runs: from here on, a crash leaves the task to
    // recovery.
    let store = runtime.tasks.store().clone();
    let shared_slot = reserved.as_ref().and_then(Reserved::shared_limit);
    let (journal, created, taken) =
        match TaskJournal::create(store, new, follower, buffer, shared_slot).await? {
            Creation::Stored(stored) => *stored,
            Creation::Taken(id, owner) => {
                // A store slot this node kept, handed out for nothing: kept again.
                if let Some(Reserved::Slot(slot)) = reserved {
                    slot.keep();
                }
                return sent_again(runtime, delivery, &id, owner.as_deref()).await;
            }
        };
    let skill = &journal.record().skill;
    let slot = reserved.and_then(|r| runtime.slots.slot_of(r, skill, taken));
    // Told as accepted: durable first. Told only its outcome: durable by then.
    if delivery != Delivery::Outcome {
        runtime.tasks.settle().await?;
    }
    // Nobody follows it (told only that it was accepted): waiting for an approver,
    // it is parked from the start (the decision wakes it); waiting for a slot, it
    // queues with no actor.
    if delivery == Delivery::Accepted {
        if gated && runtime.config.park_after().is_some() {
            telemetry::metrics().parked();
            return Ok(Accepted::standing(created));
        }
        if !gated && slot.is_none() {
            runtime
                .tasks
                .queue_for_slot(created.task.id.clone(), skill.clone());
            return Ok(Accepted::standing(created));
        }
    }
    let actor = runtime
        .tasks
        .spawn(Spawn {
            journal,
            // A gated task's actor waits for the decision, as a woken one waits.
            mode: match gated {
                true => StartMode::Wake,
                false => StartMode::Fresh,
            },
            slot,
            waiter,
        })
        .await?;
    // No actor (the task failed to start): a stream subscribes the usual way.
    let attached = actor.zip(receiver);
    Ok(Accepted {
        snapshot: created,
        attached,
        outcome,
    })
}

/// A follow-up message, delivered to the task it names.
async fn follow_up(
    runtime: &Inner,
    task_id: TaskId,
    request: SubmitRequest,
    delivery: Delivery,
) -> Result<Accepted, RuntimeError> {
    let tasks = &runtime.tasks;
    let owner = Access::of_owner(request.owner.as_deref());
    let record = match tasks.visible_record(&task_id, owner).await {
        Err(RuntimeError::TaskNotFound(_)) => {
            runtime.answerable_record(&task_id, &request.grants).await?
        }
        found => found?,
    };
    if let Some(given) = &request.message.context_id
        && given != &record.task.context_id
    {
        return Err(RuntimeError::ContextMismatch {
            task_id,
            given: given.clone(),
            actual: record.task.context_id,
        });
    }
    runtime.intake.authorize(&record.skill, &request.grants)?;
    // Sent already (a retry): the task as it stands, the message not delivered again.
    if record.task.has_user_message(&request.message.message_id) {
        return Ok(Accepted::standing(TaskSnapshot {
            task: record.task,
            seq: record.last_seq,
        }));
    }
    let state = record.state();
    if state.is_terminal() {
        return Err(RuntimeError::TaskTerminal { id: task_id, state });
    }
    let message = request.message;
    let message_id = message.message_id.clone();
    let timeout = runtime.config.call_timeout();
    let deliver = TaskRequest::Deliver { message };
    let wants_outcome = delivery == Delivery::Outcome;
    let asked = tasks.ask_waited(&task_id, deliver, wants_outcome, timeout);
    let (delivered, outcome) = match asked.await {
        Some((result, outcome)) => (result?.snapshot()?, outcome),
        None => {
            // The actor ended meanwhile, perhaps with this very message: a copy sent
            // at the same time was delivered, and the task ran to its end with it.
            if let Ok(record) = tasks.visible_record(&task_id, Access::Any).await
                && record.task.has_user_message(&message_id)
            {
                return Ok(Accepted::standing(TaskSnapshot {
                    seq: record.last_seq,
                    task: record.task,
                }));
            }
            return Err(tasks.unanswered(&task_id).await);
        }
    };
    Ok(Accepted {
        snapshot: delivered,
        attached: None,
        outcome,
    })
}

fn validate_context_id(context: &ContextId) -> Result<(), RuntimeError> {
    let s = context.as_str();
    if s.is_empty() || s.len() > MAX_CONTEXT_ID_LEN || s.chars().any(char::is_control) {
        return Err(RuntimeError::InvalidInput(format!(
            "message.contextId must be 1 to {MAX_CONTEXT_ID_LEN} bytes without control characters"
        )));
    }
    Ok(())
}
