//! The console's task list and task page say which skill runs each task, and a working
//! task's page says since when its run has been working (not since its latest step).

mod common;
#[path = "web_console/support.rs"]
mod support;

use serde_json::json;
use support::*;

/// The `datetime` of the first `<time>` after `marker` in `page`.
fn time_after<'a>(page: &'a str, marker: &str) -> &'a str {
    let rest = &page[page
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} in {page}"))..];
    let rest = &rest[rest.find("datetime=\"").expect("a time") + "datetime=\"".len()..];
    &rest[..rest.find('"').unwrap()]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_names_each_tasks_skill_and_when_its_run_began() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &[]);
    let id = echo_as(
        &server,
        ALICE,
        json!({"steps": 100, "delayMs": 100}),
        "long",
    )
    .await;
    let approve = format!("/admin/approvals/{id}/approve");
    admin_as(&server, ALICE, reqwest::Method::POST, &approve).await;
    let working = poll_as(&server, ALICE, &id, |t| {
        let note = t["status"]["message"]["parts"][0]["text"]
            .as_str()
            .unwrap_or("");
        note.starts_with("step 5 ")
    })
    .await;
    let session = sign_in(&server, ALICE).await;

    let list = page(&server, &session.cookie, "/console/tasks").await;
    assert!(list.contains("<th scope=\"col\">Skill</th>"), "{list}");
    let row = &list[list.find(&id).expect("the task listed")..];
    assert!(
        row[..row.find("</tr>").unwrap()].contains("<td>echo</td>"),
        "{row}"
    );

    let path = format!("/console/tasks/{id}");
    let shown = page(&server, &session.cookie, &path).await;
    assert_accessible(&shown, &path);
    assert!(shown.contains("<dt>Skill</dt><dd>echo</dd>"), "{shown}");
    let since: chrono::DateTime<chrono::Utc> =
        time_after(&shown, "working</span> since").parse().unwrap();
    let latest: chrono::DateTime<chrono::Utc> = working["status"]["timestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        since < latest,
        "working since {since}, the run's start, not step 5 at {latest}"
    );
}

/// "Heal this" on the issues page starts a heal of that issue as the viewer, and goes to
/// its page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issue_is_healed_from_the_issues_page() {
    use fundi_skills::testing::{TestRepo, serve_dir};
    let repo = TestRepo::new(&[(
        "public/index.html",
        "<!doctype html>\n<html>\n<head><title>Home</title></head>\n<body><main><h1>Home</h1></main></body>\n</html>\n",
    )]);
    let site = serve_dir(repo.work.join("public")).await;
    let env = [
        (
            "FUNDI__SKILLS__A11Y_AUDIT__ALLOWED_ORIGINS",
            format!("[\"{}\"]", site.trim_end_matches('/')),
        ),
        (
            "FUNDI__SKILLS__HEAL_ISSUE__WORKSPACES",
            format!("[\"{}\"]", repo.workspace.display()),
        ),
    ];
    let server = start(repo.temp.path(), &env);
    let mut audit = common::message("audit", json!({"url": format!("{site}index.html")}));
    audit["metadata"] = json!({"skill": "a11y-audit"});
    let audit = rpc_as(&server, ALICE, "SendMessage", json!({"message": audit})).await;
    let audit = audit["task"]["id"].as_str().unwrap().to_owned();
    poll_as(&server, ALICE, &audit, |t| {
        common::state(t) == "TASK_STATE_COMPLETED"
    })
    .await;
    let issues = admin_as(&server, ALICE, reqwest::Method::GET, "/admin/issues").await;
    let issue = issues["issues"][0]["fingerprint"]
        .as_str()
        .expect("an issue")
        .to_owned();

    let session = sign_in(&server, ALICE).await;
    let listed = page(&server, &session.cookie, "/console/issues").await;
    assert_accessible(&listed, "/console/issues");
    assert!(
        listed.contains(&issue) && listed.contains("Heal this"),
        "{listed}"
    );
    let healed = plain_client()
        .post(format!("{}/console/issues/{issue}/heal", server.url))
        .header("cookie", &session.cookie)
        .header("origin", &server.url)
        .form(&[
            ("csrf", session.csrf.as_str()),
            ("repository", repo.work.to_str().unwrap()),
            ("site", site.as_str()),
            ("root", "public"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(healed.status(), 303);
    let to = healed.headers()["location"].to_str().unwrap().to_owned();
    let task = to
        .strip_prefix("/console/tasks/")
        .expect("the heal's page")
        .to_owned();
    let proposed = poll_as(&server, ALICE, &task, |t| {
        common::state(t) == "TASK_STATE_INPUT_REQUIRED"
    })
    .await;
    assert!(
        proposed.to_string().contains("approve"),
        "a fix proposed: {proposed}"
    );
    let held = admin_as(&server, ALICE, reqwest::Method::GET, "/admin/issues").await;
    assert_eq!(held["issues"][0]["heal"]["taskId"], task.as_str(), "{held}");

    // The proposal waits as an approval: listed with the others, its diff beside the
    // buttons, decided like them.
    let approvals = admin_as(&server, ALICE, reqwest::Method::GET, "/admin/approvals").await;
    let fix = approvals["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["taskId"] == task.as_str())
        .unwrap_or_else(|| panic!("the fix is not listed: {approvals}"));
    assert_eq!(fix["kind"], "fix");
    assert!(fix["diff"].as_str().unwrap_or("").contains("@@"), "{fix}");
    let page_of = |path: String| {
        let cookie = session.cookie.clone();
        let server = &server;
        async move { page(server, &cookie, &path).await }
    };
    let listed = page_of("/console/approvals".into()).await;
    assert_accessible(&listed, "/console/approvals");
    assert!(
        listed.contains(&task) && listed.contains("A fix proposed by heal-issue"),
        "{listed}"
    );
    let shown = page_of(format!("/console/tasks/{task}")).await;
    assert!(shown.contains("Decide on the proposed fix"), "{shown}");
    assert!(
        !shown.contains("Your answer"),
        "no free-text box for a fix: {shown}"
    );
    let rejected = std::process::Command::new(env!("CARGO_BIN_EXE_fundi"))
        .args(["reject", &task, "--reason", "not this way"])
        .env("FUNDI_URL", &server.url)
        .env("FUNDI_TOKEN", OPS)
        .env("FUNDI_USER_TOKEN", ALICE)
        .output()
        .unwrap();
    assert!(
        rejected.status.success(),
        "{}",
        String::from_utf8_lossy(&rejected.stderr)
    );
    let ended = poll_as(&server, ALICE, &task, |t| {
        common::state(t) != "TASK_STATE_INPUT_REQUIRED"
    })
    .await;
    assert!(ended.to_string().contains("not this way"), "{ended}");
    let log = admin_as(&server, ALICE, reqwest::Method::GET, "/admin/audit").await;
    let decided = log["records"].as_array().unwrap().iter().any(|r| {
        r["action"] == "approval.reject"
            && r["target"] == task.as_str()
            && r["detail"]["kind"] == "fix"
    });
    assert!(decided, "{log}");
}
