//! The heal-issue skill in a real runtime on real git repositories with a bare
//! remote: approval publishes only the fix's branch, rejection deletes it, a restart
//! while waiting loses nothing, approvers need the scope (and may have to be someone
//! else), one of two concurrent heals wins, and bad requests are refused clearly.

mod heal;

use std::sync::Arc;
use std::time::Duration;

use fundi_ops::issues::{IssueStatus, IssueStore, MemoryIssueStore};
use fundi_runtime::Access;
use fundi_runtime::{Runtime, RuntimeError, RuntimeHandle, TaskId, TaskState, TaskStore};
use fundi_skills::heal::{HealConfig, HealIssueSkill, RuntimeLink};
use fundi_store_sled::SledIssueStore;
use fundi_store_sled::testing::open_sled;
use heal::*;

async fn node(repo: &Repo, config: HealConfig, issues: Arc<dyn IssueStore>) -> RuntimeHandle {
    node_on(
        repo,
        config,
        issues,
        Arc::new(fundi_runtime::MemoryStore::new()),
    )
    .await
}

async fn node_on(
    repo: &Repo,
    config: HealConfig,
    issues: Arc<dyn IssueStore>,
    store: Arc<dyn TaskStore>,
) -> RuntimeHandle {
    let link = RuntimeLink::new();
    let mut config = config;
    config.workspaces = vec![repo.workspace.clone()];
    let skill = HealIssueSkill::new(config, issues, link.clone()).unwrap();
    let runtime = Runtime::builder()
        .shared_store(store)
        .skill(skill)
        .start()
        .await
        .unwrap();
    link.set(&runtime);
    runtime
}

const ALICE: Option<&str> = Some("alice");
const HEAL: &[&str] = &["fundi:heal"];

/// Alice asks for the heal of `issue`; the task once it waits for approval.
async fn proposed(runtime: &RuntimeHandle, repo: &Repo, issue: &str) -> fundi_runtime::Task {
    let task = runtime
        .submit(from(ALICE, HEAL, heal_message(issue, &repo.work)))
        .await
        .unwrap()
        .task;
    reach(runtime, &task.id, TaskState::InputRequired).await
}

fn branch(issue: &str) -> String {
    format!("fundi/heal-{issue}")
}

/// Nothing is left of a heal of `issue`: no branch here or on the remote, and the
/// issue open and held by no heal.
async fn withdrawn(repo: &Repo, issues: &dyn IssueStore, issue: &str) {
    assert_eq!(repo.local_branch(&branch(issue)), None, "local branch");
    assert_eq!(repo.remote_branch(&branch(issue)), None, "remote branch");
    let stored = issues.issue(issue).await.unwrap().unwrap();
    assert_eq!((stored.status, stored.heal), (IssueStatus::Open, None));
}

