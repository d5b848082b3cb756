//! `fundi mcp` takes the server's address and the credentials from the config file's
//! `[mcp]` when neither flags nor environment give them: a client that starts it with
//! only `--config` reaches the server.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use common::*;
use serde_json::{Value, json};

#[test]
fn fundi_mcp_reads_its_server_and_credentials_from_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let config = dir.path().join("mcp.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp]\nurl = {:?}\ntoken = {:?}\nuser-token = {:?}\n",
            server.url, server.token, server.user_token
        ),
    )
    .unwrap();
    let mut mcp = Command::new(env!("CARGO_BIN_EXE_fundi"))
        .args(["mcp", "--config"])
        .arg(&config)
        .current_dir(dir.path())
        .env_remove("FUNDI_URL")
        .env_remove("FUNDI_TOKEN")
        .env_remove("FUNDI_USER_TOKEN")
        .env_remove("FUNDI_CREDENTIALS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("fundi mcp");
    let mut stdin = mcp.stdin.take().unwrap();
    let mut lines = BufReader::new(mcp.stdout.take().unwrap()).lines();
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}),
    );
    let mut answer = |id: u64| -> Value {
        for line in lines.by_ref() {
            let message: Value = serde_json::from_str(&line.unwrap()).unwrap();
            if message["id"] == id {
                return message;
            }
        }
        panic!("fundi mcp closed before answering {id}");
    };
    let initialized = answer(1);
    assert!(
        initialized["result"]["capabilities"]["tools"].is_object(),
        "{initialized}"
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "fundi_list_tasks", "arguments": {}}}));
    let listed = answer(2);
    let result = &listed["result"];
    assert_ne!(result["isError"], json!(true), "{listed}");
    assert_eq!(result["content"][0]["text"], "no tasks", "{listed}");
    let _ = mcp.kill();
    let _ = mcp.wait();
}
