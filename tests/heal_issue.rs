//! heal-issue and its loop through the real binary: an audit of a page served from a
//! git repository records an issue, the loop submits a heal that waits for approval,
//! `fundi issues` shows the issue with its heal task and state, an approval over
//! JSON-RPC pushes the fix's branch to the remote (and nothing else), and the issue is
//! `fixed`; and with a distinct approver required, another user reads the heal and
//! approves it.

mod common;

use std::time::Instant;

use common::*;
use fundi_skills::testing::{TestRepo, git, serve_dir};
use serde_json::json;

const PAGE: &str = "<!doctype html>\n<html>\n<head><title>Home</title></head>\n<body><main>\
                    <h1>Home</h1></main></body>\n</html>\n";

fn fundi(server: &Server, args: &[&str]) -> String {
    let (ok, text) = cli(server, args);
    assert!(ok, "fundi {args:?}: {text}");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_finding_is_healed_on_approval_and_fundi_issues_follows_it() {
    let repo = TestRepo::new(&[("public/index.html", PAGE)]);
    let (temp, workspace, work, remote) = (&repo.temp, &repo.workspace, &repo.work, &repo.remote);
    let site = serve_dir(work.join("public")).await;

    let origins = format!("[\"{}\"]", site.trim_end_matches('/'));
    let workspaces = format!("[\"{}\"]", workspace.display());
    let rule = format!(
        "[{{source = \"a11y-audit\", site = \"{site}\", repository = \"{}\", root = \"public\"}}]",
        work.display()
    );
    let env = [
        (
            "FUNDI__SKILLS__A11Y_AUDIT__ALLOWED_ORIGINS",
            origins.as_str(),
        ),
        ("FUNDI__SKILLS__HEAL_ISSUE__WORKSPACES", workspaces.as_str()),
        ("FUNDI__SKILLS__HEAL_ISSUE__LOOP", rule.as_str()),
    ];
    let server = Server::start(temp.path(), &env);
    assert!(
        card_skill(&agent_card(&server).await, "heal-issue")["description"]
            .as_str()
            .unwrap()
            .contains("Nothing is ever merged")
    );

    let mut audit = message("audit", json!({"url": format!("{site}index.html")}));
    audit["metadata"] = json!({"skill": "a11y-audit"});
    let audit = ok(&server, "SendMessage", json!({"message": audit})).await;
    let audit_id = audit["task"]["id"].as_str().unwrap().to_owned();
    poll_task(&server, &audit_id, |t| state(t) == "TASK_STATE_COMPLETED").await;

    // The loop's heal waits for approval; `fundi issues` names it and its state.
    let deadline = Instant::now() + DEADLINE;
    let (issue, heal) = loop {
        let listed = fundi(&server, &["issues", "--status", "fix-proposed"]);
        if let Some(line) = listed.lines().find(|l| l.contains("input-required")) {
            let issue = line.split_whitespace().next().unwrap().to_owned();
            let heal = line
                .split("; heal ")
                .nth(1)
                .and_then(|rest| rest.split(':').next())
                .unwrap()
                .to_owned();
            break (issue, heal);
        }
        assert!(Instant::now() < deadline, "no heal waits: {listed}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let waiting = poll_task(&server, &heal, |t| state(t) == "TASK_STATE_INPUT_REQUIRED").await;
    let diff = waiting["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["artifactId"] == "heal-diff")
        .unwrap()["parts"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(diff.contains("+<html lang=\"en\">"), "{diff}");

    let mut approve = message("approve", serde_json::Value::Null);
    approve["taskId"] = json!(heal);
    ok(&server, "SendMessage", json!({"message": approve})).await;
    let done = poll_task(&server, &heal, |t| state(t) == "TASK_STATE_COMPLETED").await;
    let reply = done["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(reply.contains("is pushed to origin"), "{reply}");
    let branch = format!("fundi/heal-{issue}");
    let pushed = git(remote, &["branch", "--list"]);
    assert!(
        pushed.contains(&branch) && pushed.contains("main"),
        "{pushed}"
    );
    assert_eq!(
        pushed.lines().count(),
        2,
        "only the fix's branch is new: {pushed}"
    );
    let fixed = fundi(&server, &["issues", "--status", "fixed"]);
    assert!(
        fixed.contains(&issue) && fixed.contains("completed"),
        "{fixed}"
    );
}

const OPS: &str = "ops-token-0123456789abcdef";
const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789abc";

/// A JSON-RPC call through the operators' client as `user`.
async fn rpc_as(
    server: &Server,
    user: &str,
    method: &str,
    params: serde_json::Value,
) -> serde_json::Value {
    rpc_with(server, OPS, user, method, params).await
}

fn status_text(task: &serde_json::Value) -> &str {
    task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or("")
}

/// GetTask as `user` until `done` holds for the task (or the deadline passes).
async fn poll_as(
    server: &Server,
    user: &str,
    id: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let got = rpc_as(server, user, "GetTask", json!({"id": id})).await;
        if done(&got["result"]) {
            return got["result"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "task {id} never got there: {got}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// `user` answers the task with `text`.
async fn answer_as(server: &Server, user: &str, id: &str, text: &str) {
    let mut answer = message(text, serde_json::Value::Null);
    answer["taskId"] = json!(id);
    let sent = rpc_as(
        server,
        user,
        "SendMessage",
        json!({"message": answer, "configuration": {"returnImmediately": true}}),
    )
    .await;
    assert!(sent.get("result").is_some(), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_user_reads_and_approves_a_heal_when_the_asker_may_not() {
    let repo = TestRepo::new(&[("public/index.html", PAGE)]);
    let site = "http://127.0.0.1:9/";
    let workspaces = format!("[\"{}\"]", repo.workspace.display());
    let env = [
        ("FUNDI__AUTH__STATIC__CLIENTS__OPS__TOKEN", OPS),
        (
            "FUNDI__AUTH__STATIC__CLIENTS__OPS__SCOPES",
            "[\"fundi:heal\"]",
        ),
        ("FUNDI__AUTH__STATIC__USERS__ALICE", ALICE),
        ("FUNDI__AUTH__STATIC__USERS__BOB", BOB),
        ("FUNDI__SKILLS__HEAL_ISSUE__WORKSPACES", workspaces.as_str()),
        (
            "FUNDI__SKILLS__HEAL_ISSUE__REQUIRE_DISTINCT_APPROVER",
            "true",
        ),
    ];
    let server = Server::start(repo.temp.path(), &env);
    let issue = json!({"source": "a11y-audit", "rule": "html-has-lang",
        "location": format!("{site}index.html"), "target": "html", "evidence": "<html>"});
    let mut ask = message(
        "heal",
        json!({"issue": issue, "repository": repo.work,
        "site": site, "root": "public"}),
    );
    ask["metadata"] = json!({"skill": "heal-issue"});
    let sent = rpc_as(
        &server,
        ALICE,
        "SendMessage",
        json!({"message": ask, "configuration": {"returnImmediately": true}}),
    )
    .await;
    let id = sent["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{sent}"))
        .to_owned();
    let waiting = poll_as(&server, BOB, &id, |t| {
        t["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    })
    .await;
    // Bob reads what he is asked to approve.
    let diff = waiting["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["artifactId"] == "heal-diff")
        .unwrap()["parts"][0]["text"]
        .clone();
    assert!(
        diff.as_str().unwrap().contains("+<html lang=\"en\">"),
        "{diff}"
    );
    // Alice may not approve her own heal: it asks again.
    answer_as(&server, ALICE, &id, "approve").await;
    poll_as(&server, ALICE, &id, |t| {
        status_text(t).contains("alice asked for this fix and cannot approve")
    })
    .await;
    answer_as(&server, BOB, &id, "approve").await;
    let done = poll_as(&server, ALICE, &id, |t| {
        t["status"]["state"] == "TASK_STATE_COMPLETED"
    })
    .await;
    assert!(status_text(&done).contains("approved by bob"), "{done}");
    // Done, the task is alice's alone again.
    let gone = rpc_as(&server, BOB, "GetTask", json!({"id": id})).await;
    assert_eq!(gone["error"]["code"], -32001, "{gone}");
    let pushed = git(&repo.remote, &["branch", "--list"]);
    assert!(pushed.contains("fundi/heal-"), "{pushed}");
}
