//! What approvers and the expiry sweep ask of the runtime: the tasks waiting for an
//! approver, a decision on one, and the rejection of those nobody decided on in time.

use crate::access::Access;
use chrono::{DateTime, Utc};

use super::tasks::Tasks;
use super::wire::TaskRequest;
use crate::approval::{self, Decision, PendingApproval, Verdict};
use crate::error::RuntimeError;
use crate::model::{Task, TaskId, TaskState};
use crate::store::ListQuery;

/// Tasks read per page while looking for those waiting for an approver.
const PAGE: usize = 256;

/// Every task waiting for an approver, oldest request first (whoever owns it).
pub(super) async fn pending(tasks: &Tasks) -> Result<Vec<PendingApproval>, RuntimeError> {
    let mut pending = Vec::new();
    let mut query = ListQuery {
        state: Some(TaskState::Submitted),
        limit: PAGE,
        ..ListQuery::default()
    };
    loop {
        let page = tasks.store().list(&query).await?;
        for record in &page.records {
            let Some(request) = approval::pending(&record.task) else {
                continue;
            };
            let first = record.task.history.first();
            pending.push(PendingApproval {
                task_id: record.task.id.clone(),
                summary: approval::summary(&request),
                input: first.and_then(|m| m.data()).cloned(),
                request,
                since: record.task.status.timestamp,
            });
        }
        match page.next {
            Some(next) => query.cursor = Some(next),
            None => break,
        }
    }
    pending.sort_by_key(|p| p.since);
    Ok(pending)
}

/// Decides on a task waiting for an approver (the caller checked that the approver
/// may): approved, it runs; rejected, it ends `rejected`. Returns the task as
/// decided.
pub(super) async fn decide(
    tasks: &Tasks,
    task_id: &TaskId,
    decision: Decision,
    timeout: std::time::Duration,
) -> Result<Task, RuntimeError> {
    let record = tasks.visible_record(task_id, Access::Any).await?;
    if approval::pending(&record.task).is_none() {
        return Err(RuntimeError::NotAwaitingApproval {
            id: task_id.clone(),
            state: record.state(),
        });
    }
    let decided = match tasks
        .ask(task_id, TaskRequest::Decide { decision }, timeout)
        .await
    {
        Some(result) => result?.task()?,
        None => return Err(tasks.unanswered(task_id).await),
    };
    tasks.settle().await?;
    Ok(decided)
}

/// Rejects the tasks whose approval expired by `now`; returns how many.
pub(super) async fn expire(
    tasks: &Tasks,
    now: DateTime<Utc>,
    timeout: std::time::Duration,
) -> Result<usize, RuntimeError> {
    let mut expired = 0;
    for pending in pending(tasks).await? {
        if pending.request.expires_at > now {
            continue;
        }
        let decision = Decision {
            verdict: Verdict::Expire,
            by: "fundi".into(),
            client: None,
        };
        match decide(tasks, &pending.task_id, decision, timeout).await {
            Ok(_) => expired += 1,
            // Decided meanwhile, or canceled by its owner.
            Err(RuntimeError::NotAwaitingApproval { .. } | RuntimeError::TaskNotFound(_)) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(expired)
}
