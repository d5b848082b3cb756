//! Interoperability with the official A2A clients, driving a real `fundi` binary over
//! HTTP: the `a2a-sdk` Python package from PyPI, 1.x (A2A v1.0, over JSON-RPC and over
//! HTTP+JSON) and 0.3.x (A2A v0.3), each in its own virtualenv (made once per target
//! directory, pinned by `tests/interop/requirements-*.txt`); and the `@a2a-js/sdk` JS
//! package from npm over HTTP+JSON (installed once per target directory with `npm ci`,
//! pinned by `tests/interop/package-lock.json`); and the official MCP Python SDK (`mcp`)
//! against `fundi mcp` over stdio and `/mcp` over streamable HTTP; and the Python SDK's
//! own server as a peer fundi delegates to, over JSON-RPC and over HTTP+JSON; and both
//! SDKs' card signature verifiers accepting fundi's signed card.

mod common;
#[path = "access/idp.rs"]
mod idp;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use common::Server;
use serde_json::Value;

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop")
}

/// Held while a virtualenv or the npm project is made: two tests may want the same one.
static INSTALLING: Mutex<()> = Mutex::new(());

/// A virtualenv with the pinned requirements; rebuilt when the pins change.
fn venv(name: &str) -> PathBuf {
    let _installing = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    let requirements = interop_dir().join(format!("requirements-{name}.txt"));
    let pins = std::fs::read_to_string(&requirements).expect("requirements file");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("interop-venv-{name}"));
    let python = dir.join("bin/python");
    let stamp = dir.join("installed-requirements.txt");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(pins.as_str()) {
        return python;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let host_python = std::env::var("FUNDI_PYTHON").unwrap_or_else(|_| "python3".into());
    run(
        Command::new(&host_python).args(["-m", "venv"]).arg(&dir),
        "creating the virtualenv",
    );
    run(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(&requirements),
        "installing the official A2A SDK from PyPI",
    );
    std::fs::write(&stamp, pins).expect("stamp");
    python
}

