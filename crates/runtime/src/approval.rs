//! Approval gates: a new task of a skill that requires approval is stored `submitted`
//! with a legible summary of what was asked, and parked: nothing runs until an approver
//! approves it (perhaps narrowing its input), and an approver's rejection, or an
//! approval that never comes, ends it `rejected` with the reason. The pending request
//! lives in the task's status message (its metadata `approval`), so that it is stored
//! with the task, shown to every reader and subscriber, and read back after a restart.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::access::{ADMIN_SCOPE, Grants};
use crate::model::{Message, Part, SkillId, Task, TaskId, TaskState, TaskStatus, UserId};

/// The scope that lets its holder approve or reject any gated skill's tasks;
/// `fundi:approve:<skill>` does it for one skill.
pub const APPROVE_SCOPE: &str = "fundi:approve";

/// The metadata key of a gated task's status message.
const KEY: &str = "approval";

/// What an approver is asked to decide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// The user who asked.
    pub requested_by: Option<UserId>,
    /// Through which client.
    pub client: Option<String>,
    /// The skill.
    pub skill: SkillId,
    /// What the skill would act on (the input's `url`, `target` or `urls`), if it says.
    pub target: Option<String>,
    /// Why, if the asker said (message metadata `reason`).
    pub reason: Option<String>,
    /// When it is rejected if no one has decided.
    pub expires_at: DateTime<Utc>,
}

/// A task waiting for an approver.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    /// The task.
    pub task_id: TaskId,
    /// What is asked.
    #[serde(flatten)]
    pub request: ApprovalRequest,
    /// The request in words.
    pub summary: String,
    /// The task's input (its first message's data part), which approval may narrow.
    pub input: Option<Value>,
    /// When it was asked.
    pub since: DateTime<Utc>,
}

/// An approver's decision.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "verdict", rename_all = "camelCase")]
pub enum Verdict {
    /// Run it; with `narrowed`, on that input instead (which the skill must accept as a
    /// narrowing of the original: see `Skill::narrow`).
    Approve {
        /// The narrower input.
        narrowed: Option<Value>,
    },
    /// Do not run it: the task ends `rejected` with the reason.
    Reject {
        /// Why.
        reason: String,
    },
    /// No one decided in time (the runtime's own decision).
    Expire,
}

/// A decision and who made it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Decision {
    /// What was decided.
    pub verdict: Verdict,
    /// The approver (a user), or `fundi` for an expiry.
    pub by: String,
    /// Through which client.
    pub client: Option<String>,
}

/// Whether a caller holding `grants` may decide on tasks of `skill`.
pub fn may_approve(grants: &Grants, skill: &str) -> bool {
    match grants.list() {
        None => true,
        Some(held) => held.iter().any(|s| {
            *s == ADMIN_SCOPE || *s == APPROVE_SCOPE || *s == format!("{APPROVE_SCOPE}:{skill}")
        }),
    }
}

/// The request a task waits on, if it waits for an approver.
pub fn pending(task: &Task) -> Option<ApprovalRequest> {
    pending_in(&task.status)
}

/// Whether a task with this status waits for an approver: at rest until someone
/// decides, as an interrupted task is.
pub fn awaits_approval(status: &TaskStatus) -> bool {
    pending_in(status).is_some()
}

/// Whether a task with this status is at rest: ended, or waiting for someone (input,
/// authorization, an approver). Nothing happens to it until someone acts; a caller
/// waiting for its outcome has it.
pub fn at_rest(status: &TaskStatus) -> bool {
    status.state.is_terminal() || status.state.is_interrupted() || awaits_approval(status)
}

fn pending_in(status: &TaskStatus) -> Option<ApprovalRequest> {
    if status.state != TaskState::Submitted {
        return None;
    }
    let metadata = status.message.as_ref()?.metadata.as_ref()?;
    let approval = metadata.get(KEY)?;
    if approval.get("state")?.as_str()? != "pending" {
        return None;
    }
    serde_json::from_value(approval.clone()).ok()
}

/// The status a gated task is created with: `submitted`, saying what waits for whom.
pub(crate) fn gate_status(request: &ApprovalRequest) -> TaskStatus {
    let mut recorded = serde_json::to_value(request).unwrap_or_default();
    recorded["state"] = json!("pending");
    status(TaskState::Submitted, summary(request), recorded)
}

