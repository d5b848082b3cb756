//! The real `fundi` binary as a child process, and a JSON-RPC client for it.
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Longest a test waits for anything before failing.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// The static credentials of the nodes `cluster_node` starts.
pub const CLUSTER_AGENT_TOKEN: &str = "cluster-agent-token-0123456789";
pub const CLUSTER_USER_TOKEN: &str = "cluster-alice-token-0123456789";

/// Node `id` of several on the PostgreSQL schema `schema` (leases of 2 s), with the
/// static credentials above, webhooks on 127.0.0.1 allowed, and the `extra` settings.
pub fn cluster_node(dir: &Path, schema: &str, id: &str, extra: &[(&str, &str)]) -> Server {
    let url = fundi_postgres::testing::test_url();
    let mut env = vec![
        ("FUNDI__STORE__KIND", "postgres"),
        ("FUNDI__STORE__POSTGRES__URL", url.as_str()),
        ("FUNDI__STORE__POSTGRES__SCHEMA", schema),
        ("FUNDI__STORE__POSTGRES__NODE_ID", id),
        ("FUNDI__STORE__POSTGRES__LEASE_TIME", "2s"),
        (
            "FUNDI__AUTH__STATIC__CLIENTS__AGENT__TOKEN",
            CLUSTER_AGENT_TOKEN,
        ),
        ("FUNDI__AUTH__STATIC__USERS__ALICE", CLUSTER_USER_TOKEN),
        ("FUNDI__PUSH__ALLOWED_HOSTS", "[\"127.0.0.1\"]"),
    ];
    env.extend_from_slice(extra);
    let mut server = Server::start(dir, &env);
    (server.token, server.user_token) = (CLUSTER_AGENT_TOKEN.into(), CLUSTER_USER_TOKEN.into());
    server
}

/// A running `fundi serve` on 127.0.0.1:0 with its own data directory.
pub struct Server {
    child: Child,
    pub url: String,
    pub stderr: PathBuf,
    /// The bearer token and user token from the credentials file the server wrote.
    pub token: String,
    pub user_token: String,
    /// That file.
    pub credentials: PathBuf,
    /// What the server printed on stdout up to and with its "listening" line.
    pub banner: Vec<String>,
    /// The lines it prints after that.
    later: mpsc::Receiver<String>,
}

impl Server {
    /// Starts the binary with the repository's config file, `--data-dir dir`, and extra
    /// environment variables; returns once it prints the address it listens on.
    pub fn start(dir: &Path, env: &[(&str, &str)]) -> Server {
        Server::start_bound(dir, "127.0.0.1:0", env)
    }

