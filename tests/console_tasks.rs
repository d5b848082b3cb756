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