/// The status a decision moves the task to.
pub(crate) fn decided_status(decision: &Decision, timeout: std::time::Duration) -> TaskStatus {
    let by = &decision.by;
    let (state, text, outcome) = match &decision.verdict {
        Verdict::Approve { narrowed: None } => {
            (TaskState::Working, format!("approved by {by}"), "approved")
        }
        Verdict::Approve { narrowed: Some(_) } => (
            TaskState::Working,
            format!("approved by {by}, with a narrowed input"),
            "approved",
        ),
        Verdict::Reject { reason } => (
            TaskState::Rejected,
            format!("rejected by {by}: {reason}"),
            "rejected",
        ),
        Verdict::Expire => (
            TaskState::Rejected,
            format!(
                "no approver decided within {}: the approval expired",
                humanize(timeout)
            ),
            "expired",
        ),
    };
    let recorded = json!({"state": outcome, "by": by, "client": decision.client, "at": Utc::now()});
    status(state, text, recorded)
}

/// The request in words, for people and for models.
pub fn summary(request: &ApprovalRequest) -> String {
    let who = request
        .requested_by
        .as_deref()
        .unwrap_or("an in-process caller");
    let client = match &request.client {
        Some(client) => format!(" (through {client})"),
        None => String::new(),
    };
    let target = match &request.target {
        Some(target) => format!(" on {target}"),
        None => String::new(),
    };
    let reason = match &request.reason {
        Some(reason) => format!(", because: {reason}"),
        None => String::new(),
    };
    format!(
        "waiting for an approver: {who}{client} asked to run {}{target}{reason}; unless \
         approved, it is rejected at {}",
        request.skill,
        request.expires_at.to_rfc3339()
    )
}

/// What a message's input says the skill would act on.
pub(crate) fn target_of(message: &Message) -> Option<String> {
    let data = message.data()?;
    ["url", "target", "origin"]
        .iter()
        .find_map(|key| data.get(*key)?.as_str().map(str::to_owned))
        .or_else(|| {
            let urls = data.get("urls")?.as_array()?;
            let urls: Vec<&str> = urls.iter().filter_map(Value::as_str).collect();
            Some(urls.join(", "))
        })
}

fn status(state: TaskState, text: String, recorded: Value) -> TaskStatus {
    let mut message = Message::agent(vec![Part::text(text)]);
    let mut metadata = serde_json::Map::new();
    metadata.insert(KEY.to_owned(), recorded);
    message.metadata = Some(metadata);
    TaskStatus {
        state,
        message: Some(message),
        timestamp: Utc::now(),
    }
}

fn humanize(duration: std::time::Duration) -> String {
    humantime::format_duration(std::time::Duration::from_secs(duration.as_secs())).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ContextId;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            requested_by: Some("alice".into()),
            client: Some("ci".into()),
            skill: "chaos-run".into(),
            target: Some("staging:443".into()),
            reason: Some("game day".into()),
            expires_at: Utc::now(),
        }
    }

    #[test]
    fn a_gated_task_says_what_waits_and_is_pending_until_decided() {
        let mut task = Task::new(
            TaskId::from("t"),
            ContextId::from("c"),
            TaskState::Submitted,
        );
        let asked = request();
        task.status = gate_status(&asked);
        let text = task.status.message.as_ref().unwrap().text();
        for part in [
            "alice",
            "through ci",
            "chaos-run",
            "on staging:443",
            "game day",
            "rejected at",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        assert_eq!(pending(&task), Some(asked));
        let decision = Decision {
            verdict: Verdict::Reject {
                reason: "not today".into(),
            },
            by: "bob".into(),
            client: None,
        };
        task.status = decided_status(&decision, std::time::Duration::from_secs(60));
        assert_eq!(task.status.state, TaskState::Rejected);
        assert_eq!(pending(&task), None);
    }

    #[test]
    fn approvers_hold_the_approve_scope_for_all_skills_or_for_one() {
        assert!(may_approve(&Grants::scopes([APPROVE_SCOPE]), "chaos-run"));
        assert!(may_approve(
            &Grants::scopes(["fundi:approve:chaos-run"]),
            "chaos-run"
        ));
        assert!(!may_approve(
            &Grants::scopes(["fundi:approve:echo"]),
            "chaos-run"
        ));
        assert!(may_approve(&Grants::scopes([ADMIN_SCOPE]), "chaos-run"));
        assert!(!may_approve(&Grants::scopes(["fundi:chaos"]), "chaos-run"));
    }
}
