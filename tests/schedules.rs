//! Scheduled runs through the real binary: `fundi schedules` and `/admin/schedules`
//! create, list, pause, resume and delete; firings are ordinary tasks of the creator;
//! schedules and their counts survive a restart, and no firing makes two tasks.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// Runs the CLI against `server` with the credentials it wrote.
fn fundi(server: &Server, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_fundi"))
        .args(args)
        .env("FUNDI_URL", &server.url)
        .env("FUNDI_CREDENTIALS", &server.credentials)
        .env_remove("FUNDI_TOKEN")
        .env_remove("FUNDI_USER_TOKEN")
        .output()
        .expect("run fundi");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The schedule as `fundi schedules show --json` prints it.
fn show(server: &Server, id: &str) -> Value {
    let (ok, out, err) = fundi(server, &["schedules", "show", id, "--json"]);
    assert!(ok, "{err}");
    serde_json::from_str(&out).expect("schedule JSON")
}

/// Polls the schedule until `done` holds for it.
fn wait_for(server: &Server, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let schedule = show(server, id);
        if done(&schedule) {
            return schedule;
        }
        assert!(Instant::now() < deadline, "{what}: {schedule}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The first message ids of the caller's tasks that schedule `id` submitted.
async fn firings_of(server: &Server, id: &str) -> Vec<String> {
    let page = ok(server, "ListTasks", json!({"pageSize": 100})).await;
    let tasks = page["tasks"].as_array().cloned().unwrap_or_default();
    tasks
        .iter()
        .map(|task| &task["history"][0])
        .filter(|first| first["metadata"]["schedule"]["id"] == id)
        .map(|first| first["messageId"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_schedules_runs_from_the_command_line_and_they_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    let (ok, out, err) = fundi(
        &server,
        &[
            "schedules",
            "create",
            "--skill",
            "echo",
            "--cron",
            "* * * * * *",
            "--text",
            "tick",
            "--data",
            r#"{"steps": 1}"#,
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("echo \"* * * * * *\" (UTC), next "), "{out}");
    let id = out.split_whitespace().next().unwrap().to_owned();
    assert!(id.starts_with("sch-"), "{out}");

    // It fires: ordinary tasks of the creator, each with its own firing time.
    wait_for(&server, &id, "the schedule never fired", |s| {
        s["fired"].as_u64() >= Some(2)
    });
    let fired = firings_of(&server, &id).await;
    assert!(fired.len() >= 2, "{fired:?}");
    let (ok, out, _) = fundi(&server, &["schedules", "list"]);
    assert!(
        ok && out.contains(&id) && out.contains("last: task "),
        "{out}"
    );

    // Paused, it is kept as it stands; the count it had is the count of its tasks.
    let (ok, out, err) = fundi(&server, &["schedules", "pause", &id, "--json"]);
    assert!(ok, "{err}");
    let paused: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(paused["paused"], json!(true));
    let fired_when_paused = paused["fired"].as_u64().unwrap();
    assert!(server.terminate().success());

    let server = Server::start(dir.path(), &[]);
    let kept = show(&server, &id);
    assert_eq!(kept["paused"], json!(true), "{kept}");
    assert_eq!(kept["fired"].as_u64(), Some(fired_when_paused), "{kept}");
    assert_eq!(
        firings_of(&server, &id).await.len() as u64,
        fired_when_paused
    );

    // Resumed, it fires again; stopped while active and started again, it goes on,
    // and no firing time made two tasks.
    let (ok, out, _) = fundi(&server, &["schedules", "resume", &id]);
    assert!(ok && out.contains(", next "), "{out}");
    let more = fired_when_paused + 2;
    wait_for(&server, &id, "no firing after resume", |s| {
        s["fired"].as_u64() >= Some(more)
    });
    assert!(server.terminate().success());
    let server = Server::start(dir.path(), &[]);
    let before = show(&server, &id)["fired"].as_u64().unwrap();
    wait_for(&server, &id, "no firing after the restart", |s| {
        s["fired"].as_u64() > Some(before)
    });
    let (ok, _, err) = fundi(&server, &["schedules", "pause", &id]);
    assert!(ok, "{err}");
    let fired = firings_of(&server, &id).await;
    let mut distinct = fired.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        fired.len(),
        "a firing made two tasks: {fired:?}"
    );
    assert_eq!(
        show(&server, &id)["fired"].as_u64(),
        Some(fired.len() as u64)
    );

    let (ok, out, _) = fundi(&server, &["schedules", "delete", &id]);
    assert!(
        ok && out.contains(&format!("deleted schedule {id}")),
        "{out}"
    );
    let (ok, out, _) = fundi(&server, &["schedules", "list"]);
    assert!(ok && out.contains("no schedules"), "{out}");
    assert_eq!(
        firings_of(&server, &id).await.len(),
        fired.len(),
        "its tasks stay"
    );

    // Every change is in the audit log, in order, across the restarts.
    let (ok, out, err) = fundi(&server, &["audit", "--json"]);
    assert!(ok, "{err}");
    let log: Value = serde_json::from_str(&out).unwrap();
    let changes: Vec<&str> = log["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["target"] == id.as_str())
        .map(|r| r["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        changes,
        [
            "schedule.create",
            "schedule.pause",
            "schedule.resume",
            "schedule.pause",
            "schedule.delete"
        ]
    );

    // Mistakes are named.
    let mistakes: [(&[&str], &[&str]); 3] = [
        (
            &["--skill", "echo", "--cron", "0 3 * *"],
            &["5 fields", "HTTP 400"],
        ),
        (
            &["--skill", "nope", "--cron", "0 3 * * *"],
            &["\"nope\"", "echo"],
        ),
        (
            &[
                "--skill",
                "echo",
                "--cron",
                "0 3 * * *",
                "--time-zone",
                "Berlin",
            ],
            &["IANA", "HTTP 400"],
        ),
    ];
    for (flags, said) in mistakes {
        let args: Vec<&str> = ["schedules", "create", "--text", "x"]
            .into_iter()
            .chain(flags.iter().copied())
            .collect();
        let (ok, _, err) = fundi(&server, &args);
        assert!(
            !ok && said.iter().all(|s| err.contains(s)),
            "{flags:?}: {err}"
        );
    }
    let (ok, _, err) = fundi(&server, &["schedules", "pause", "sch-nope"]);
    assert!(
        !ok && err.contains("schedule sch-nope not found") && err.contains("404"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedule_routes_are_for_operators_only() {
    let dir = tempfile::tempdir().unwrap();
    let (auditor, operator, user) = (
        "auditor-token-0123456789",
        "operator-token-0123456789",
        "alice-token-0123456789",
    );
    let env = [
        ("FUNDI__AUTH__STATIC__CLIENTS__AUDITOR__TOKEN", auditor),
        (
            "FUNDI__AUTH__STATIC__CLIENTS__AUDITOR__SCOPES",
            "[\"fundi:audit\"]",
        ),
        ("FUNDI__AUTH__STATIC__CLIENTS__OPS__TOKEN", operator),
        (
            "FUNDI__AUTH__STATIC__CLIENTS__OPS__SCOPES",
            "[\"fundi:admin\"]",
        ),
        ("FUNDI__AUTH__STATIC__USERS__ALICE", user),
    ];
    let server = Server::start(dir.path(), &env);
    let url = format!("{}/admin/schedules", server.url);
    let client = reqwest::Client::new();
    let call = |method: reqwest::Method, url: &str, token: &str| {
        client
            .request(method, url)
            .bearer_auth(token)
            .header("X-Fundi-User-Token", user)
    };
    let nightly = json!({"skill": "echo", "cron": "0 3 * * *", "timeZone": "Europe/Berlin",
                         "text": "nightly"});

    let refused = call(reqwest::Method::POST, &url, auditor)
        .json(&nightly)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let anonymous = client.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);

    let created = call(reqwest::Method::POST, &url, operator)
        .json(&nightly)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let schedule: Value = created.json().await.unwrap();
    assert_eq!(schedule["owner"], json!("alice"));
    assert_eq!(schedule["client"], json!("ops"));
    assert_eq!(schedule["zone"], json!("Europe/Berlin"));
    let next = schedule["nextFire"].as_str().unwrap();
    assert!(
        next.contains("T01:00:00") || next.contains("T02:00:00"),
        "03:00 in Berlin is 01:00 or 02:00 UTC: {next}"
    );

    let listed = call(reqwest::Method::GET, &url, auditor)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 403, "listing is for operators too");
    let bad = call(reqwest::Method::POST, &url, operator)
        .json(&json!({"skill": "echo", "cron": "0 3 * * *", "when": "now"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let body: Value = bad.json().await.unwrap();
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("when") && error.contains("\"cron\""),
        "{error}"
    );
    let missing = call(reqwest::Method::GET, &format!("{url}/sch-none"), operator)
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let id = schedule["id"].as_str().unwrap();
    let deleted = call(reqwest::Method::DELETE, &format!("{url}/{id}"), operator)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
}
