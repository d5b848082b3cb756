//! Approval gates: a gated skill's new task is stored `submitted` with a legible summary
//! and nothing of it runs until an approver approves it (perhaps narrowing its input);
//! a rejection or an expiry ends it `rejected` with the reason; the requester may be
//! barred from approving; the gate holds across a restart; subscribers see each step.

use fundi_runtime::Access;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use fundi_runtime::approval::{Decision, Verdict, pending};
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    ApprovalMode, InputRefused, Message, Runtime, RuntimeConfig, RuntimeError, RuntimeHandle,
    Skill, SkillCard, SkillContext, SkillError, SkillInput, SkillOutput, SubmitRequest, TaskState,
};
use fundi_store_sled::testing::open_sled;
use futures::StreamExt;
use serde_json::{Value, json};

/// A skill that "audits" `pages` pages and records each run's input.
#[derive(Clone, Default)]
struct Pages {
    runs: Arc<Mutex<Vec<u64>>>,
}

fn pages_of(data: Option<&Value>) -> u64 {
    data.and_then(|d| d["pages"].as_u64()).unwrap_or(1)
}

#[async_trait]
impl Skill for Pages {
    fn card(&self) -> SkillCard {
        SkillCard::new("pages", "audits pages")
    }

    async fn run(&self, input: SkillInput, _ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let pages = pages_of(input.message.data());
        self.runs.lock().unwrap().push(pages);
        Ok(SkillOutput::text(format!("audited {pages} pages")))
    }

    fn narrow(&self, original: &Message, narrowed: &Value) -> Result<(), InputRefused> {
        let (asked, offered) = (pages_of(original.data()), pages_of(Some(narrowed)));
        match offered <= asked {
            true => Ok(()),
            false => Err(format!("{offered} pages is more than the {asked} asked").into()),
        }
    }
}

impl Pages {
    fn runs(&self) -> Vec<u64> {
        self.runs.lock().unwrap().clone()
    }
}

fn gated(must_differ: bool) -> RuntimeConfig {
    let mut runtime_config = RuntimeConfig::default();
    runtime_config.approvals = HashMap::from([("pages".to_owned(), ApprovalMode::Required)]);
    runtime_config.approver_must_differ = must_differ;
    runtime_config
}

async fn start(
    skill: &Pages,
    config: RuntimeConfig,
    dir: Option<&std::path::Path>,
) -> RuntimeHandle {
    let builder = Runtime::builder().skill(skill.clone()).config(config);
    let builder = match dir {
        Some(dir) => builder.store(open_sled(dir).await),
        None => builder,
    };
    builder.start().await.unwrap()
}

/// Alice, through the `ci` client, asks to audit 5 pages of a site, saying why.
fn ask() -> SubmitRequest {
    let mut message = message(
        "audit please",
        json!({"pages": 5, "url": "https://shop.test/"}),
    );
    message.metadata = Some(
        json!({"reason": "release check"})
            .as_object()
            .cloned()
            .unwrap(),
    );
    let mut request = SubmitRequest::new(message);
    request.owner = Some("alice".into());
    request.client = Some("ci".into());
    request
}

fn by(user: &str, verdict: Verdict) -> Decision {
    Decision {
        verdict,
        by: user.into(),
        client: Some("console".into()),
    }
}

