//! Three `fundi serve` nodes on one PostgreSQL schema, each reaching the database
//! through a fault proxy of its own (chaos-run's proxy, `fundi_skills::chaos::FaultProxy`),
//! under load (slow echo tasks, a stream, push configs, a schedule), with faults in
//! turn: one node's link down for twice the lease; a second of latency on every link;
//! every link reset; the database "restarting" (every connection cut at once); one node
//! frozen (SIGSTOP) for twice the lease. Checked from the skill's side, through echo's
//! step log: every acknowledged task ends, no step of a task runs on two nodes at once
//! and none is stored twice; pushes arrive in order; the schedule fires once per due
//! time; a node cut off answers 503 with `Retry-After` and `GET /health` 503 until it
//! holds the database again. Fails, never skips, when PostgreSQL is missing. With
//! `FUNDI_TEST_KEEP=<dir>`, the step log and the nodes' logs are copied there.

mod common;
#[path = "cluster_faults/steps.rs"]
mod steps;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::*;
use fundi_postgres::testing::{drop_schemas, fresh_schema, test_url};
use fundi_skills::chaos::FaultProxy;
use serde_json::{Value, json};
use steps::{each_step_once_at_a_time, step_log};

const AGENT_TOKEN: &str = "faults-agent-token-0123456789";
const USER_TOKEN: &str = "faults-alice-token-0123456789";
/// The lease of every node (its renew deadline: two thirds of it).
const LEASE: Duration = Duration::from_secs(2);
/// Steps of each echo task, `DELAY_MS` apart, each stored before the next.
const STEPS: u64 = 25;
const DELAY_MS: u64 = 100;
/// Longest the test waits for the cluster to settle after a fault.
const SETTLE: Duration = Duration::from_secs(60);

