//! Submitting: one way in (`RuntimeHandle::submit`), whose use says when the caller
//! tells the outside about the task, and so how soon it must be stored (see
//! `FirstCommit`): awaited, the task is durable when it resolves; followed, each event
//! is durable when it is yielded; waited on for its outcome, only the outcome is told,
//! and a new task may be stored with its skill's first step, in one commit.

use crate::access::Access;
use std::future::{Future, IntoFuture};
use std::pin::Pin;

use futures::StreamExt;

use super::dedup::{Claim, Found};
use super::forward::TaskRequest;
use super::{Attached, RuntimeHandle};
use crate::access::Grants;
use crate::actors::{FirstCommit, NewTask, Spawn, StartMode, TaskJournal, follower};
use crate::approval;
use crate::error::RuntimeError;
use crate::model::{ContextId, Role, TaskEvent, TaskEventKind, TaskId, TaskState};
use crate::requests::{SubmitRequest, TaskSnapshot};
use crate::store::TaskRecord;
use crate::subscription::{Durable, EventStream};
use crate::telemetry;
use crate::transition::apply;

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

/// When a submitter tells the outside about the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Told {
    /// As soon as the submission returns.
    AtOnce,
    /// Each event, as it follows them.
    EachEvent,
    /// Only the outcome it waits for.
    Outcome,
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
            let (accepted, _, _) = self.handle.accept(self.request, Told::AtOnce).await?;
            Ok(accepted)
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
        let (accepted, attached, _) = handle.accept(self.request, Told::EachEvent).await?;
        let id = &accepted.task.id;
        let events = handle.event_stream(id, accepted.seq, Durable::EachEvent, attached);
        Ok(Following { accepted, events })
    }

    /// Submits for a caller that tells only the outcome (a blocking send):
    /// [`Waiting::outcome`] returns the task, durable, once it gets where the caller
    /// waits for. The task as accepted is not durable yet, and a new task may not even
    /// be stored yet (it is stored with its skill's first step): tell its id, not more.
    pub async fn wait(self) -> Result<Waiting, RuntimeError> {
        let handle = self.handle;
        let (accepted, attached, claim) = handle.accept(self.request, Told::Outcome).await?;
        let id = &accepted.task.id;
        let events = handle.event_stream(id, accepted.seq, Durable::CallerSettles, attached);
        Ok(Waiting {
            following: Following { accepted, events },
            handle,
            claim,
        })
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

impl Following {
    /// Follows the task until one of its events matches `until`, and returns the task
    /// as it stood after that event; `None` if its event stream ended first. The task
    /// is rebuilt from the accepted snapshot and the events, the way its journal builds
    /// it, so the store is not read again. A task accepted at rest (ended, or waiting
    /// for input: a message sent again, whose task got there already) is matched as it
    /// stands first, its status as the event: no event may come.
    pub async fn outcome(
        self,
        until: impl Fn(&TaskEvent) -> bool,
    ) -> Result<Option<TaskSnapshot>, RuntimeError> {
        self.outcome_told(until, || {}).await
    }

    /// [`Following::outcome`], calling `stored` at the first event (the task is stored
    /// by then, even one whose first commit waited for its skill's first step).
    async fn outcome_told(
        self,
        until: impl Fn(&TaskEvent) -> bool,
        stored: impl FnOnce(),
    ) -> Result<Option<TaskSnapshot>, RuntimeError> {
        let Following {
            accepted,
            mut events,
        } = self;
        let mut task = accepted.task;
        if approval::at_rest(&task.status) {
            let standing = TaskEvent {
                seq: accepted.seq,
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                kind: TaskEventKind::Status(task.status.clone()),
            };
            if until(&standing) {
                stored();
                let seq = accepted.seq;
                return Ok(Some(TaskSnapshot { task, seq }));
            }
        }
        let mut stored = Some(stored);
        while let Some(event) = events.next().await {
            let event = event?;
            if let Some(stored) = stored.take() {
                stored();
            }
            apply(&mut task, &event.kind).map_err(|e| {
                let what = format!(
                    "event {} of task {} does not follow the task as followed",
                    event.seq, task.id
                );
                RuntimeError::broken(what, e)
            })?;
            if until(&event) {
                return Ok(Some(TaskSnapshot {
                    task,
                    seq: event.seq,
                }));
            }
        }
        Ok(None)
    }
}

/// A task submitted by [`Submission::wait`], followed until its outcome.
pub struct Waiting {
    following: Following,
    handle: RuntimeHandle,
    /// Held until the task is stored (its first commit may wait for its skill's first
    /// step): duplicates of its first message wait for it.
    claim: Option<Claim>,
}

impl std::fmt::Debug for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiting")
            .field("accepted", &self.following.accepted)
            .finish_non_exhaustive()
    }
}

impl Waiting {
    /// The task as accepted: stored (readable), not durable yet (tell only its id).
    pub fn accepted(&self) -> &TaskSnapshot {
        &self.following.accepted
    }