fn approve(narrowed: Option<Value>) -> Verdict {
    Verdict::Approve { narrowed }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gated_task_waits_with_a_summary_and_runs_only_once_approved() {
    let skill = Pages::default();
    let rt = start(&skill, gated(true), None).await;
    let task = rt.submit(ask()).await.unwrap().task;
    assert_eq!(task.status.state, TaskState::Submitted);
    let summary = status_text(&task);
    for part in [
        "alice",
        "through ci",
        "pages",
        "https://shop.test/",
        "release check",
    ] {
        assert!(summary.contains(part), "{part}: {summary}");
    }
    let events = rt.subscribe(&task.id, 0, Access::Any).await.unwrap();

    // Listed for approvers; the requester's messages wait; nothing runs.
    let listed = rt.approvals().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].task_id, task.id);
    assert_eq!(
        listed[0].input,
        Some(json!({"pages": 5, "url": "https://shop.test/"}))
    );
    let mut follow_up = ask();
    follow_up.message = message("hurry", Value::Null);
    follow_up.message.task_id = Some(task.id.clone());
    assert!(matches!(
        rt.submit(follow_up).await,
        Err(RuntimeError::AwaitingApproval { .. })
    ));
    // The requester may not approve their own task when the config says so.
    assert!(matches!(
        rt.decide(&task.id, by("alice", approve(None))).await,
        Err(RuntimeError::ApproverIsRequester { .. })
    ));
    // A narrowing that widens is refused, naming why.
    let widened = rt
        .decide(&task.id, by("bob", approve(Some(json!({"pages": 9})))))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        widened.contains("9 pages is more than the 5 asked"),
        "{widened}"
    );
    assert!(skill.runs().is_empty(), "nothing ran before approval");

    let decided = rt
        .decide(&task.id, by("bob", approve(Some(json!({"pages": 2})))))
        .await
        .unwrap();
    assert_eq!(decided.status.state, TaskState::Working);
    assert!(status_text(&decided).contains("approved by bob"));
    let done = wait_for_state(&rt, &task.id, TaskState::Completed).await;
    assert_eq!(
        status_text(&done),
        "audited 2 pages",
        "the narrowed input ran"
    );
    assert_eq!(skill.runs(), [2], "one run, on the narrowed input");
    assert!(rt.approvals().await.unwrap().is_empty());
    assert!(matches!(
        rt.decide(&task.id, by("bob", approve(None))).await,
        Err(RuntimeError::NotAwaitingApproval { .. })
    ));

    // A subscriber saw each step: asked (submitted, with the summary), approved
    // (working), done.
    let seen: Vec<(TaskState, String)> = events
        .map(|e| {
            let e = e.unwrap();
            let status = e.status().cloned();
            status.map(|s| (s.state, s.message.map(|m| m.text()).unwrap_or_default()))
        })
        .filter_map(|s| async move { s })
        .collect()
        .await;
    assert_eq!(seen[0].0, TaskState::Submitted);
    assert!(seen[0].1.contains("waiting for an approver"), "{seen:?}");
    assert_eq!(
        seen[1],
        (
            TaskState::Working,
            "approved by bob, with a narrowed input".into()
        )
    );
    assert_eq!(seen.last().unwrap().0, TaskState::Completed, "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_or_an_expiry_ends_the_task_rejected_with_the_reason() {
    let skill = Pages::default();
    let rt = start(&skill, gated(false), None).await;
    let rejected = rt.submit(ask()).await.unwrap().task;
    let decided = rt
        .decide(
            &rejected.id,
            by(
                "alice",
                Verdict::Reject {
                    reason: "wrong site".into(),
                },
            ),
        )
        .await
        .unwrap();
    assert_eq!(decided.status.state, TaskState::Rejected);
    assert_eq!(status_text(&decided), "rejected by alice: wrong site");

    let expiring = rt.submit(ask()).await.unwrap().task;
    let expires_at = pending(&expiring).unwrap().expires_at;
    assert_eq!(
        rt.expire_approvals(expires_at - chrono::Duration::seconds(1))
            .await
            .unwrap(),
        0
    );
    assert_eq!(rt.expire_approvals(expires_at).await.unwrap(), 1);
    let expired = rt.get(&expiring.id, None, Access::Any).await.unwrap();
    assert_eq!(expired.status.state, TaskState::Rejected);
    assert!(
        status_text(&expired).contains("the approval expired"),
        "{}",
        status_text(&expired)
    );

    // Its owner may cancel a task that waits.
    let canceled = rt.submit(ask()).await.unwrap().task;
    let canceled = rt
        .cancel(&canceled.id, Access::Owner("alice"))
        .await
        .unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert!(rt.approvals().await.unwrap().is_empty());
    assert!(skill.runs().is_empty(), "none of them ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_task_still_waits_after_a_restart_and_runs_once_approved() {
    let dir = tempfile::tempdir().unwrap();
    let skill = Pages::default();
    let rt = start(&skill, gated(false), Some(dir.path())).await;
    let task = rt.submit(ask()).await.unwrap().task;
    rt.shutdown(std::time::Duration::from_secs(5)).await;
    drop(rt);

    // The skill is not resumable: a task that had run would fail; this one never ran.
    let rt = start(&skill, gated(false), Some(dir.path())).await;
    assert_eq!(rt.recovery_report().failed, 0);
    let waiting = rt.get(&task.id, None, Access::Any).await.unwrap();
    assert_eq!(waiting.status.state, TaskState::Submitted);
    assert_eq!(rt.approvals().await.unwrap().len(), 1);
    assert!(skill.runs().is_empty(), "the restart did not run it");

    rt.decide(&task.id, by("bob", approve(None))).await.unwrap();
    let done = wait_for_state(&rt, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "audited 5 pages");
    assert_eq!(skill.runs(), [5]);
}

#[tokio::test]
async fn skills_without_a_gate_run_at_once() {
    let skill = Pages::default();
    let rt = start(&skill, RuntimeConfig::default(), None).await;
    let task = rt.submit(ask()).await.unwrap().task;
    wait_for_state(&rt, &task.id, TaskState::Completed).await;
    assert_eq!(skill.runs(), [5]);
    assert!(
        RuntimeConfig::default().requires_approval("chaos-run"),
        "chaos-run is gated by default"
    );
}