#[tokio::test]
async fn an_approved_fix_is_pushed_on_its_branch_and_nothing_else_moves() {
    let repo = Repo::new(&[("index.html", PAGE), ("README", "site\n")]);
    let issues = shared(MemoryIssueStore::new());
    let runtime = node(&repo, HealConfig::default(), issues.clone()).await;
    let id = record_missing_lang(issues.as_ref()).await;
    let head = repo.head();

    let waiting = proposed(&runtime, &repo, &id).await;
    let prompt = text(&waiting);
    for part in [
        &id as &str,
        "html-has-lang",
        "asked by alice",
        "index.html",
        "(+1 -1)",
    ] {
        assert!(prompt.contains(part), "{part:?} in {prompt}");
    }
    let diff = artifact(&waiting, "heal-diff")
        .as_text()
        .unwrap()
        .to_owned();
    assert!(diff.contains("-<html>\n+<html lang=\"en\">"), "{diff}");
    let summary = proposal(&waiting);
    assert_eq!(summary["branch"], branch(&id));
    assert_eq!(summary["files"], serde_json::json!(["index.html"]));
    assert_eq!(summary["requestedBy"], "alice");
    let stored = issues.issue(&id).await.unwrap().unwrap();
    assert_eq!(stored.status, IssueStatus::FixProposed);
    assert_eq!(stored.heal.unwrap().task_id, waiting.id);
    // The branch is made here, not yet published; the user's checkout is untouched.
    let commit = repo.local_branch(&branch(&id)).expect("the branch is made");
    assert_eq!(repo.remote_branch(&branch(&id)), None);
    assert_eq!(repo.head(), head);
    assert_eq!(git(&repo.work, &["status", "--porcelain"]), "");
    assert_eq!(
        git(&repo.work, &["log", "-1", "--format=%an <%ae>", &commit]),
        "fundi <fundi@localhost>"
    );

    runtime
        .submit(from(ALICE, HEAL, answer(&waiting.id, "approve")))
        .await
        .unwrap();
    let done = reach(&runtime, &waiting.id, TaskState::Completed).await;
    assert!(text(&done).contains("approved by alice"), "{}", text(&done));
    let decided = artifact(&done, "heal-decision").as_data().unwrap().clone();
    assert_eq!(decided["by"], "alice");
    assert!(decided["at"].is_string());
    assert_eq!(repo.remote_branch(&branch(&id)), Some(commit.clone()));
    assert_eq!(
        repo.remote_branch("main"),
        Some(head.clone()),
        "main is never pushed"
    );
    assert_eq!(repo.head(), head, "nothing is merged");
    assert_eq!(
        issues.issue(&id).await.unwrap().unwrap().status,
        IssueStatus::Fixed
    );
    let published = git(&repo.remote, &["show", &format!("{commit}:index.html")]);
    assert!(published.contains("<html lang=\"en\">"));

    // Healing it again re-checks the published branch with a11y-audit's rule.
    let again = runtime
        .submit(from(ALICE, HEAL, heal_message(&id, &repo.work)))
        .await
        .unwrap()
        .task;
    let again = reach(&runtime, &again.id, TaskState::Completed).await;
    assert!(
        text(&again).contains("no longer finds html-has-lang"),
        "{}",
        text(&again)
    );
    assert!(text(&again).contains(&branch(&id)), "{}", text(&again));
}

#[tokio::test]
async fn a_merged_fix_that_regresses_is_healed_again() {
    let repo = Repo::new(&[("index.html", PAGE)]);
    let issues = shared(MemoryIssueStore::new());
    let runtime = node(&repo, HealConfig::default(), issues.clone()).await;
    let id = record_missing_lang(issues.as_ref()).await;
    let waiting = proposed(&runtime, &repo, &id).await;
    runtime
        .submit(from(ALICE, HEAL, answer(&waiting.id, "approve")))
        .await
        .unwrap();
    reach(&runtime, &waiting.id, TaskState::Completed).await;
    // A person merges the fix, and a later change loses it again.
    git(&repo.work, &["merge", "-q", "--ff-only", &branch(&id)]);
    std::fs::write(repo.work.join("index.html"), PAGE).unwrap();
    git(&repo.work, &["commit", "-q", "-am", "a new page"]);
    let again = proposed(&runtime, &repo, &id).await;
    assert!(text(&again).contains("Set lang=\"en\""), "{}", text(&again));
    runtime
        .submit(from(ALICE, HEAL, answer(&again.id, "approve")))
        .await
        .unwrap();
    let done = reach(&runtime, &again.id, TaskState::Completed).await;
    assert!(
        text(&done).contains("is pushed to origin"),
        "{}",
        text(&done)
    );
    assert_eq!(
        repo.remote_branch(&branch(&id)),
        repo.local_branch(&branch(&id))
    );
}

