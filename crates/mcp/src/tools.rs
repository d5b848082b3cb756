//! The tools, as MCP lists them: names, what they do (in words a model acts on), their
//! input schemas and honest annotations. Tools that change anything are listed only when
//! writes are allowed.

use rmcp::model::{Tool, ToolAnnotations};

use crate::described::{reading, tool};
use serde_json::json;

/// Lists skills (read-only).
pub const LIST_SKILLS: &str = "fundi_list_skills";
/// Submits a task and returns at once (write).
pub const SUBMIT: &str = "fundi_submit_test";
/// A task's state, progress and artifacts (read-only).
pub const STATUS: &str = "fundi_task_status";
/// A bounded long-poll (read-only).
pub const WAIT: &str = "fundi_wait_for_task";
/// Cancels a task (write).
pub const CANCEL: &str = "fundi_cancel_task";
/// Lists tasks (read-only).
pub const LIST_TASKS: &str = "fundi_list_tasks";
/// Answers a proposal (write).
pub const RESPOND: &str = "fundi_respond_to_task";

pub use crate::peers::{
    AUTH_STATUS, DELETE_PUSH_CONFIG, DISCOVER_AGENT, LIST_AGENTS, REQUEST, SEND_MESSAGE,
    SET_PUSH_CONFIG,
};

/// The tools to list.
pub fn listed(allow_writes: bool) -> Vec<Tool> {
    let mut tools = vec![
        tool(
            LIST_SKILLS,
            "List the skills this fundi server runs (id, what it does, the scope it needs).",
            json!({"type": "object", "properties": {}}),
        )
        .annotate(reading("List fundi skills")),
        tool(
            STATUS,
            "A task's state (submitted, working, input_required, completed, failed, \
             canceled, rejected), its latest progress message and a summary of its \
             artifacts. Pass artifactId to get one artifact whole.",
            json!({"type": "object", "required": ["taskId"], "properties": {
                "taskId": {"type": "string"},
                "artifactId": {"type": "string", "description": "Return this artifact whole."}
            }}),
        )
        .annotate(reading("Task status")),
        tool(
            WAIT,
            "Wait (bounded) for a change: with taskId, until that task's status changes \
             (at once if it has ended or waits for input); without, until any of your \
             tasks changes or a proposal from another agent waits for an answer (at once \
             if one already waits). A timeout answers that nothing changed; it is not an \
             error. Call it again to keep waiting.",
            json!({"type": "object", "properties": {
                "taskId": {"type": "string"},
                "timeoutSeconds": {"type": "number", "minimum": 0,
                                   "description": "At most the server's ceiling."}
            }}),
        )
        .annotate(reading("Wait for a task")),
        tool(
            LIST_TASKS,
            "Your tasks, newest first: counts by state and one line per task. A page \
             that does not hold them all gives a nextPageToken: pass it as pageToken for \
             the next.",
            json!({"type": "object", "properties": {
                "state": {"type": "string", "description": "Only this state, e.g. working."},
                "pageSize": {"type": "integer", "minimum": 1, "maximum": 100},
                "pageToken": {"type": "string", "description": "The nextPageToken of the previous page."}
            }}),
        )
        .annotate(reading("List tasks")),
    ];
    if allow_writes {
        tools.extend([
            tool(
                SUBMIT,
                "Start a task of a skill and return its id and state at once (it never \
                 waits for the run: follow it with fundi_wait_for_task or \
                 fundi_task_status). Give the skill's input as data (fundi_list_skills shows \
                 each skill's JSON Schema of it), and/or text. The same idempotencyKey \
                 returns the same task instead of starting another.",
                json!({"type": "object", "required": ["skill"], "properties": {
                    "skill": {"type": "string"},
                    "text": {"type": "string"},
                    "data": {"type": "object"},
                    "idempotencyKey": {"type": "string"}
                }}),
            )
            .annotate(
                ToolAnnotations::with_title("Start a fundi task")
                    .read_only(false)
                    .destructive(false)
                    .idempotent(false)
                    .open_world(true),
            ),
            tool(
                CANCEL,
                "Cancel a task. Set confirm to true: the task's work stops and cannot be \
                 resumed.",
                json!({"type": "object", "required": ["taskId", "confirm"], "properties": {
                    "taskId": {"type": "string"},
                    "confirm": {"type": "boolean"}
                }}),
            )
            .annotate(
                ToolAnnotations::with_title("Cancel a task")
                    .read_only(false)
                    .destructive(true)
                    .idempotent(true)
                    .open_world(false),
            ),
            tool(
                RESPOND,
                "Answer a proposal another agent sent to the inbox: complete (with text \
                 and/or data), ask (a question back), reject or fail (with the reason as \
                 text). Needs the fundi:inbox scope.",
                json!({"type": "object", "required": ["taskId", "action"], "properties": {
                    "taskId": {"type": "string"},
                    "action": {"type": "string", "enum": ["complete", "ask", "reject", "fail"]},
                    "text": {"type": "string"},
                    "data": {"type": "object"}
                }}),
            )
            .annotate(
                ToolAnnotations::with_title("Answer a proposal")
                    .read_only(false)
                    .destructive(false)
                    .idempotent(false)
                    .open_world(true),
            ),
        ]);
    }
    tools.extend(crate::peers::listed(allow_writes));
    tools
}

/// Whether `name` changes anything (and so needs writes allowed).
pub fn writes(name: &str) -> bool {
    [SUBMIT, CANCEL, RESPOND].contains(&name) || crate::peers::writes(name)
}