    /// [`Server::start`] listening at `bind` (a restart at the same address).
    pub fn start_bound(dir: &Path, bind: &str, env: &[(&str, &str)]) -> Server {
        let (child, stderr, lines) = spawn(dir, &["--bind", bind], env);
        let deadline = Instant::now() + DEADLINE;
        let mut banner = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => {
                    banner.push(line.clone());
                    if let Some(url) = line.strip_prefix("fundi listening on ") {
                        let credentials = dir.join("data").join("credentials.json");
                        // Absent when the test configures tokens itself.
                        let file: Value = std::fs::read_to_string(&credentials)
                            .map(|text| serde_json::from_str(&text).expect("credentials JSON"))
                            .unwrap_or_default();
                        return Server {
                            child,
                            url: url.trim().to_owned(),
                            stderr,
                            token: file["token"].as_str().unwrap_or_default().to_owned(),
                            user_token: file["userToken"].as_str().unwrap_or_default().to_owned(),
                            credentials,
                            banner,
                            later: lines,
                        };
                    }
                }
                Err(_) => panic!(
                    "fundi did not start: {}",
                    std::fs::read_to_string(&stderr).unwrap_or_default()
                ),
            }
        }
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill(mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait");
    }

    /// SIGTERM, then the exit status (within the deadline).
    pub fn terminate(mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill -TERM");
        assert!(sent.success());
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "fundi did not exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The next line the server prints on stdout that starts with `prefix` (within the
    /// deadline).
    pub fn printed(&self, prefix: &str) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.later.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => {}
                Err(_) => panic!("fundi printed no line starting with {prefix:?}"),
            }
        }
    }

    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A field of the server process's `/proc` status (Linux), trimmed.
    pub fn proc_status(&self, field: &str) -> String {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("the server's /proc status");
        let prefix = format!("{field}:");
        status
            .lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("{field} in /proc status"))
            .trim()
            .to_owned()
    }

    /// The server process's resident memory, in bytes (Linux).
    pub fn rss_bytes(&self) -> u64 {
        let rss = self.proc_status("VmRSS");
        let kib: u64 = rss
            .trim_end_matches("kB")
            .trim()
            .parse()
            .expect("VmRSS in kB");
        kib * 1024
    }

    /// How many file descriptors the server process holds open (Linux).
    pub fn open_descriptors(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .expect("the server's /proc fd")
            .count()
    }

    /// The server's `/metrics`, in the Prometheus text format.
    pub async fn metrics(&self) -> String {
        reqwest::get(format!("{}/metrics", self.url))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// The value of the first series of metric `name` in `/metrics`.
    pub async fn gauge(&self, name: &str) -> f64 {
        let text = self.metrics().await;
        text.lines()
            .filter(|l| {
                l.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with(['{', ' ']))
            })
            .find_map(|l| l.split_whitespace().last()?.parse().ok())
            .unwrap_or_else(|| panic!("{name} is not in /metrics"))
    }

    pub fn rpc_url(&self) -> String {
        format!("{}/a2a", self.url)
    }

    /// A GET of `path` with both credentials.
    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        reqwest::Client::new()
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .header("X-Fundi-User-Token", &self.user_token)
    }

    /// A POST to the JSON-RPC endpoint with both credentials.
    pub fn post(&self) -> reqwest::RequestBuilder {
        self.post_to("/a2a")
    }

    /// A POST to `path` with both credentials.
    pub fn post_to(&self, path: &str) -> reqwest::RequestBuilder {
        reqwest::Client::new()
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .header("X-Fundi-User-Token", &self.user_token)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `fundi serve` expecting it to fail; returns its exit status and stderr.
pub fn start_failing(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (ExitStatus, String) {
    // The lines are read (and dropped) until it exits: its stdout stays open.
    let (mut child, stderr, _lines) = spawn(dir, args, env);
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("fundi kept running");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, std::fs::read_to_string(stderr).unwrap_or_default())
}

fn spawn(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Child, PathBuf, mpsc::Receiver<String>) {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/fundi.toml");
    let stderr = dir.join(format!("stderr-{}.log", unique()));
    let mut command = Command::new(env!("CARGO_BIN_EXE_fundi"));
    command
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).expect("stderr file"));
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("spawn fundi");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, stderr, rx)
}

fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

/// Runs the CLI against `server` with its own credentials: whether it succeeded, and
/// its standard output followed by its standard error.
pub fn cli(server: &Server, args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_fundi"))
        .args(args)
        .env("FUNDI_URL", &server.url)
        .env("FUNDI_TOKEN", &server.token)
        .env("FUNDI_USER_TOKEN", &server.user_token)
        .output()
        .expect("run fundi");
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}

/// A JSON-RPC request body.
pub fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": "req-1", "method": method, "params": params})
}

/// POSTs a JSON-RPC request with these credentials (a client's bearer token, a user's
/// token) and returns the whole response object.
pub async fn rpc_with(
    server: &Server,
    token: &str,
    user: &str,
    method: &str,
    params: Value,
) -> Value {
    reqwest::Client::new()
        .post(server.rpc_url())
        .bearer_auth(token)
        .header("X-Fundi-User-Token", user)
        .header("A2A-Version", "1.0")
        .json(&request(method, params))
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json body")
}

/// Any route called with these credentials; its JSON answer.
pub async fn call_with(method: reqwest::Method, url: &str, token: &str, user: &str) -> Value {
    reqwest::Client::new()
        .request(method, url)
        .bearer_auth(token)
        .header("X-Fundi-User-Token", user)
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json body")
}

/// POSTs a JSON-RPC request and returns the whole response object.
pub async fn rpc(server: &Server, method: &str, params: Value) -> Value {
    let response = server
        .post()
        .header("A2A-Version", "1.0")
        .json(&request(method, params))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);
    response.json().await.expect("json body")
}

