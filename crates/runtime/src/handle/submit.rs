//! Submitting: one way in (`RuntimeHandle::submit`), whose use says how the submitter
//! tells the outside about the task (`Delivery`), and so when it must be durable.
//! Awaited, the task as accepted is durable when it resolves; followed, so is each
//! event when it is yielded; waited on, only the outcome is told, so the accepted task
//! (written, readable) need only be durable by then, and one flush serves the send. The
//! task's actor answers that waiter itself, with the task as it stands once at rest.

use crate::access::Access;
use std::future::{Future, IntoFuture};
use std::pin::Pin;

use tokio::sync::oneshot;

use super::dedup::Found;
use super::forward::TaskRequest;
use super::outcome::Waiting;
use super::{Attached, RuntimeHandle};
use crate::access::Grants;
use crate::actors::{NewTask, Reserved, Spawn, StartMode, TaskJournal, follower};
use crate::approval;
use crate::error::RuntimeError;
use crate::model::{ContextId, Role, TaskId, TaskState};
use crate::requests::{SubmitRequest, TaskSnapshot};
use crate::store::TaskRecord;
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
            let accepted = self.handle.accept(self.request, Delivery::Accepted).await?;
            Ok(accepted.snapshot)
        })
    }
}

impl Submission {
    /// Submits, and follows the task: the stream yields its events after the returned
    /// snapshot, each durable, as `subscribe(id, snapshot.seq)` would (a new task's
    /// stream is attached to its actor as the actor starts, which costs less than
    /// subscribing afterwards).
    pub async fn follow(self) -> Result<Following, RuntimeError> {
        let handle = self.handle;
        let accepted = handle.accept(self.request, Delivery::Events).await?;
        let Accepted {
            snapshot, attached, ..
        } = accepted;
        let events =
            handle.event_stream(&snapshot.task.id, snapshot.seq, attached, Listen::Subscribe);
        Ok(Following {
            accepted: snapshot,
            events,
        })
    }

