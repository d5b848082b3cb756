//! An approver's decision on a task that waits for one (`approval`): approved, the task
//! moves to working (with the narrowed input as a new message, when there is one) and
//! runs once its skill has a slot; rejected or expired, it ends `rejected` with the
//! reason. Nothing of the skill has run before.

use ractor::{ActorRef, RpcReplyPort};

use super::phase::Phase;
use super::task_actor::TaskActorState;
use super::task_msg::TaskMsg;
use crate::approval::{self, Decision, Verdict};
use crate::error::RuntimeError;
use crate::model::{Message, Part, Task, TaskEventKind};

impl TaskActorState {
    pub(super) async fn on_decide(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        decision: Decision,
        reply: RpcReplyPort<Result<Task, RuntimeError>>,
    ) {
        let _ = reply.send(self.decide(myself, decision).await);
    }

    async fn decide(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        decision: Decision,
    ) -> Result<Task, RuntimeError> {
        let task = self.journal.task();
        let id = task.id.clone();
        let Some(request) = approval::pending(task) else {
            let state = self.journal.state();
            return Err(RuntimeError::NotAwaitingApproval { id, state });
        };
        let by_requester = request.requested_by.as_deref() == Some(decision.by.as_str());
        if self.config.approver_must_differ
            && by_requester
            && !matches!(decision.verdict, Verdict::Expire)
        {
            return Err(RuntimeError::ApproverIsRequester {
                id,
                user: decision.by,
            });
        }
        let narrowed = match &decision.verdict {
            Verdict::Approve {
                narrowed: Some(data),
            } => Some(self.narrowed_message(data)?),
            _ => None,
        };
        let status = approval::decided_status(&decision, self.config.approval_timeout());
        let approved = matches!(decision.verdict, Verdict::Approve { .. });
        let mut kinds = Vec::new();
        if let Some(message) = &narrowed {
            kinds.push(TaskEventKind::Message(message.clone()));
        }
        kinds.push(TaskEventKind::Status(status));
        self.journal.append(kinds, None).await?;
        tracing::info!(
            parent: &self.span,
            by = %decision.by,
            approved,
            narrowed = narrowed.is_some(),
            "approval decided"
        );
        if approved {
            // The run starts from the narrowed input, else from the message that asked.
            let message = match narrowed {
                Some(message) => message,
                None => self
                    .journal
                    .record()
                    .inputs
                    .run_message(self.journal.task())
                    .cloned()
                    .ok_or_else(|| RuntimeError::invariant("task has no user message"))?,
            };
            self.tell_waiting(false);
            self.phase = Phase::Queued {
                message,
                resumed: false,
            };
            self.want_slot(myself);
        }
        Ok(self.journal.task().clone())
    }

    /// The message the run starts from when an approver narrows the input: the asking
    /// message's text and the narrowed data, once the skill accepts it as a narrowing.
    fn narrowed_message(&self, data: &serde_json::Value) -> Result<Message, RuntimeError> {
        let task = self.journal.task();
        let original = self
            .journal
            .record()
            .inputs
            .run_message(task)
            .ok_or_else(|| RuntimeError::invariant("task has no user message"))?;
        self.skill
            .narrow(original, data)
            .map_err(|reason| RuntimeError::InvalidInput(format!("narrowed input: {reason}")))?;
        let mut parts: Vec<Part> = original
            .parts
            .iter()
            .filter(|part| part.as_data().is_none())
            .cloned()
            .collect();
        parts.push(Part::data(data.clone()));
        let mut message = Message::user(parts);
        message.task_id = Some(task.id.clone());
        message.context_id = Some(task.context_id.clone());
        message.metadata = original.metadata.clone();
        message.validate()?;
        Ok(message)
    }
}