/// The `result` of a call that must succeed.
pub async fn ok(server: &Server, method: &str, params: Value) -> Value {
    let response = rpc(server, method, params).await;
    match response.get("result") {
        Some(result) => result.clone(),
        None => panic!("{method} failed: {response}"),
    }
}

/// A user message with text and an optional data part.
pub fn message(text: &str, data: Value) -> Value {
    let mut parts = vec![json!({"text": text})];
    if !data.is_null() {
        parts.push(json!({"data": data}));
    }
    json!({"messageId": format!("m-{}", unique()), "role": "ROLE_USER", "parts": parts})
}

/// Polls GetTask until `done` holds for the task (or the deadline passes).
pub async fn poll_task(server: &Server, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let task = ok(server, "GetTask", json!({"id": id})).await;
        if done(&task) {
            return task;
        }
        assert!(
            Instant::now() < deadline,
            "task {id} never got there: {task}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The agent card the server publishes at its well-known address.
pub async fn agent_card(server: &Server) -> Value {
    let url = format!("{}/.well-known/agent-card.json", server.url);
    let response = reqwest::get(url).await.expect("card request");
    response.json().await.expect("card JSON")
}

/// The card's entry for skill `id`.
pub fn card_skill<'a>(card: &'a Value, id: &str) -> &'a Value {
    let skills = card["skills"].as_array().expect("skills on the card");
    let skill = skills.iter().find(|s| s["id"] == id);
    skill.unwrap_or_else(|| panic!("{id} is not on the card: {card}"))
}

pub fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or("")
}

/// Reads an SSE response to its end: the `(id, data)` of every event.
pub async fn read_sse(response: reqwest::Response) -> Vec<(Option<u64>, Value)> {
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let text = tokio::time::timeout(DEADLINE, response.text())
        .await
        .expect("stream did not end")
        .expect("stream body");
    parse_sse(&text)
}

pub fn parse_sse(text: &str) -> Vec<(Option<u64>, Value)> {
    text.split("\n\n")
        .filter_map(|frame| {
            let mut id = None;
            let mut data = None;
            for line in frame.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.parse().ok();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = Some(serde_json::from_str(v).expect("data is one JSON line"));
                }
            }
            data.map(|d| (id, d))
        })
        .collect()
}

/// Every stored event of a task after event `after`, through SubscribeToTask with
/// `Last-Event-ID`: each SSE id with its JSON-RPC response.
pub async fn task_events(server: &Server, id: &str, after: u64) -> Vec<(u64, Value)> {
    let response = server
        .post()
        .header("Last-Event-ID", after.to_string())
        .json(&request("SubscribeToTask", json!({"id": id})))
        .send()
        .await
        .unwrap();
    read_sse(response)
        .await
        .into_iter()
        .map(|(seq, data)| (seq.expect("every event has an id"), data))
        .collect()
}

/// What a webhook received: the `X-Fundi-Event-Seq` and body of every request.
pub type Hits = std::sync::Arc<std::sync::Mutex<Vec<(u64, Value)>>>;

/// A webhook on 127.0.0.1 (its URL) that records every push, answering after `delay`.
pub async fn webhook(delay: Duration) -> (String, Hits) {
    use axum::http::HeaderMap;
    let hits = Hits::default();
    let router = axum::Router::new().route(
        "/hook",
        axum::routing::post({
            let hits = hits.clone();
            move |headers: HeaderMap, body: String| {
                let hits = hits.clone();
                async move {
                    let seq = headers["x-fundi-event-seq"]
                        .to_str()
                        .unwrap()
                        .parse()
                        .unwrap();
                    hits.lock()
                        .unwrap()
                        .push((seq, serde_json::from_str(&body).unwrap()));
                    tokio::time::sleep(delay).await;
                    "ok"
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, hits)
}

/// The event numbers of task `id`'s pushes the webhook received, in arrival order.
pub fn pushed_seqs(hits: &Hits, id: &str) -> Vec<u64> {
    hits.lock()
        .unwrap()
        .iter()
        .filter(|(_, body)| pushed_task(body) == id)
        .map(|(seq, _)| *seq)
        .collect()
}

/// The task a push is about.
pub fn pushed_task(body: &Value) -> &str {
    ["statusUpdate", "artifactUpdate", "task"]
        .iter()
        .find_map(|k| body[*k]["taskId"].as_str().or(body[*k]["id"].as_str()))
        .unwrap_or_default()
}