#[tokio::test]
async fn a_rejected_fix_loses_its_branch_and_the_issue_is_open_again() {
    let repo = Repo::new(&[("index.html", PAGE)]);
    let issues = shared(MemoryIssueStore::new());
    let runtime = node(&repo, HealConfig::default(), issues.clone()).await;
    let id = record_missing_lang(issues.as_ref()).await;
    let waiting = proposed(&runtime, &repo, &id).await;
    // An answer that decides nothing is asked again.
    runtime
        .submit(from(ALICE, HEAL, answer(&waiting.id, "maybe later")))
        .await
        .unwrap();
    let asked = reach_saying(
        &runtime,
        &waiting.id,
        TaskState::InputRequired,
        "must be \"approve\"",
    )
    .await;
    assert!(repo.local_branch(&branch(&id)).is_some());
    runtime
        .submit(from(
            ALICE,
            HEAL,
            answer(&asked.id, "reject: the page is in French"),
        ))
        .await
        .unwrap();
    let done = reach(&runtime, &asked.id, TaskState::Rejected).await;
    assert!(
        text(&done).contains("rejected by alice") && text(&done).contains("in French"),
        "{}",
        text(&done)
    );
    withdrawn(&repo, issues.as_ref(), &id).await;
}

#[tokio::test]
async fn a_fix_waiting_for_approval_survives_a_restart() {
    let repo = Repo::new(&[("index.html", PAGE)]);
    let dir = tempfile::tempdir().unwrap();
    let waiting_id: TaskId;
    let id;
    {
        let store = Arc::new(open_sled(dir.path()).await);
        let issues = shared(SledIssueStore::new(store.clone()));
        let runtime = node_on(&repo, HealConfig::default(), issues.clone(), store).await;
        id = record_missing_lang(issues.as_ref()).await;
        waiting_id = proposed(&runtime, &repo, &id).await.id;
        runtime.shutdown(Duration::ZERO).await;
    }
    let store = Arc::new(open_sled(dir.path()).await);
    let issues = shared(SledIssueStore::new(store.clone()));
    let runtime = node_on(&repo, HealConfig::default(), issues.clone(), store).await;
    let still = runtime.get(&waiting_id, None, Access::Any).await.unwrap();
    assert_eq!(still.status.state, TaskState::InputRequired);
    runtime
        .submit(from(ALICE, HEAL, answer(&waiting_id, "approve")))
        .await
        .unwrap();
    let done = reach(&runtime, &waiting_id, TaskState::Completed).await;
    assert!(text(&done).contains("approved by alice"), "{}", text(&done));
    assert!(repo.remote_branch(&branch(&id)).is_some());
    assert_eq!(
        issues.issue(&id).await.unwrap().unwrap().status,
        IssueStatus::Fixed
    );
}

#[tokio::test]
async fn a_heal_canceled_after_a_restart_leaves_its_issue_and_branch_to_the_next() {
    let repo = Repo::new(&[("index.html", PAGE)]);
    let dir = tempfile::tempdir().unwrap();
    let (first, id) = {
        let store = Arc::new(open_sled(dir.path()).await);
        let issues = shared(SledIssueStore::new(store.clone()));
        let runtime = node_on(&repo, HealConfig::default(), issues.clone(), store).await;
        let id = record_missing_lang(issues.as_ref()).await;
        let first = proposed(&runtime, &repo, &id).await.id;
        runtime.shutdown(Duration::ZERO).await;
        (first, id)
    };
    let store = Arc::new(open_sled(dir.path()).await);
    let issues = shared(SledIssueStore::new(store.clone()));
    let runtime = node_on(&repo, HealConfig::default(), issues.clone(), store).await;
    // Canceled while no run is under way: nothing of the heal runs to clean up.
    runtime.cancel(&first, Access::Any).await.unwrap();
    assert!(repo.local_branch(&branch(&id)).is_some(), "left behind");
    let next = proposed(&runtime, &repo, &id).await;
    let held = issues.issue(&id).await.unwrap().unwrap().heal.unwrap();
    assert_eq!(held.task_id, next.id, "taken over from the ended heal");
    let commit = repo.local_branch(&branch(&id)).unwrap();
    let made_by = git(&repo.work, &["log", "-1", "--format=%B", &commit]);
    assert!(
        made_by.contains(&format!("Fundi-Task: {}", next.id)),
        "{made_by}"
    );
}