    /// Like [`Following::outcome`]; the task returned is durable. An error if the task
    /// ended before it could be stored.
    pub async fn outcome(
        self,
        until: impl Fn(&TaskEvent) -> bool,
    ) -> Result<Option<TaskSnapshot>, RuntimeError> {
        let id = self.following.accepted.task.id.clone();
        // Duplicates of its first message learn of the task once it is stored.
        let claim = self.claim;
        let reached = self.following.outcome_told(until, || drop(claim)).await?;
        if let Some(reached) = reached {
            self.handle.settle().await?;
            return Ok(Some(reached));
        }
        // The task stopped being live first. One whose first write never became durable
        // (a memory store's, or one lost to a shutdown) is not there to be read instead.
        if self.handle.store().get(&id).await?.is_none() {
            return Err(RuntimeError::Unavailable(format!(
                "task {id} ended before it could be stored (a store error or a shutdown; \
                 the server's log says which)"
            )));
        }
        Ok(None)
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

    /// Checks and submits; a new task's actor starts with a subscriber (unless `told`
    /// is at once), whose end comes back with the snapshot.
    async fn accept(
        &self,
        mut request: SubmitRequest,
        told: Told,
    ) -> Result<(TaskSnapshot, Option<Attached>, Option<Claim>), RuntimeError> {
        if !self.is_accepting() {
            return Err(RuntimeError::Unavailable(
                "the runtime is shutting down".into(),
            ));
        }
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
            return Ok((self.follow_up(task_id, request, told).await?, None, None));
        }
        // The same first message from the same owner: the task it created.
        let owner = request.owner.as_deref();
        let mut claim = match self.first_message(owner, &message.message_id).await? {
            Found::Existing(existing) => return Ok((*existing, None, None)),
            Found::New(claim) => claim,
        };
        let (created, attached) = self.create(request, told).await?;
        claim.created(&created.task.id);
        // Duplicates learn of the task once it is durable: at once, unless it was sent
        // blocking (readable at once, durable once its outcome is in).
        let claim = (told == Told::Outcome).then_some(claim);
        Ok((created, attached, claim))
    }

    async fn create(
        &self,
        request: SubmitRequest,
        told: Told,
    ) -> Result<(TaskSnapshot, Option<Attached>), RuntimeError> {
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
        // write fewer, and its actor runs it at once.
        let slot = match gated {
            true => None,
            false => self.inner.slots.try_claim(&skill).await,
        };
        let first = match told {
            Told::AtOnce | Told::EachEvent => FirstCommit::Durable,
            // Readable now (stored before its skill runs), durable before the outcome
            // is told.
            Told::Outcome => FirstCommit::Readable,
        };
        let buffer = self.inner.config.subscriber_buffer;
        let (follower, receiver) = (told != Told::AtOnce).then(|| follower(buffer)).unzip();
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
            working: slot.is_some() && !sets_working,
            gate,
        };
        // Stored (unless left to the actor) before anyone is told: from here on, a
        // crash leaves the task to recovery.
        let store = self.inner.store.clone();
        let (journal, created) = TaskJournal::create(store, new, first, follower, buffer).await?;
        let actor = self
            .spawn(Spawn {
                journal,
                // A gated task's actor waits for the decision, as a woken one waits.
                mode: match (gated, told) {
                    (true, _) => StartMode::Wake,
                    (false, Told::Outcome) => StartMode::Waited,
                    (false, _) => StartMode::Fresh,
                },
                slot,
            })
            .await?;
        // No actor (the task failed to start): a stream subscribes the usual way.
        let attached = actor.zip(receiver);
        Ok((created, attached))
    }

    async fn follow_up(
        &self,
        task_id: TaskId,
        request: SubmitRequest,
        told: Told,
    ) -> Result<TaskSnapshot, RuntimeError> {
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
            return Ok(TaskSnapshot {
                task: record.task,
                seq: record.last_seq,
            });
        }
        let state = record.state();
        if state.is_terminal() {
            return Err(RuntimeError::TaskTerminal { id: task_id, state });
        }
        let message = request.message;
        let message_id = message.message_id.clone();
        let timeout = self.inner.config.call_timeout();
        let delivered = match self
            .ask(&task_id, TaskRequest::Deliver { message }, timeout)
            .await
        {
            Some(result) => result?.snapshot()?,
            None => {
                // The actor ended meanwhile, perhaps with this very message: a copy sent
                // at the same time was delivered, and the task ran to its end with it.
                if let Ok(record) = self.visible_record(&task_id, Access::Any).await
                    && record.task.has_user_message(&message_id)
                {
                    let seq = record.last_seq;
                    return Ok(TaskSnapshot {
                        task: record.task,
                        seq,
                    });
                }
                return Err(self.unanswered(&task_id).await);
            }
        };
        if told != Told::Outcome {
            self.settle().await?;
        }
        Ok(delivered)
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
