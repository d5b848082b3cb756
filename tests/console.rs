//! What `fundi serve` prints for the person at its terminal: what it runs on (the
//! store, the skills, the address), then warnings and errors, not a line per step of
//! every task; no colour codes where stderr is not a terminal; JSON lines when asked;
//! and a clear word when another fundi holds the data directory.

mod common;

use common::*;
use serde_json::{Value, json};

/// A page whose table holds stray text: html5ever warns "foster parenting not
/// implemented" on it, which says nothing to an operator.
const STRAY_TABLE: &str = "<!doctype html><html lang=\"en\"><head><title>t</title></head>\
                           <body><table>stray<tr><td>x</td></tr></table></body></html>";

/// Runs a 5-step echo task and an audit of `STRAY_TABLE` to their end.
async fn some_work(server: &Server) {
    let steps = json!({"message": message("steps", json!({"steps": 5}))});
    let done = ok(server, "SendMessage", steps).await;
    assert_eq!(state(&done["task"]), "TASK_STATE_COMPLETED", "{done}");
    let mut page = message("audit", Value::Null);
    page["parts"] = json!([{"text": STRAY_TABLE, "mediaType": "text/html", "filename": "t.html"}]);
    page["metadata"] = json!({"skill": "a11y-audit"});
    let audited = ok(server, "SendMessage", json!({"message": page})).await;
    assert_eq!(state(&audited["task"]), "TASK_STATE_COMPLETED", "{audited}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_says_what_runs_and_then_only_what_matters() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let banner = server.banner.join("\n");
    let data = dir.path().join("data");
    for expected in [
        format!(
            "fundi credentials in {}",
            data.join("credentials.json").display()
        ),
        format!(
            "fundi client commands: FUNDI_CREDENTIALS={} fundi list",
            data.join("credentials.json").display()
        ),
        format!("fundi store: sled in {} (sync", data.display()),
        "fundi skills: echo, a11y-audit, security-scan".to_owned(),
        "fundi listening on http://127.0.0.1:".to_owned(),
    ] {
        assert!(banner.contains(&expected), "{expected:?} in\n{banner}");
    }
    some_work(&server).await;
    let stderr = server.stderr.clone();
    assert_eq!(server.terminate().code(), Some(0));
    let log = std::fs::read_to_string(stderr).unwrap();
    assert!(log.contains("listening"), "the log is written: {log}");
    assert!(!log.contains('\u{1b}'), "no colour codes in a file: {log}");
    assert!(
        !log.contains("step 1 of 5"),
        "no line per step at info: {log}"
    );
    assert!(
        !log.contains("foster parenting"),
        "html5ever's warning is quieted: {log}"
    );
}

/// Also: a filter that names html5ever gets its warnings (so the page above does make
/// it warn, and the quieting is only a default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_per_line_and_debug_shows_the_steps() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("FUNDI__LOG__FORMAT", "json"),
        (
            "FUNDI__LOG__FILTER",
            "info,fundi_runtime::progress=debug,html5ever=warn",
        ),
    ];
    let server = Server::start(dir.path(), &env);
    some_work(&server).await;
    let stderr = server.stderr.clone();
    assert_eq!(server.terminate().code(), Some(0));
    let log = std::fs::read_to_string(stderr).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let steps = lines
        .iter()
        .filter(|l| l["fields"]["message"] == "progress" && l["level"] == "DEBUG")
        .filter_map(|l| l["fields"]["status"].as_str())
        .filter(|status| status.ends_with(" of 5"))
        .count();
    assert_eq!(steps, 5, "echo's steps at debug: {log}");
    assert!(lines.iter().any(|l| l["fields"]["message"] == "listening"));
    let foster = |l: &&Value| l["fields"]["message"] == "foster parenting not implemented";
    assert!(lines.iter().any(|l| foster(&l)), "html5ever warns: {log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_fundi_on_the_same_data_directory_says_another_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let _first = Server::start(dir.path(), &[]);
    let (status, stderr) = start_failing(dir.path(), &["--bind", "127.0.0.1:0"], &[]);
    assert!(!status.success());
    let data = dir.path().join("data");
    let expected = format!(
        "another fundi is using the data directory {}",
        data.display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert_eq!(stderr.matches("lock").count(), 1, "said once: {stderr}");
}