/// The proxy's phases: a link as it is, refused, slow, or reset.
fn phases() -> Value {
    json!([
        {"name": "clean", "durationMs": 1000},
        {"name": "down", "durationMs": 1000, "faults": [{"type": "down"}]},
        {"name": "latency", "durationMs": 1000, "faults": [
            {"type": "latency", "stream": "downstream", "attributes": {"latency": 1000}}]},
        {"name": "reset", "durationMs": 1000, "faults": [
            {"type": "reset_peer", "attributes": {"timeout": 0}}]},
    ])
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The database URL through `proxy`, and the database's own address.
fn through(proxy: Option<&FaultProxy>) -> (String, String) {
    let mut url = reqwest::Url::parse(&test_url()).expect("FUNDI_TEST_POSTGRES_URL is a URL");
    let target = format!(
        "{}:{}",
        url.host_str().unwrap_or("127.0.0.1"),
        url.port().unwrap_or(5432)
    );
    if let Some(proxy) = proxy {
        let address = proxy.address();
        url.set_host(Some(&address.ip().to_string())).unwrap();
        url.set_port(Some(address.port())).unwrap();
    }
    (url.to_string(), target)
}

fn node(dir: &Path, schema: &str, id: &str, proxy: &FaultProxy, step_log: &Path) -> Server {
    let (url, _) = through(Some(proxy));
    let lease = format!("{}s", LEASE.as_secs());
    let env = [
        ("FUNDI__STORE__KIND", "postgres"),
        ("FUNDI__STORE__POSTGRES__URL", url.as_str()),
        ("FUNDI__STORE__POSTGRES__SCHEMA", schema),
        ("FUNDI__STORE__POSTGRES__NODE_ID", id),
        ("FUNDI__STORE__POSTGRES__LEASE_TIME", lease.as_str()),
        ("FUNDI__AUTH__STATIC__CLIENTS__AGENT__TOKEN", AGENT_TOKEN),
        (
            "FUNDI__AUTH__STATIC__CLIENTS__AGENT__SCOPES",
            "[\"fundi:admin\"]",
        ),
        ("FUNDI__AUTH__STATIC__USERS__ALICE", USER_TOKEN),
        ("FUNDI__PUSH__ALLOWED_HOSTS", "[\"127.0.0.1\"]"),
        ("FUNDI__PUSH__INITIAL_BACKOFF_MS", "20"),
        ("FUNDI__PUSH__MAX_BACKOFF_MS", "200"),
        ("FUNDI__SKILLS__ECHO__STEP_LOG", step_log.to_str().unwrap()),
    ];
    let mut server = Server::start(dir, &env);
    (server.token, server.user_token) = (AGENT_TOKEN.into(), USER_TOKEN.into());
    server
}

/// Every link into the phase named `phase`.
fn enter_all(proxies: &[FaultProxy], phase: &str) {
    for proxy in proxies {
        proxy.enter(phase).unwrap();
    }
}

/// A JSON-RPC call answered by the first node that has the database (a node cut off
/// answers 503: the client turns to another, as a load balancer would).
async fn call_any(nodes: &[Server], method: &str, params: Value) -> Value {
    let deadline = Instant::now() + SETTLE;
    loop {
        for server in nodes {
            let sent = server
                .post()
                .header("A2A-Version", "1.0")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
                .timeout(Duration::from_secs(10))
                .send()
                .await;
            let Ok(response) = sent else { continue };
            if response.status() != 200 {
                continue;
            }
            let body: Value = response.json().await.unwrap();
            if let Some(result) = body.get("result") {
                return result.clone();
            }
            // A store error while the database comes and goes: tried again.
            assert_eq!(body["error"]["code"], json!(-32603), "{method}: {body}");
        }
        assert!(
            Instant::now() < deadline,
            "no node answered {method} {params}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts a slow echo task pushed to `hook`, on whichever node takes it; its id.
async fn start_task(nodes: &[Server], hook: &str) -> String {
    let data = json!({"steps": STEPS, "delayMs": DELAY_MS, "waitEachStep": true});
    let sent = call_any(
        nodes,
        "SendMessage",
        json!({"message": message("counted", data),
               "configuration": {"returnImmediately": true,
                                 "taskPushNotificationConfig": {"url": hook, "id": "hook"}}}),
    )
    .await;
    sent["task"]["id"].as_str().unwrap().to_owned()
}

/// Four more slow tasks spread over the nodes, and a streamed one.
async fn batch(nodes: &[Server], hook: &str, tasks: &mut Vec<String>) {
    for _ in 0..4 {
        tasks.push(start_task(nodes, hook).await);
    }
    stream_one(&nodes[tasks.len() % 3]);
}

/// A streamed task on `server`, read to its end (or until the stream breaks) in the
/// background: load, not a check.
fn stream_one(server: &Server) {
    let request = server.post().header("A2A-Version", "1.0").json(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": {"message": message("streamed", json!({"steps": 40, "delayMs": 50}))}}));
    tokio::spawn(async move {
        if let Ok(response) = request.send().await {
            let _ = response.text().await;
        }
    });
}

async fn health(server: &Server) -> Option<u16> {
    let response = reqwest::Client::new()
        .get(format!("{}/health", server.url))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .ok()?;
    Some(response.status().as_u16())
}

/// Waits until `server`'s `/health` answers `status`.
async fn health_becomes(server: &Server, status: u16, why: &str) {
    let deadline = Instant::now() + SETTLE;
    while health(server).await != Some(status) {
        assert!(
            Instant::now() < deadline,
            "{why}: /health never answered {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every node holds the database again.
async fn all_healthy(nodes: &[Server]) {
    for server in nodes {
        health_becomes(server, 200, "a node never held the database again").await;
    }
}

/// A node cut off answers every binding with 503 and `Retry-After`.
async fn refuses_while_cut_off(server: &Server) {
    let sent = server
        .post()
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}))
        .send()
        .await
        .unwrap();
    let rest = server.get("/tasks/x").send().await.unwrap();
    for response in [sent, rest] {
        assert_eq!(response.status(), 503);
        assert!(response.headers().contains_key("retry-after"));
        let body = response.text().await.unwrap();
        assert!(body.contains("lost the database"), "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_survive_database_faults_and_a_pause_running_each_step_once_at_a_time() {
    let schema = fresh_schema();
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let logs = tempfile::tempdir().unwrap();
    let step_log_path = logs.path().join("steps.log");
    let (_, database) = through(None);
    let mut proxies = Vec::new();
    for _ in 0..3 {
        proxies.push(FaultProxy::start(&database, phases()).await.unwrap());
    }
    let nodes: Vec<Server> = (0..3)
        .map(|i| {
            let id = format!("n{}", i + 1);
            node(dirs[i].path(), &schema, &id, &proxies[i], &step_log_path)
        })
        .collect();
    let (hook, deliveries) = webhook(Duration::ZERO).await;

    // A schedule firing every two seconds, on whichever node takes each firing.
    let schedules = format!("{}/admin/schedules", nodes[0].url);
    let created = reqwest::Client::new()
        .post(&schedules)
        .bearer_auth(AGENT_TOKEN)
        .header("X-Fundi-User-Token", USER_TOKEN)
        .json(&json!({"skill": "echo", "cron": "*/2 * * * * *", "text": "tick"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201, "{}", created.text().await.unwrap());

    let mut tasks = Vec::new();

    // 1. Node 1's link down for twice the lease: it cuts itself off (503 everywhere,
    //    /health too) before its leases run out, and holds the database again after.
    //    (Each fault lasts a set time: the sleeps below are the faults' lengths.)
    batch(&nodes, &hook, &mut tasks).await;
    proxies[0].enter("down").unwrap();
    health_becomes(&nodes[0], 503, "node 1 never cut itself off").await;
    refuses_while_cut_off(&nodes[0]).await;
    tokio::time::sleep(LEASE * 2).await;
    proxies[0].enter("clean").unwrap();
    all_healthy(&nodes).await;

    // 2. A second of latency on every link.
    batch(&nodes, &hook, &mut tasks).await;
    enter_all(&proxies, "latency");
    tokio::time::sleep(LEASE * 2).await;
    enter_all(&proxies, "clean");
    all_healthy(&nodes).await;

    // 3. Every link reset.
    batch(&nodes, &hook, &mut tasks).await;
    enter_all(&proxies, "reset");
    tokio::time::sleep(LEASE).await;
    enter_all(&proxies, "clean");
    all_healthy(&nodes).await;

    // 4. The database restarts: every connection cut at once, none opened for a while.
    batch(&nodes, &hook, &mut tasks).await;
    enter_all(&proxies, "down");
    tokio::time::sleep(LEASE / 2).await;
    enter_all(&proxies, "clean");
    all_healthy(&nodes).await;

    // 5. Node 2 frozen for twice the lease, then woken.
    batch(&nodes, &hook, &mut tasks).await;
    let frozen = nodes[1].pid();
    let signal = |name: &str| {
        let sent = std::process::Command::new("kill")
            .args([name, &frozen.to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill {name}");
    };
    signal("-STOP");
    // Read once it is stopped: whatever it logged before this, it did before it froze.
    let froze_at = now_ms();
    tokio::time::sleep(LEASE * 2).await;
    signal("-CONT");
    all_healthy(&nodes).await;
    let faults_over = now_ms();

    // Every acknowledged task ends completed.
    for id in &tasks {
        let deadline = Instant::now() + SETTLE;
        loop {
            let task = call_any(&nodes, "GetTask", json!({"id": id})).await;
            if state(&task) == "TASK_STATE_COMPLETED" {
                break;
            }
            assert!(
                !state(&task).is_empty()
                    && !["TASK_STATE_FAILED", "TASK_STATE_CANCELED"].contains(&state(&task)),
                "task {id} ended {task}"
            );
            assert!(Instant::now() < deadline, "task {id} never ended: {task}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    // No step ran on two nodes at once, none was stored twice, and every step of every
    // task ran.
    let lines = step_log(&step_log_path);
    if let Ok(keep) = std::env::var("FUNDI_TEST_KEEP") {
        std::fs::copy(&step_log_path, format!("{keep}/steps.log")).unwrap();
        for (i, n) in nodes.iter().enumerate() {
            std::fs::copy(&n.stderr, format!("{keep}/n{}-{}.log", i + 1, n.pid())).unwrap();
        }
    }
    each_step_once_at_a_time(&lines, (frozen, froze_at));
    for id in &tasks {
        let ran: BTreeSet<u64> = lines
            .iter()
            .filter(|l| &l.task == id && l.what == "start")
            .map(|l| l.step)
            .collect();
        assert_eq!(
            ran,
            (1..=STEPS).collect::<BTreeSet<_>>(),
            "task {id} ran every step"
        );
    }
    let pids: BTreeSet<u32> = lines.iter().map(|l| l.pid).collect();
    assert!(pids.len() >= 2, "the work was spread: {pids:?}");

    // Every told event was pushed, and each task's pushes arrive in order (a repeat,
    // after a delivery moved between nodes, is allowed: at least once).
    for id in &tasks {
        let told: BTreeSet<u64> = task_events(&nodes[2], id, 0)
            .await
            .into_iter()
            .map(|(seq, _)| seq)
            .collect();
        let deadline = Instant::now() + SETTLE;
        loop {
            let arrived = pushed_seqs(&deliveries, id);
            let mut firsts = Vec::new();
            for seq in &arrived {
                if !firsts.contains(seq) {
                    firsts.push(*seq);
                }
            }
            assert!(
                firsts.windows(2).all(|w| w[0] < w[1]),
                "task {id}: pushes out of order: {arrived:?}"
            );
            if told.iter().all(|seq| firsts.contains(seq)) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "task {id}: events {told:?} were not all pushed: {arrived:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    // The schedule fired once per due time, and still fires after the faults.
    let deadline = Instant::now() + SETTLE;
    loop {
        let listed = call_any(
            &nodes,
            "ListTasks",
            json!({"pageSize": 100, "historyLength": 10}),
        )
        .await;
        let mut dues: BTreeMap<String, usize> = BTreeMap::new();
        for task in listed["tasks"].as_array().unwrap() {
            let history = task["history"].as_array().cloned().unwrap_or_default();
            let due = history
                .iter()
                .find_map(|m| m["metadata"]["schedule"]["due"].as_str());
            if let Some(due) = due {
                *dues.entry(due.to_owned()).or_default() += 1;
            }
        }
        let twice: Vec<_> = dues.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "firings made two tasks: {twice:?}");
        let after = dues.keys().any(|due| {
            chrono::DateTime::parse_from_rfc3339(due)
                .is_ok_and(|at| at.timestamp_millis() as u64 > faults_over)
        });
        if after {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the schedule stopped firing: {dues:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    drop(nodes);
    for proxy in proxies {
        proxy.shutdown().await;
    }
    drop_schemas(&[schema]).await;
}
