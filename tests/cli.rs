//! The CLI client (`fundi send`, `stream`, `get`, `cancel`, `list`) against a real server.

mod common;

use std::process::Command;

use common::*;

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

#[test]
fn an_operator_can_drive_tasks_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    let (ok, out, err) = fundi(&server, &["send", "hello cli"]);
    assert!(ok, "{err}");
    assert!(out.contains(": completed"), "{out}");
    assert!(out.contains("artifact echo: hello cli"), "{out}");
    let id = out.split_whitespace().nth(1).unwrap().to_owned();

    let (ok, out, _) = fundi(&server, &["stream", "live", "--data", r#"{"steps": 3}"#]);
    assert!(ok);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("task "), "{out}");
    assert!(out.contains("working (33%): step 1 of 3"), "{out}");
    assert!(out.contains("working (100%): step 3 of 3"), "{out}");
    assert!(lines.last().unwrap().starts_with("completed"), "{out}");

    let (ok, out, _) = fundi(&server, &["get", &id, "--json"]);
    assert!(ok);
    let task: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(task["id"], id.as_str());

    let (ok, out, _) = fundi(
        &server,
        &[
            "send",
            "slow",
            "--data",
            r#"{"steps": 100, "delayMs": 100}"#,
            "--no-wait",
        ],
    );
    assert!(ok);
    let slow = out.split_whitespace().nth(1).unwrap().to_owned();
    let (ok, out, _) = fundi(&server, &["cancel", &slow]);
    assert!(ok);
    assert!(out.contains(": canceled"), "{out}");
    let (ok, _, err) = fundi(&server, &["cancel", &slow]);
    assert!(!ok);
    assert!(
        err.contains("cannot be canceled") && err.contains("-32002"),
        "{err}"
    );

    let (ok, out, _) = fundi(&server, &["list", "--state", "canceled"]);
    assert!(ok);
    assert!(out.contains(&slow) && !out.contains(&id), "{out}");
    assert!(out.contains("1 of 1 tasks"), "{out}");

    let (ok, _, err) = fundi(&server, &["get", "no-such-task"]);
    assert!(!ok);
    assert!(err.contains("Task not found: no-such-task"), "{err}");

    // Wrong or absent credentials: a clear refusal, not a silent failure.
    let refused = Command::new(env!("CARGO_BIN_EXE_fundi"))
        .args(["list"])
        .env("FUNDI_URL", &server.url)
        .env("FUNDI_TOKEN", "not-the-token-at-all")
        .env("FUNDI_USER_TOKEN", "not-the-user-token-either")
        .output()
        .expect("run fundi");
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("Unauthenticated: the bearer token"), "{err}");
    let missing = Command::new(env!("CARGO_BIN_EXE_fundi"))
        .args(["list"])
        .env("FUNDI_URL", &server.url)
        .env("FUNDI_CREDENTIALS", dir.path().join("nowhere.json"))
        .env_remove("FUNDI_TOKEN")
        .env_remove("FUNDI_USER_TOKEN")
        .output()
        .expect("run fundi");
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains("no credentials: pass --token"), "{err}");
}