#[tokio::test]
async fn only_holders_of_the_scope_approve_and_the_config_can_ask_for_someone_else() {
    let repo = Repo::new(&[("index.html", PAGE)]);
    let issues = shared(MemoryIssueStore::new());
    let mut config = HealConfig::default();
    config.require_distinct_approver = true;
    let runtime = node(&repo, config, issues.clone()).await;
    let id = record_missing_lang(issues.as_ref()).await;
    let waiting = proposed(&runtime, &repo, &id).await;

    // Without fundi:heal, neither the asker nor anyone else may answer.
    let refused = runtime
        .submit(from(
            ALICE,
            &["fundi:audit"],
            answer(&waiting.id, "approve"),
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, RuntimeError::Forbidden { .. }),
        "{refused:?}"
    );
    let refused = runtime
        .submit(from(
            Some("carol"),
            &["fundi:audit"],
            answer(&waiting.id, "approve"),
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, RuntimeError::TaskNotFound(_)),
        "{refused:?}"
    );
    // The asker holds the scope, but must not approve their own fix.
    runtime
        .submit(from(ALICE, HEAL, answer(&waiting.id, "approve")))
        .await
        .unwrap();
    reach_saying(
        &runtime,
        &waiting.id,
        TaskState::InputRequired,
        "alice asked for this fix and cannot approve",
    )
    .await;
    assert_eq!(repo.remote_branch(&branch(&id)), None, "not published");
    runtime
        .submit(from(Some("bob"), HEAL, answer(&waiting.id, "approve")))
        .await
        .unwrap();
    let done = reach(&runtime, &waiting.id, TaskState::Completed).await;
    assert!(text(&done).contains("approved by bob"), "{}", text(&done));
    assert!(repo.remote_branch(&branch(&id)).is_some());
}

#[tokio::test]
async fn of_two_heals_of_one_issue_one_proposes_and_the_other_says_so() {
    let repo = Repo::new(&[("index.html", PAGE)]);
    let issues = shared(MemoryIssueStore::new());
    let runtime = node(&repo, HealConfig::default(), issues.clone()).await;
    let id = record_missing_lang(issues.as_ref()).await;
    let (a, b) = tokio::join!(
        runtime.submit(from(ALICE, HEAL, heal_message(&id, &repo.work))),
        runtime.submit(from(Some("bob"), HEAL, heal_message(&id, &repo.work))),
    );
    let ids = [a.unwrap().task.id, b.unwrap().task.id];
    let mut states = Vec::new();
    for task in &ids {
        let deadline = std::time::Instant::now() + DEADLINE;
        let task = loop {
            let t = runtime.get(task, None, Access::Any).await.unwrap();
            if t.status.state == TaskState::InputRequired || t.status.state.is_terminal() {
                break t;
            }
            assert!(std::time::Instant::now() < deadline);
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        states.push((task.status.state, text(&task)));
    }
    states.sort_by_key(|(s, _)| *s as i32);
    let waiting = states
        .iter()
        .filter(|(s, _)| *s == TaskState::InputRequired)
        .count();
    let lost: Vec<&String> = states
        .iter()
        .filter(|(s, _)| *s == TaskState::Rejected)
        .map(|(_, t)| t)
        .collect();
    assert_eq!(waiting, 1, "{states:?}");
    assert_eq!(lost.len(), 1, "{states:?}");
    assert!(lost[0].contains("another heal"), "{}", lost[0]);
}

#[tokio::test]
async fn requests_outside_the_workspace_on_a_dirty_tree_or_of_an_unhandled_kind_are_refused() {
    let repo = Repo::new(&[("index.html", PAGE)]);
    let outside = Repo::new(&[("index.html", PAGE)]);
    let issues = shared(MemoryIssueStore::new());
    let runtime = node(&repo, HealConfig::default(), issues.clone()).await;
    let id = record_missing_lang(issues.as_ref()).await;

    let escaping = repo
        .workspace
        .join("..")
        .join("..")
        .join(outside.temp.path().file_name().unwrap());
    for path in [escaping, outside.work.clone()] {
        let refused = runtime
            .submit(from(ALICE, HEAL, heal_message(&id, &path)))
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, RuntimeError::InvalidInput(m) if m.contains("outside every allowed workspace")),
            "{path:?}: {refused:?}"
        );
    }
    let run = |message| async {
        let task = runtime
            .submit(from(ALICE, HEAL, message))
            .await
            .unwrap()
            .task;
        reach(&runtime, &task.id, TaskState::Rejected).await
    };
    std::fs::write(repo.work.join("index.html"), "<p>edited</p>").unwrap();
    let dirty = run(heal_message(&id, &repo.work)).await;
    assert!(
        text(&dirty).contains("uncommitted changes (index.html)"),
        "{}",
        text(&dirty)
    );
    git(&repo.work, &["checkout", "--", "index.html"]);

    let mut unhandled = a11y_issue(PAGE, &format!("{SITE}index.html"), "html-has-lang");
    unhandled.rule = "color-contrast".into();
    unhandled.fingerprint = "contrast".into();
    issues.record(unhandled).await.unwrap();
    let refused = run(heal_message("contrast", &repo.work)).await;
    assert!(
        text(&refused).contains("no remediator handles a11y-audit issues of rule color-contrast"),
        "{}",
        text(&refused)
    );
    let missing = run(heal_message("no-such-issue", &repo.work)).await;
    assert!(
        text(&missing).contains("no issue \"no-such-issue\""),
        "{}",
        text(&missing)
    );
    let nothing_done = issues.issue(&id).await.unwrap().unwrap();
    assert_eq!(
        (nothing_done.status, nothing_done.heal),
        (IssueStatus::Open, None)
    );
}

