//! What callers of the runtime send and get back: a submission, a listing request, a
//! task as of an event, a page of tasks.

use chrono::{DateTime, Utc};

use crate::access::{Grants, TaskOwner};
use crate::model::{ContextId, Message, SkillId, Task, TaskState, UserId};

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
    pub skill: Option<SkillId>,
    /// The authenticated end user; tasks of other owners are invisible to them.
    pub owner: Option<UserId>,
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
    pub fn skill(mut self, skill: Option<SkillId>) -> SubmitRequest {
        self.skill = skill;
        self
    }

    /// The authenticated end user the task is for.
    pub fn owner(mut self, owner: Option<UserId>) -> SubmitRequest {
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

/// What to list: filters are ANDed; newest update first. Made by
/// [`ListRequest::new`], which says whose tasks; the other filters are set on it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ListRequest {
    /// Only this context.
    pub context_id: Option<ContextId>,
    /// Only this state.
    pub state: Option<TaskState>,
    /// Only tasks whose status timestamp is at or after this.
    pub updated_after: Option<DateTime<Utc>>,
    /// Whose tasks.
    pub owner: TaskOwner,
    /// Only tasks of this skill (not an A2A filter: the web console's).
    pub skill: Option<SkillId>,
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

impl ListRequest {
    /// The first page of `owner`'s tasks ([`TaskOwner::Any`]: every task), 50 to a
    /// page, with their whole history and without artifacts.
    pub fn new(owner: TaskOwner) -> ListRequest {
        ListRequest {
            context_id: None,
            state: None,
            updated_after: None,
            owner,
            skill: None,
            page_size: 50,
            page_token: None,
            history_length: None,
            include_artifacts: false,
            max_bytes: None,
        }
    }

    /// Only this context's tasks (`None`: any context).
    pub fn context(mut self, context_id: Option<ContextId>) -> ListRequest {
        self.context_id = context_id;
        self
    }

    /// Only tasks in this state (`None`: any state).
    pub fn state(mut self, state: Option<TaskState>) -> ListRequest {
        self.state = state;
        self
    }

    /// Only tasks whose status timestamp is at or after this (`None`: any time).
    pub fn updated_after(mut self, after: Option<DateTime<Utc>>) -> ListRequest {
        self.updated_after = after;
        self
    }

    /// Only tasks of this skill (`None`: any skill).
    pub fn skill(mut self, skill: Option<SkillId>) -> ListRequest {
        self.skill = skill;
        self
    }

    /// Tasks per page (at least 1).
    pub fn page_size(mut self, page_size: usize) -> ListRequest {
        self.page_size = page_size;
        self
    }

    /// The page after the one that gave this token (`None`: the first).
    pub fn page_token(mut self, token: Option<String>) -> ListRequest {
        self.page_token = token;
        self
    }

    /// Keep at most this many recent history messages per task (`None`: all).
    pub fn history_length(mut self, length: Option<usize>) -> ListRequest {
        self.history_length = length;
        self
    }

    /// Include each task's artifacts.
    pub fn with_artifacts(mut self, include: bool) -> ListRequest {
        self.include_artifacts = include;
        self
    }

    /// End the page early, with a next-page token, before the task that would take it
    /// past this many bytes of JSON (`None`: no bound).
    pub fn max_bytes(mut self, max_bytes: Option<usize>) -> ListRequest {
        self.max_bytes = max_bytes;
        self
    }
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
    pub skills: Vec<SkillId>,
    /// The token of the next page; `None` on the last page.
    pub next_page_token: Option<String>,
    /// How many tasks match, over all pages.
    pub total_size: usize,
}
