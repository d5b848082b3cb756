//! What callers of the runtime send and get back: a submission, a listing request, a
//! task as of an event, a page of tasks.

use chrono::{DateTime, Utc};

use crate::access::Grants;
use crate::model::{ContextId, Message, Task, TaskState};

/// A request to start a task, or to continue one (when the message names a task). Made
/// with [`SubmitRequest::new`] and the methods after it, so that a field added later
/// breaks no caller.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SubmitRequest {
    /// The user's message. `taskId` continues that task; `contextId` places a new task in
    /// an existing conversation.
    pub message: Message,
    /// The skill to run; when `None`, the message metadata `skill`, then the configured
    /// default, then the only registered skill.
    pub skill: Option<String>,
    /// The authenticated end user; tasks of other owners are invisible to them.
    pub owner: Option<String>,
    /// The client application the user acts through (for the record: an approval
    /// request names it).
    pub client: Option<String>,
    /// The scopes the caller holds: a skill whose card names a scope the caller lacks is
    /// refused before anything is stored.
    pub grants: Grants,
}

impl SubmitRequest {
    /// A request for this message, with no skill named, no owner and every grant.
    pub fn new(message: Message) -> SubmitRequest {
        SubmitRequest {
            message,
            skill: None,
            owner: None,
            client: None,
            grants: Grants::All,
        }
    }

    /// The skill to run (`None`: chosen as [`SubmitRequest::skill`] says).
    pub fn skill(mut self, skill: Option<String>) -> SubmitRequest {
        self.skill = skill;
        self
    }

    /// The authenticated end user the task is for.
    pub fn owner(mut self, owner: Option<String>) -> SubmitRequest {
        self.owner = owner;
        self
    }

    /// The client application the user acts through.
    pub fn client(mut self, client: Option<String>) -> SubmitRequest {
        self.client = client;
        self
    }

    /// The scopes the caller holds.
    pub fn grants(mut self, grants: Grants) -> SubmitRequest {
        self.grants = grants;
        self
    }
}

/// What to list: filters are ANDed; newest update first.
#[derive(Debug, Clone, Default)]
pub struct ListRequest {
    /// Only this context.
    pub context_id: Option<ContextId>,
    /// Only this state.
    pub state: Option<TaskState>,
    /// Only tasks whose status timestamp is at or after this.
    pub updated_after: Option<DateTime<Utc>>,
    /// Only this user's tasks (`None`: every task).
    pub owner: Option<String>,
    /// Only tasks of this skill (not an A2A filter: the web console's).
    pub skill: Option<String>,
    /// Tasks per page (at least 1).
    pub page_size: usize,
    /// The `next_page_token` of the previous page.
    pub page_token: Option<String>,
    /// Keep at most this many recent history messages per task.
    pub history_length: Option<usize>,
    /// Include artifacts (otherwise they are left out).
    pub include_artifacts: bool,
    /// Most bytes of tasks in the page, as JSON once trimmed: the page ends early, with
    /// a next-page token, before the task that would pass it (`None`: no bound).
    pub max_bytes: Option<usize>,
}

/// A task as it stood after a given event.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TaskSnapshot {
    /// The task.
    pub task: Task,
    /// The sequence number of the last event the task reflects.
    pub seq: u64,
}

/// One page of tasks.
#[derive(Debug, Clone)]
pub struct TaskPage {
    /// The tasks, newest update first.
    pub tasks: Vec<Task>,
    /// The skill of each task, in the order of `tasks`.
    pub skills: Vec<String>,
    /// The token of the next page; `None` on the last page.
    pub next_page_token: Option<String>,
    /// How many tasks match, over all pages.
    pub total_size: usize,
}