#[tokio::test]
async fn a_remote_that_refuses_the_push_fails_the_task_and_the_issue_is_open_again() {
    let repo = Repo::new(&[("index.html", PAGE)]);
    let hook = repo.remote.join("hooks").join("pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho 'pushes are frozen' >&2\nexit 1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let issues = shared(MemoryIssueStore::new());
    let runtime = node(&repo, HealConfig::default(), issues.clone()).await;
    let id = record_missing_lang(issues.as_ref()).await;
    let waiting = proposed(&runtime, &repo, &id).await;
    runtime
        .submit(from(ALICE, HEAL, answer(&waiting.id, "approve")))
        .await
        .unwrap();
    let failed = reach(&runtime, &waiting.id, TaskState::Failed).await;
    assert!(
        text(&failed).contains("refused") && text(&failed).contains("pushes are frozen"),
        "{}",
        text(&failed)
    );
    withdrawn(&repo, issues.as_ref(), &id).await;
}

#[tokio::test]
async fn a_symbolic_link_is_never_edited() {
    let repo = Repo::new(&[("real_headers", "/*\n  X-Frame-Options: DENY\n")]);
    std::os::unix::fs::symlink("real_headers", repo.work.join("_headers")).unwrap();
    git(&repo.work, &["add", "_headers"]);
    git(&repo.work, &["commit", "-q", "-m", "a link"]);
    let issues = shared(MemoryIssueStore::new());
    let runtime = node(&repo, HealConfig::default(), issues.clone()).await;
    let mut finding = a11y_issue(PAGE, &format!("{SITE}index.html"), "html-has-lang");
    finding.source = "security-scan".into();
    finding.rule = "x-content-type-options-missing".into();
    finding.target = Some("x-content-type-options".into());
    finding.location = "https://site.test/".into();
    finding.fingerprint = "nosniff".into();
    issues.record(finding).await.unwrap();
    let mut message = heal_message("nosniff", &repo.work);
    message.parts = vec![fundi_runtime::Part::data(serde_json::json!({
        "issue": "nosniff", "repository": repo.work, "file": "_headers"}))];
    let task = runtime
        .submit(from(ALICE, HEAL, message))
        .await
        .unwrap()
        .task;
    let failed = reach(&runtime, &task.id, TaskState::Failed).await;
    assert!(
        text(&failed).contains("_headers is not a regular file"),
        "{}",
        text(&failed)
    );
    withdrawn(&repo, issues.as_ref(), "nosniff").await;
}