fn run(command: &mut Command, what: &str) {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        output.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The pinned JS SDK installed with the script beside it (ES modules find their
/// packages from the script's own folder); returns the script's path there.
fn npm_project(script: &str) -> PathBuf {
    let _installing = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-npm");
    let lock = std::fs::read_to_string(interop_dir().join("package-lock.json")).expect("lock");
    let stamp = dir.join("installed-package-lock.json");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(lock.as_str()) {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for file in ["package.json", "package-lock.json"] {
            std::fs::copy(interop_dir().join(file), dir.join(file)).unwrap();
        }
        run(
            Command::new("npm")
                .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"])
                .current_dir(&dir),
            "installing the official A2A JS SDK from npm",
        );
        std::fs::write(&stamp, lock).expect("stamp");
    }
    let path = dir.join(script);
    std::fs::copy(interop_dir().join(script), &path).unwrap();
    path
}

fn drive(venv_name: &str, script: &str, args: &[&str]) {
    let python = venv(venv_name);
    let mut command = Command::new(python);
    command.arg(interop_dir().join(script));
    run_against_fundi(command, script, args);
}

/// Runs `command SERVER_URL args...` against a fresh server; it must pass every check.
fn run_against_fundi(mut command: Command, script: &str, args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    // The scripts run their webhook receiver on loopback.
    let server = Server::start(
        dir.path(),
        &[("FUNDI__PUSH__ALLOWED_HOSTS", "[\"127.0.0.1\"]")],
    );
    let output = command
        .arg(&server.url)
        .args(args)
        .env("FUNDI_TOKEN", &server.token)
        .env("FUNDI_USER_TOKEN", &server.user_token)
        .output()
        .expect("running the interop script");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "{script} failed:\n{stdout}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&output.stderr),
        std::fs::read_to_string(&server.stderr).unwrap_or_default()
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

#[test]
fn the_official_python_sdk_1x_client_speaks_v1_with_fundi() {
    drive("v1", "a2a_sdk_v1.py", &["JSONRPC"]);
}

#[test]
fn the_official_python_sdk_1x_rest_client_speaks_http_json_with_fundi() {
    drive("v1", "a2a_sdk_v1.py", &["HTTP+JSON"]);
}

#[test]
fn the_official_python_sdk_1x_grpc_client_speaks_grpc_with_fundi() {
    drive("v1", "a2a_sdk_v1.py", &["GRPC"]);
}

/// The official Python SDK's own server (`script` in the virtualenv `venv_name`, with
/// `args`) as a peer of fundi's: a delegation mirrored to its end, and a question
/// answered through fundi.
fn python_sdk_server_as_a_peer(venv_name: &str, script: &str, args: &[&str], data: Value) {
    use std::io::{BufRead, BufReader};
    let python = venv(venv_name);
    let mut peer = Command::new(python)
        .arg(interop_dir().join(script))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("starting the Python SDK server");
    let mut line = String::new();
    BufReader::new(peer.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("the Python SDK server's address");
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the Python SDK server said {line:?}"))
        .to_owned();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        dir.path(),
        &[
            ("FUNDI__PEERS__PY__URL", url.as_str()),
            ("FUNDI__PEERS__PY__ALLOW_PRIVATE_NETWORKS", "true"),
        ],
    );
    let checked = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(delegate_to_python(&server, data));
    let _ = peer.kill();
    let _ = peer.wait();
    if let Err(failed) = checked {
        panic!(
            "{failed}\nserver log:\n{}",
            std::fs::read_to_string(&server.stderr).unwrap_or_default()
        );
    }
}

/// Delegations to the Python peer: one mirrored to its end (its data artifact is
/// `data` as the SDK writes it back), and one whose question is answered through fundi.
async fn delegate_to_python(server: &Server, data: Value) -> Result<(), String> {
    use common::{message, ok, poll_task, state};
    use serde_json::json;
    let delegate = |text: &str, data: serde_json::Value| {
        let mut sent = message(text, json!({"peer": "py", "skill": "shout", "data": data}));
        sent["metadata"] = json!({"skill": "delegate"});
        json!({"message": sent, "configuration": {"returnImmediately": true}})
    };
    let ended = |t: &serde_json::Value| {
        t["status"]["state"]
            .as_str()
            .is_some_and(|s| ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED"].contains(&s))
    };
    let sent = ok(
        server,
        "SendMessage",
        delegate("hello peer", json!({"n": 1})),
    )
    .await;
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    let done = poll_task(server, &id, ended).await;
    let artifacts = &done["artifacts"];
    if state(&done) != "TASK_STATE_COMPLETED"
        || artifacts[0]["parts"][0]["text"] != "HELLO PEER"
        || artifacts[1]["parts"][0]["data"] != data
    {
        return Err(format!(
            "the delegation did not mirror the peer's work: {done}"
        ));
    }

    let sent = ok(
        server,
        "SendMessage",
        delegate("ask", serde_json::Value::Null),
    )
    .await;
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    let asked = poll_task(server, &id, |t| {
        state(t) == "TASK_STATE_INPUT_REQUIRED" || ended(t)
    })
    .await;
    if asked["status"]["message"]["parts"][0]["text"] != "Which colour?" {
        return Err(format!("the peer's question was not asked: {asked}"));
    }
    let mut answer = message("blue", serde_json::Value::Null);
    answer["taskId"] = json!(id);
    ok(
        server,
        "SendMessage",
        json!({"message": answer, "configuration": {"returnImmediately": true}}),
    )
    .await;
    let done = poll_task(server, &id, ended).await;
    if state(&done) != "TASK_STATE_COMPLETED"
        || done["artifacts"][0]["parts"][0]["text"] != "answer: blue"
    {
        return Err(format!("the answer did not reach the peer: {done}"));
    }
    Ok(())
}

// Protobuf's Struct holds every number as a double: 1 comes back as 1.0 from a 1.x SDK.
#[test]
fn the_official_python_sdk_server_is_a_peer_over_json_rpc() {
    let data = serde_json::json!({"n": 1.0});
    python_sdk_server_as_a_peer("v1", "a2a_sdk_peer.py", &["JSONRPC"], data);
}

#[test]
fn the_official_python_sdk_server_is_a_peer_over_http_json() {
    let data = serde_json::json!({"n": 1.0});
    python_sdk_server_as_a_peer("v1", "a2a_sdk_peer.py", &["HTTP+JSON"], data);
}

#[test]
fn the_official_python_sdk_0_3_server_is_a_peer_over_v03_json_rpc() {
    let data = serde_json::json!({"n": 1});
    python_sdk_server_as_a_peer("v03", "a2a_sdk_v03_peer.py", &[], data);
}

#[test]
fn the_official_mcp_python_sdk_delegates_to_a_peer_through_fundi_mcp() {
    let python = venv("mcp");
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // B takes push configs pointing at loopback (never delivered: nothing listens).
    let b = Server::start(
        b_dir.path(),
        &[("FUNDI__PUSH__ALLOWED_HOSTS", "[\"127.0.0.1\"]")],
    );
    let a = Server::start(
        a_dir.path(),
        &[
            ("FUNDI__PEERS__B__URL", b.url.as_str()),
            ("FUNDI__PEERS__B__TOKEN", b.token.as_str()),
            ("FUNDI__PEERS__B__USER_TOKEN", b.user_token.as_str()),
            ("FUNDI__PEERS__B__ALLOW_PRIVATE_NETWORKS", "true"),
        ],
    );
    let output = Command::new(python)
        .arg(interop_dir().join("mcp_peers.py"))
        .args([&a.url, env!("CARGO_BIN_EXE_fundi")])
        .env("FUNDI_TOKEN", &a.token)
        .env("FUNDI_USER_TOKEN", &a.user_token)
        .env_remove("FUNDI__MCP__ALLOW_WRITES")
        .env_remove("FUNDI_CREDENTIALS")
        .output()
        .expect("running the MCP peers script");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains(" passed, 0 failed"),
        "mcp_peers.py failed:\n{stdout}\n{}\nA's log:\n{}",
        String::from_utf8_lossy(&output.stderr),
        std::fs::read_to_string(&a.stderr).unwrap_or_default()
    );
}

#[test]
fn the_official_python_sdk_verifies_fundis_signed_card() {
    drive("v1", "card_signature.py", &[]);
}

#[test]
fn the_official_js_sdk_verifies_fundis_signed_card() {
    let script = npm_project("card_signature.mjs");
    let mut command = Command::new("node");
    command.arg(script);
    run_against_fundi(command, "card_signature.mjs", &[]);
}

#[test]
fn the_official_python_sdk_0_3_client_speaks_v03_with_fundi() {
    drive("v03", "a2a_sdk_v03.py", &["JSONRPC"]);
}

#[test]
fn the_official_python_sdk_0_3_rest_client_speaks_v03_http_json_with_fundi() {
    drive("v03", "a2a_sdk_v03.py", &["HTTP+JSON"]);
}

#[test]
fn the_official_js_sdk_rest_client_speaks_http_json_with_fundi() {
    let script = npm_project("a2a_js_rest.mjs");
    let mut command = Command::new("node");
    command.arg(script);
    run_against_fundi(command, "a2a_js_rest.mjs", &[]);
}

#[test]
fn the_official_mcp_python_sdk_drives_fundi_mcp_and_the_mcp_endpoint() {
    let python = venv("mcp");
    let dir = tempfile::tempdir().unwrap();
    let (alice, alice_user) = (
        "alice-client-token-0123456789",
        "alice-user-token-0123456789",
    );
    let (bob, bob_user) = (
        "bob-client-token-0123456789ab",
        "bob-user-token-0123456789ab",
    );
    let ceiling = "3";
    // An identity provider of the test's own, so that an agent's request for access
    // waits for bob, an approver.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let idp = runtime.block_on(idp::Idp::start());
    let mut env: Vec<(String, String)> = idp.env("acme");
    env.extend(
        [
            ("FUNDI__AUTH__STATIC__CLIENTS__AGENT_A__TOKEN", alice),
            ("FUNDI__AUTH__STATIC__CLIENTS__AGENT_A__SCOPES", "[]"),
            ("FUNDI__AUTH__STATIC__CLIENTS__AGENT_B__TOKEN", bob),
            (
                "FUNDI__AUTH__STATIC__CLIENTS__AGENT_B__SCOPES",
                "[\"fundi:inbox\", \"fundi:approve\"]",
            ),
            ("FUNDI__AUTH__STATIC__USERS__ALICE", alice_user),
            ("FUNDI__AUTH__STATIC__USERS__BOB", bob_user),
            ("FUNDI__SKILLS__ENABLED", "[\"echo\", \"inbox\"]"),
            ("FUNDI__MCP__ALLOW_WRITES", "true"),
            ("FUNDI__MCP__WAIT_CEILING_S", ceiling),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = Server::start(dir.path(), &env);
    let asked = runtime.block_on(async {
        let assertion = idp.sign(&idp.claims("agent-c", &server.url));
        let body = serde_json::json!({
            "card": format!("{}/.well-known/agent-card.json", server.url),
            "scopes": ["fundi:audit"],
            "reason": "nightly audits",
            "assertion": assertion,
        });
        let answer: Value = reqwest::Client::new()
            .post(format!("{}/access-requests", server.url))
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        answer["id"].as_str().expect("a request id").to_owned()
    });
    let output = Command::new(python)
        .arg(interop_dir().join("mcp_client.py"))
        .args([&server.url, env!("CARGO_BIN_EXE_fundi"), ceiling])
        .env("ALICE_TOKEN", alice)
        .env("ALICE_USER_TOKEN", alice_user)
        .env("BOB_TOKEN", bob)
        .env("BOB_USER_TOKEN", bob_user)
        .env("ACCESS_REQUEST", &asked)
        // `fundi mcp` reads its [mcp] settings from the environment too.
        .env("FUNDI__MCP__WAIT_CEILING_S", ceiling)
        .env_remove("FUNDI__MCP__ALLOW_WRITES")
        .env_remove("FUNDI_CREDENTIALS")
        .output()
        .expect("running the MCP interop script");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains(" passed, 0 failed"),
        "mcp_client.py failed:\n{stdout}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&output.stderr),
        std::fs::read_to_string(&server.stderr).unwrap_or_default()
    );
}
