//! Proposed fixes as approvals: a heal task that waits for the decision on its fix (in
//! `input-required`, with its `heal-proposal` and `heal-diff` artifacts) is listed with
//! the tasks that wait for an approver, and decided the same way. Approving answers it
//! "approve" (its branch is pushed), rejecting answers "reject <reason>" (its branch is
//! deleted), as the approver, exactly as an A2A client answering it would: the heal skill
//! checks that the approver holds its scope. Nothing is merged.

use fundi_runtime::approval::Verdict;
use fundi_runtime::{
    ListRequest, Message, Part, RuntimeError, SubmitRequest, Task, TaskId, TaskOwner, TaskState,
};
use serde_json::{Value, json};

use crate::auth::Caller;
use crate::error::ApiError;
use fundi_runtime::TaskService;

/// The skill whose tasks wait for a decision on a proposed fix.
pub const HEAL_SKILL: &str = "heal-issue";
/// Tasks read per page while listing.
const PAGE: usize = 100;

/// The proposal of a heal task waiting for its decision, if `task` is one.
pub fn proposal(task: &Task) -> Option<&Value> {
    if task.status.state != TaskState::InputRequired {
        return None;
    }
    artifact(task, "heal-proposal")?
        .parts
        .iter()
        .find_map(Part::as_data)
}

/// The fix's diff, when the task carries one.
pub(crate) fn diff(task: &Task) -> Option<String> {
    let artifact = artifact(task, "heal-diff")?;
    Some(artifact.parts.iter().filter_map(Part::as_text).collect())
}

fn artifact<'a>(task: &'a Task, id: &str) -> Option<&'a fundi_runtime::Artifact> {
    task.artifacts.iter().find(|a| a.artifact_id == id)
}

/// Every fix waiting for a decision, as `/admin/approvals` lists approvals.
pub async fn waiting(runtime: &dyn TaskService) -> Result<Vec<Value>, RuntimeError> {
    let mut fixes = Vec::new();
    let mut request = ListRequest::new(TaskOwner::Any)
        .state(Some(TaskState::InputRequired))
        .skill(Some(HEAL_SKILL.into()))
        .page_size(PAGE)
        .with_artifacts(true)
        .history_length(Some(0));
    loop {
        let page = runtime.list(request.clone()).await?;
        for task in &page.tasks {
            let Some(proposed) = proposal(task) else {
                continue;
            };
            fixes.push(json!({
                "taskId": task.id,
                "kind": "fix",
                "skill": HEAL_SKILL,
                "requestedBy": proposed["requestedBy"],
                "summary": task.status.message.as_ref().map(Message::text).unwrap_or_default(),
                "input": proposed,
                "diff": diff(task),
                "since": task.status.timestamp,
            }));
        }
        match page.next_page_token {
            Some(token) => request.page_token = Some(token),
            None => break,
        }
    }
    Ok(fixes)
}

/// Decides the fix heal task `task_id` proposes, as `caller`: its answer, sent as an A2A
/// client would send it.
pub(crate) async fn decide(
    runtime: &dyn TaskService,
    caller: &Caller,
    task_id: &TaskId,
    verdict: &Verdict,
) -> Result<Task, ApiError> {
    let answer = match verdict {
        Verdict::Approve { narrowed: None } => "approve".to_owned(),
        Verdict::Approve { narrowed: Some(_) } => {
            return Err(ApiError::invalid_params(
                "data",
                "a fix is approved as proposed: reject it to have another made",
            ));
        }
        Verdict::Reject { reason } => format!("reject {reason}"),
        // Only the runtime's timer expires approvals; a proposal lapses on the heal's own.
        Verdict::Expire => {
            return Err(ApiError::invalid_params(
                "verdict",
                "a proposed fix is approved or rejected",
            ));
        }
    };
    let mut message = Message::user(vec![Part::text(answer)]);
    message.task_id = Some(task_id.clone());
    let request = SubmitRequest::new(message)
        .owner(Some(caller.user.clone()))
        .client(Some(caller.client.clone()))
        .grants(caller.grants.clone());
    let answered = runtime.submit(request).await?;
    Ok(answered.task)
}