    /// Submits for a caller that tells only the outcome (a blocking send):
    /// [`Waiting::outcome`] returns the task, durable, once it is at rest. The task as
    /// accepted is stored (readable) but not durable yet: tell its id, not more.
    pub async fn wait(self) -> Result<Waiting, RuntimeError> {
        let handle = self.handle;
        let accepted = handle.accept(self.request, Delivery::Outcome).await?;
        Ok(Waiting::new(handle, accepted.snapshot, accepted.outcome))
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

impl RuntimeHandle {
    /// Starts a new task, or delivers a follow-up message to the task the message names;
    /// see [`Submission`] for how to use what it returns.
    pub fn submit(&self, request: SubmitRequest) -> Submission {
        Submission {
            handle: self.clone(),
            request,
        }
    }

    /// Checks and submits, as `delivery` tells the outside about it: durable before
    /// it returns unless only the outcome is told.
    async fn accept(
        &self,
        mut request: SubmitRequest,
        delivery: Delivery,
    ) -> Result<Accepted, RuntimeError> {
        if !self.is_accepting() {
            return Err(RuntimeError::Unavailable(
                "the runtime is shutting down".into(),
            ));
        }
        self.refuse_if_cut_off()?;
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
            let delivered = self.follow_up(task_id, request, delivery).await?;
            return self.told(delivery, delivered).await;
        }
        // The same first message from the same owner: the task it created.
        let owner = request.owner.as_deref();
        let mut claim = match self.first_message(owner, &message.message_id).await? {
            Found::Existing(existing) => {
                return self.told(delivery, Accepted::standing(*existing)).await;
            }
            Found::New(claim) => claim,
        };
        let created = self.create(request, delivery).await?;
        // Duplicates learn of the task now that it is stored; each settles as its own
        // delivery says before it tells anyone of it (`told`).
        claim.created(&created.snapshot.task.id);
        Ok(created)
    }

    /// A submission that found its task stored already, or delivered to it: durable
    /// before it is told as accepted. One that tells only the outcome settles then
    /// (`Waiting::outcome`).
    async fn told(&self, delivery: Delivery, accepted: Accepted) -> Result<Accepted, RuntimeError> {
        if delivery != Delivery::Outcome {
            self.settle().await?;
        }
        Ok(accepted)
    }

    async fn create(
        &self,
        request: SubmitRequest,
        delivery: Delivery,
    ) -> Result<Accepted, RuntimeError> {
        let skill = self.select_skill(&request)?;
        self.authorize(&skill, &request.grants)?;
        if let Some(chosen) = self.inner.skills.get(&skill) {
            chosen
                .check(&request.message)
                .map_err(|refused| RuntimeError::InvalidInput(refused.to_string()))?;
        }
        // A gated skill's task is stored waiting for an approver, and nothing runs.
        let gate = self
            .gate(&skill, &request)
            .map(|r| approval::gate_status(&r));
        let gated = gate.is_some();
        // With a slot free, the task is stored already working, in the same commit: one
        // write fewer, and its actor runs it at once. With several nodes, that commit
        // takes the store's slot too (if none is free, the task is stored to queue).
        let reserved = match gated {
            true => None,
            false => self.inner.slots.reserve(&skill),
        };
        let buffer = self.inner.config.subscriber_buffer;
        let (follower, receiver) = (delivery == Delivery::Events)
            .then(|| follower(buffer))
            .unzip();
        let (waiter, outcome) = (delivery == Delivery::Outcome)
            .then(oneshot::channel)
            .unzip();
        // Stored working with its slot, unless its skill says when work begins.
        let sets_working = self
            .inner
            .skills
            .get(&skill)
            .is_some_and(|s| s.sets_working());
        let new = NewTask {
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
        let store = self.inner.store.clone();
        let shared_slot = reserved.as_ref().and_then(Reserved::shared_limit);
        let (journal, created, taken) =
            TaskJournal::create(store, new, follower, buffer, shared_slot).await?;
        let skill = &journal.record().skill;
        let slot = reserved.and_then(|r| self.inner.slots.slot_of(r, skill, taken));
        // Told as accepted: durable first. Told only its outcome: durable by then.
        if delivery != Delivery::Outcome {
            self.settle().await?;
        }
        // Nobody follows it (told only that it was accepted): waiting for an approver,
        // it is parked from the start (the decision wakes it); waiting for a slot, it
        // queues with no actor.
        if delivery == Delivery::Accepted {
            if gated && self.inner.config.park_after().is_some() {
                telemetry::metrics().parked();
                return Ok(Accepted::standing(created));
            }
            if !gated && slot.is_none() {
                self.queue_for_slot(created.task.id.clone(), skill.clone());
                return Ok(Accepted::standing(created));
            }
        }
        let actor = self
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

    async fn follow_up(
        &self,
        task_id: TaskId,
        request: SubmitRequest,
        delivery: Delivery,
    ) -> Result<Accepted, RuntimeError> {
        let record = match self
            .visible_record(&task_id, Access::of_owner(request.owner.as_deref()))
            .await
        {
            Err(RuntimeError::TaskNotFound(_)) => {
                self.answerable_record(&task_id, &request.grants).await?
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
        self.authorize(&record.skill, &request.grants)?;
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
        let timeout = self.inner.config.call_timeout();
        let deliver = TaskRequest::Deliver { message };
        let wants_outcome = delivery == Delivery::Outcome;
        let asked = self.ask_waited(&task_id, deliver, wants_outcome, timeout);
        let (delivered, outcome) = match asked.await {
            Some((result, outcome)) => (result?.snapshot()?, outcome),
            None => {
                // The actor ended meanwhile, perhaps with this very message: a copy sent
                // at the same time was delivered, and the task ran to its end with it.
                if let Ok(record) = self.visible_record(&task_id, Access::Any).await
                    && record.task.has_user_message(&message_id)
                {
                    return Ok(Accepted::standing(TaskSnapshot {
                        seq: record.last_seq,
                        task: record.task,
                    }));
                }
                return Err(self.unanswered(&task_id).await);
            }
        };
        Ok(Accepted {
            snapshot: delivered,
            attached: None,
            outcome,
        })
    }
}

impl RuntimeHandle {
    /// Another owner's task that this caller may answer all the same: one that waits
    /// for input, of a skill whose card lets holders of its scope answer, held by the
    /// caller. Any other is "not found", as the owner check says.
    pub(super) async fn answerable_record(
        &self,
        task_id: &TaskId,
        grants: &Grants,
    ) -> Result<TaskRecord, RuntimeError> {
        let not_found = || RuntimeError::TaskNotFound(task_id.clone());
        let record = self.visible_record(task_id, Access::Any).await?;
        let card = self.skill_card(&record.skill).ok_or_else(not_found)?;
        let holds_scope = card.required_scope.is_some()
            && grants.list().is_some()
            && grants.allows(card.required_scope.as_deref());
        match card.answered_by_scope && holds_scope && record.state() == TaskState::InputRequired {
            true => Ok(record),
            false => Err(not_found()),
        }
    }
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
