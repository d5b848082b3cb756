//! The self-healing loop end to end: a11y-audit audits a page served from a git
//! repository and records an issue, the loop submits a heal task for it, the task
//! waits for approval, approval publishes the branch, and an audit of the page as the
//! branch has it no longer reports the issue.

mod heal;

use std::sync::Arc;

use fundi_ops::issues::{IssueStatus, IssueStore, MemoryIssueStore};
use fundi_runtime::{ListRequest, Message, Part, Runtime, SubmitRequest, Task, TaskState};
use fundi_skills::heal::{HealConfig, HealIssueSkill, HealingLoop, LoopRule, RuntimeLink};
use fundi_skills::{A11yAuditSkill, A11yConfig};
use heal::*;
use serde_json::{Value, json};

fn audit_of(url: &str) -> SubmitRequest {
    let mut request = SubmitRequest::new(Message::user(vec![Part::data(json!({"url": url}))]));
    request.skill = Some("a11y-audit".into());
    request
}

fn violations(audit: &Task) -> Vec<String> {
    let report: &Value = audit.artifacts[0].parts[0].as_data().unwrap();
    report["pages"][0]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn an_audited_issue_is_healed_on_approval_and_the_branch_passes_the_audit() {
    let repo = Repo::new(&[("public/index.html", PAGE)]);
    let site = serve_dir(repo.work.join("public")).await;
    let mut config = HealConfig::default();
    config.workspaces = vec![repo.workspace.clone()];
    config.watch = vec![LoopRule {
        source: "a11y-audit".into(),
        min_severity: Some("serious".into()),
        site: site.clone(),
        repository: repo.work.clone(),
        root: Some("public".into()),
    }];
    let store: Arc<dyn IssueStore> = Arc::new(MemoryIssueStore::new());
    let link = RuntimeLink::new();
    let watched: Arc<dyn IssueStore> =
        Arc::new(HealingLoop::new(store.clone(), &config, link.clone()));
    let origin = site.trim_end_matches('/').to_owned();
    let mut a11y = A11yConfig::default();
    a11y.allowed_origins = vec![origin.clone()];
    let runtime = Runtime::builder()
        .skill(A11yAuditSkill::new(a11y.clone(), watched.clone()).unwrap())
        .skill(HealIssueSkill::new(config, watched.clone(), link.clone()).unwrap())
        .start()
        .await
        .unwrap();
    link.set(&runtime);

    let audit = runtime
        .submit(audit_of(&format!("{site}index.html")))
        .await
        .unwrap()
        .task;
    let audit = reach(&runtime, &audit.id, TaskState::Completed).await;
    assert!(violations(&audit).contains(&"html-has-lang".to_owned()));
    let issue = store
        .issues(Some("a11y-audit"))
        .await
        .unwrap()
        .into_iter()
        .find(|i| i.finding.rule == "html-has-lang")
        .expect("the audit recorded the issue");

    // The loop submitted one heal, which waits for approval.
    let deadline = std::time::Instant::now() + DEADLINE;
    let heal = loop {
        let page = runtime
            .list(ListRequest::new(fundi_runtime::TaskOwner::Any))
            .await
            .unwrap();
        let heals: Vec<Task> = page
            .tasks
            .into_iter()
            .filter(|t| t.id != audit.id)
            .collect();
        if let Some(waiting) = heals
            .iter()
            .find(|t| t.status.state == TaskState::InputRequired)
        {
            assert_eq!(heals.len(), 1, "one heal per issue");
            break waiting.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no heal task waits: {heals:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert!(text(&heal).contains(issue.id()), "{}", text(&heal));
    assert_eq!(
        store.issue(issue.id()).await.unwrap().unwrap().status,
        IssueStatus::FixProposed
    );

    // Auditing the page again finds the issue again, and submits no second heal.
    let again = runtime
        .submit(audit_of(&format!("{site}index.html")))
        .await
        .unwrap()
        .task;
    reach(&runtime, &again.id, TaskState::Completed).await;

    runtime
        .submit(SubmitRequest::new(answer(&heal.id, "approve")))
        .await
        .unwrap();
    reach(&runtime, &heal.id, TaskState::Completed).await;
    let branch = format!("fundi/heal-{}", issue.id());
    assert!(
        repo.remote_branch(&branch).is_some(),
        "the branch is published"
    );
    assert_eq!(
        store.issue(issue.id()).await.unwrap().unwrap().status,
        IssueStatus::Fixed
    );
    let tasks = runtime
        .list(ListRequest::new(fundi_runtime::TaskOwner::Any))
        .await
        .unwrap()
        .tasks;
    assert_eq!(tasks.len(), 3, "two audits and one heal: {tasks:?}");

    // The page as the published branch has it passes the audit.
    let checkout = repo.temp.path().join("checkout");
    git(
        repo.temp.path(),
        &[
            "clone",
            "-q",
            "--branch",
            &branch,
            repo.remote.to_str().unwrap(),
            checkout.to_str().unwrap(),
        ],
    );
    let fixed_site = serve_dir(checkout.join("public")).await;
    let runtime_fixed = Runtime::builder()
        .skill(
            A11yAuditSkill::new(
                {
                    let mut a11y_config = a11y;
                    a11y_config.allowed_origins = vec![fixed_site.trim_end_matches('/').to_owned()];
                    a11y_config
                },
                Arc::new(MemoryIssueStore::new()),
            )
            .unwrap(),
        )
        .start()
        .await
        .unwrap();
    let reaudit = runtime_fixed
        .submit(audit_of(&format!("{fixed_site}index.html")))
        .await
        .unwrap()
        .task;
    let reaudit = reach(&runtime_fixed, &reaudit.id, TaskState::Completed).await;
    assert!(
        !violations(&reaudit).contains(&"html-has-lang".to_owned()),
        "{:?}",
        violations(&reaudit)
    );
}
