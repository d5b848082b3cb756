//! The CLI client (`fundi send`, `stream`, `get`, `cancel`, `list`) against a real server.

mod common;

use std::process::Command;

use common::*;

fn fundi(server: &Server, args: &[&str]) -> (bool, String, String) {
    let (code, out, err) = fundi_at(server, &server.url, args);
    (code == Some(0), out, err)
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
    assert!(
        err.contains("canceled") && !err.contains("TASK_STATE_"),
        "states spelled one way: {err}"
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

/// `fundi` with the server's credentials and `url` as `--url`.
fn fundi_at(server: &Server, url: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_fundi"))
        .args(args)
        .env("FUNDI_URL", url)
        .env("FUNDI_CREDENTIALS", &server.credentials)
        .env_remove("FUNDI_TOKEN")
        .env_remove("FUNDI_USER_TOKEN")
        .output()
        .expect("run fundi");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_cli_says_what_to_do_and_its_exit_status_tells_how_the_task_ended() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    // The JSON-RPC address the card advertises works as --url too.
    let card_url = format!("{}/a2a", server.url);
    let (code, out, err) = fundi_at(&server, &card_url, &["send", "via the card's url"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(": completed"), "{out}");

    // A task that ends rejected (or failed, or canceled) fails the command: an audit of
    // an origin that is not allowed is rejected by its run.
    let off = r#"{"url": "http://169.254.169.254/"}"#;
    let bad = ["send", "bad", "--skill", "a11y-audit", "--data", off];
    let (code, out, err) = fundi_at(&server, &server.url, &bad);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains(": rejected"), "{out}");
    assert!(err.contains("the task ended rejected"), "{err}");
    let streamed = ["stream", "bad", "--skill", "a11y-audit", "--data", off];
    let (code, _, err) = fundi_at(&server, &server.url, &streamed);
    assert_eq!(code, Some(1), "{err}");
    // Data against the skill's input schema is refused, naming the field.
    let (code, _, err) = fundi_at(
        &server,
        &server.url,
        &["send", "x", "--data", r#"{"steps": -1}"#],
    );
    assert_eq!(code, Some(1));
    assert!(
        err.contains("data.steps") && err.contains("-32602"),
        "{err}"
    );

    // An unknown skill: the skills there are.
    let (code, _, err) = fundi_at(&server, &server.url, &["send", "x", "--skill", "nope"]);
    assert_eq!(code, Some(1));
    assert!(err.contains(r#"unknown skill "nope""#), "{err}");
    assert!(err.contains("a11y-audit") && err.contains("echo"), "{err}");

    // Nobody listening: is the server running?
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nobody = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (code, _, err) = fundi_at(&server, &nobody, &["list"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("is `fundi serve` running there?"), "{err}");

    // Something else listening (not JSON): its HTTP status.
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other_url = format!("http://{}", other.local_addr().unwrap());
    let answering = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let (mut socket, _) = other.accept().unwrap();
        let mut request = [0u8; 4096];
        let _ = socket.read(&mut request);
        let page = "<html>not an agent</html>";
        let answer = format!(
            "HTTP/1.1 404 Not Found\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
            page.len()
        );
        socket.write_all(answer.as_bytes()).unwrap();
    });
    let (code, _, err) = fundi_at(&server, &other_url, &["list"]);
    answering.join().unwrap();
    assert_eq!(code, Some(1));
    assert!(
        err.contains("HTTP 404 Not Found with something that is not JSON"),
        "{err}"
    );
}

#[test]
fn output_read_only_in_part_ends_the_cli_quietly_as_other_tools_end() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    // A stream of many lines, read up to its first (as `fundi stream ... | head -1`).
    let mut cli = Command::new(env!("CARGO_BIN_EXE_fundi"))
        .args([
            "stream",
            "many",
            "--data",
            r#"{"steps": 2000, "delayMs": 0}"#,
        ])
        .env("FUNDI_URL", &server.url)
        .env("FUNDI_CREDENTIALS", &server.credentials)
        .env_remove("FUNDI_TOKEN")
        .env_remove("FUNDI_USER_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run fundi");
    let mut first = String::new();
    BufReader::new(cli.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("task "), "{first}");
    // The reader is gone: the next writes find the pipe closed.
    let output = cli.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("Broken pipe"), "{err}");
}
