//! chaos-run through the real binary: a run waits for its approver, then proxies an
//! upstream with its faults; the chaos-event log answers at `/admin/chaos-events` and to
//! `fundi chaos-events`, and the events are counted apart in the metrics; a SIGKILL
//! mid-run leaves no listener, and after the restart the task is `failed` with the
//! reason and its events are still there.

mod common;

use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use common::*;
use serde_json::{Value, json};

/// An HTTP upstream in the test process that answers "ok".
async fn upstream() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().route("/", get(|| async { "ok" }));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

async fn admin_get(server: &Server, path: &str) -> (u16, Value) {
    let response = server.get(path).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn proxy_of(task: &Value) -> Option<String> {
    let artifacts = task["artifacts"].as_array()?;
    let proxy = artifacts
        .iter()
        .find(|a| a["artifactId"] == "chaos-proxy")?;
    proxy["parts"][0]["data"]["listen"]
        .as_str()
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_run_proxies_with_its_faults_and_a_kill_leaves_it_failed_and_closed() {
    let upstream = upstream().await;
    let target = format!("http://{upstream}");
    let dir = tempfile::tempdir().unwrap();
    let allowed = format!("[\"{target}\"]");
    let env = [(
        "FUNDI__SKILLS__CHAOS_RUN__ALLOWED_TARGETS",
        allowed.as_str(),
    )];
    let server = Server::start(dir.path(), &env);
    assert!(
        card_skill(&agent_card(&server).await, "chaos-run")["description"]
            .as_str()
            .unwrap()
            .contains("Toxiproxy"),
    );

    // A plan the skill refuses is refused at once, naming the field; nothing waits.
    let mut bad = message(
        "chaos",
        json!({"target": target, "plan": [{"durationMs": 5}]}),
    );
    bad["metadata"] = json!({"skill": "chaos-run"});
    let refused = rpc(&server, "SendMessage", json!({"message": bad})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let text = refused["error"]["message"].as_str().unwrap();
    assert!(text.contains("data.plan[0].durationMs"), "{text}");
    // Nor may its proxy take this server's own address, or a privileged port.
    let own = server.url.trim_start_matches("http://").to_owned();
    for (listen, says) in [
        (own.as_str(), "where this fundi server itself listens"),
        ("127.0.0.1:80", "skills.chaos-run.listen-ports"),
    ] {
        let plan = json!({"target": target, "listen": listen,
            "plan": [{"name": "p", "durationMs": 1000, "faults": []}]});
        let mut taken = message("chaos", plan);
        taken["metadata"] = json!({"skill": "chaos-run"});
        let refused = rpc(&server, "SendMessage", json!({"message": taken})).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        let text = refused["error"]["message"].as_str().unwrap();
        assert!(text.contains(says), "{text}");
    }

    let plan = json!({"target": target, "plan": [{"name": "slow", "durationMs": 60000,
        "faults": [{"type": "latency", "attributes": {"latency": 200}}]}]});
    let mut ask = message("chaos", plan);
    ask["metadata"] = json!({"skill": "chaos-run", "reason": "resilience drill"});
    let answer = ok(&server, "SendMessage", json!({"message": ask})).await;
    let id = answer["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        state(&answer["task"]),
        "TASK_STATE_SUBMITTED",
        "gated: {answer}"
    );
    assert!(
        proxy_of(&answer["task"]).is_none(),
        "nothing listens before approval"
    );
    let (approved, out) = cli(&server, &["approve", &id]);
    assert!(approved, "{out}");

    let task = poll_task(&server, &id, |t| proxy_of(t).is_some()).await;
    assert_eq!(state(&task), "TASK_STATE_WORKING");
    let proxy = proxy_of(&task).unwrap();
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    for _ in 0..2 {
        let started = Instant::now();
        let body = client
            .get(format!("http://{proxy}/"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(body, "ok");
        assert!(started.elapsed() >= Duration::from_millis(200));
    }

    // The log, over HTTP and from the CLI; polled, as events are written in batches.
    let deadline = Instant::now() + DEADLINE;
    let events = loop {
        let (status, body) = admin_get(&server, &format!("/admin/chaos-events?task={id}")).await;
        assert_eq!(status, 200, "{body}");
        let events = body["events"].as_array().cloned().unwrap_or_default();
        if events.len() == 2 {
            break events;
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert_eq!(events[0]["fault"], "latency");
    assert_eq!(events[0]["phase"], "slow");
    assert_eq!(events[1]["connection"], 2);
    let (status, body) = admin_get(&server, "/admin/chaos-events").await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("task"), "{body}");
    let (status, body) =
        admin_get(&server, &format!("/admin/chaos-events?task={id}&limit=all")).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("limit must be a whole number"),
        "{body}"
    );
    let (_, body) = admin_get(&server, &format!("/admin/chaos-events?task={id}&after=1")).await;
    assert_eq!(body["events"][0]["seq"], 2, "paged: {body}");
    let (listed, out) = cli(&server, &["chaos-events", &id]);
    assert!(listed, "{out}");
    assert!(
        out.contains("slow: latency downstream on connection 1"),
        "{out}"
    );

    let metrics = server.metrics().await;
    let chaos: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("fundi_chaos_events") && l.contains("latency"))
        .collect();
    assert!(!chaos.is_empty(), "counted apart: {metrics}");

    // A SIGKILL: nothing of the proxy outlives the process, and the restart ends the
    // run failed (a chaos run is not resumed).
    let (token, user_token) = (server.token.clone(), server.user_token.clone());
    server.kill();
    let refused = tokio::net::TcpStream::connect(&proxy).await.unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    let mut server = Server::start(dir.path(), &env);
    (server.token, server.user_token) = (token, user_token);
    let task = poll_task(&server, &id, |t| state(t) == "TASK_STATE_FAILED").await;
    let why = task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(why.contains("interrupted by restart"), "{why}");
    let (_, body) = admin_get(&server, &format!("/admin/chaos-events?task={id}")).await;
    assert_eq!(
        body["events"].as_array().map(Vec::len),
        Some(2),
        "kept: {body}"
    );
}
