//! Shared by the heal-issue tests: real git repositories in temp dirs, each with a
//! bare remote, and a runtime with the heal skill.

#![allow(dead_code, unreachable_pub)] // each test file uses its own part

use fundi_runtime::Access;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fundi_ops::issues::{IssueStore, NewIssue, fingerprint};
use fundi_runtime::cpu::Budget;
use fundi_runtime::{Grants, Message, Part, RuntimeHandle, SubmitRequest, Task, TaskId, TaskState};
use fundi_skills::a11y::Limits;
use fundi_skills::a11y::audit::audit;
use serde_json::{Value, json};

pub const DEADLINE: Duration = Duration::from_secs(30);
pub const SITE: &str = "http://127.0.0.1:8080/";

#[allow(unused_imports)] // each test file uses its own part
pub use fundi_skills::testing::{TestRepo as Repo, git, serve_dir};

/// The issue a11y-audit records for `rule` on the page at `url` (its first failing
/// element).
pub fn a11y_issue(page: &str, url: &str, rule: &str) -> NewIssue {
    let limits = Limits {
        max_bytes: 1 << 20,
        max_elements: 10_000,
        max_depth: 256,
        max_attributes: 100,
    };
    let (report, _) = audit(page, url, limits, &Budget::unlimited()).unwrap();
    let failing = report.violations.iter().find(|r| r.id == rule).unwrap();
    let node = &failing.nodes[0];
    NewIssue {
        fingerprint: fingerprint(&["a11y-audit", rule, url, &node.target]),
        source: "a11y-audit".into(),
        rule: rule.into(),
        severity: failing.impact.as_str().into(),
        title: failing.help.to_string(),
        location: url.into(),
        target: Some(node.target.clone()),
        evidence: node.html.clone(),
        remediation: String::new(),
        tags: Vec::new(),
        task_id: TaskId::from("audit"),
    }
}

pub const PAGE: &str = "<!doctype html>\n<html>\n<head><title>Home</title></head>\n<body><main>\
                        <h1>Home</h1></main></body>\n</html>\n";

/// Records the page's missing `lang` in `issues`; returns its id.
pub async fn record_missing_lang(issues: &dyn IssueStore) -> String {
    let issue = a11y_issue(PAGE, &format!("{SITE}index.html"), "html-has-lang");
    issues.record(issue).await.unwrap().0.id().to_owned()
}

/// A request from `user` holding `scopes` (no user: an in-process caller).
pub fn from(user: Option<&str>, scopes: &[&str], message: Message) -> SubmitRequest {
    let mut request = SubmitRequest::new(message);
    request.owner = user.map(Into::into);
    if user.is_some() {
        request.grants = Grants::scopes(scopes.iter().copied());
    }
    request
}

/// The heal's first message.
pub fn heal_message(issue: &str, repository: &Path) -> Message {
    Message::user(vec![Part::data(json!({
        "issue": issue,
        "repository": repository,
        "site": SITE,
    }))])
}

/// An answer to a task.
pub fn answer(task: &TaskId, text: &str) -> Message {
    let mut message = Message::user(vec![Part::text(text)]);
    message.task_id = Some(task.clone());
    message
}

/// Polls the task until it is in `state` (or ended), then returns it.
pub async fn reach(runtime: &RuntimeHandle, id: &TaskId, state: TaskState) -> Task {
    reach_saying(runtime, id, state, "").await
}

/// Polls the task until it is in `state` with a status text holding `words`.
pub async fn reach_saying(
    runtime: &RuntimeHandle,
    id: &TaskId,
    state: TaskState,
    words: &str,
) -> Task {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let task = runtime.get(id, None, Access::Any).await.unwrap();
        if task.status.state == state && text(&task).contains(words) {
            return task;
        }
        assert!(
            !task.status.state.is_terminal() && Instant::now() < deadline,
            "task {id} is {:?}, not {state:?}: {}",
            task.status.state,
            text(&task)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The task's status text.
pub fn text(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(|m| m.text())
        .unwrap_or_default()
}

/// An artifact's first part, by name.
pub fn artifact<'t>(task: &'t Task, name: &str) -> &'t Part {
    &task
        .artifacts
        .iter()
        .find(|a| a.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no artifact {name}"))
        .parts[0]
}

/// The proposal artifact's data.
pub fn proposal(task: &Task) -> Value {
    artifact(task, "heal-proposal").as_data().unwrap().clone()
}

pub fn shared<T: IssueStore>(store: T) -> Arc<dyn IssueStore> {
    Arc::new(store)
}
