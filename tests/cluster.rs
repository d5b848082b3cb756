//! Three `fundi serve` nodes on one PostgreSQL schema (`store.postgres.node-id`), load
//! spread across them, one SIGKILLed mid-run: no acknowledged task lost, none stuck,
//! none run on two nodes at once, and its push deliveries completed by another node.
//! Any node answers for any task: a cancel sent to one node stops the run on another,
//! and a subscriber on one node follows a task running on another, resuming with
//! `Last-Event-ID` on a third. `fundi doctor` reads who holds what while they run.
//! Fails, never skips, when PostgreSQL is missing.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::*;
use fundi_postgres::testing::{drop_schemas, fresh_schema, test_url};
use serde_json::{Value, json};

fn node(dir: &std::path::Path, schema: &str, id: &str) -> Server {
    let backoff = [
        ("FUNDI__PUSH__INITIAL_BACKOFF_MS", "20"),
        ("FUNDI__PUSH__MAX_BACKOFF_MS", "200"),
    ];
    cluster_node(dir, schema, id, &backoff)
}

/// Starts an echo task of `steps` on `server`, pushed to `hook`; its id.
async fn start(server: &Server, steps: u64, hook: Option<&str>) -> String {
    let mut configuration = json!({"returnImmediately": true});
    if let Some(url) = hook {
        configuration["taskPushNotificationConfig"] = json!({"url": url, "id": "hook"});
    }
    let data = json!({"steps": steps, "delayMs": 60});
    let sent = ok(
        server,
        "SendMessage",
        json!({"message": message("counted", data), "configuration": configuration}),
    )
    .await;
    sent["task"]["id"].as_str().unwrap().to_owned()
}

/// The step numbers of a task's "step k" notes, in order.
fn steps(events: &[(u64, Value)]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|(_, e)| {
            let text =
                e["result"]["statusUpdate"]["status"]["message"]["parts"][0]["text"].as_str()?;
            text.strip_prefix("step ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

fn ids(events: &[(u64, Value)]) -> Vec<u64> {
    events.iter().map(|(seq, _)| *seq).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_share_the_work_and_survive_one_killed_mid_run() {
    let schema = fresh_schema();
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let n1 = node(dirs[0].path(), &schema, "n1");
    let n2 = node(dirs[1].path(), &schema, "n2");
    let n3 = node(dirs[2].path(), &schema, "n3");
    assert!(
        n1.banner
            .iter()
            .any(|l| l.contains("as node n1 of several")),
        "{:?}",
        n1.banner
    );
    let (hook, deliveries) = webhook(Duration::ZERO).await;

    // Load spread across the nodes, each task pushed to the webhook.
    let mut tasks = Vec::new();
    for server in [&n1, &n2, &n3, &n1, &n2, &n3, &n1, &n2, &n3] {
        tasks.push(start(server, 30, Some(&hook)).await);
    }
    let long = start(&n2, 1_000, None).await;
    let followed = start(&n2, 40, None).await;

    // Node 1 dies while its tasks run and their deliveries go on.
    for id in [&tasks[0], &tasks[3], &tasks[6]] {
        poll_task(&n1, id, |t| {
            t["status"]["message"]["parts"][0]["text"]
                .as_str()
                .is_some_and(|text| text.starts_with("step "))
        })
        .await;
    }
    n1.kill();

    // The doctor, reading the schema while the nodes run, says who holds what.
    let url = test_url();
    let doctor = std::process::Command::new(env!("CARGO_BIN_EXE_fundi"))
        .arg("doctor")
        .arg("--config")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/fundi.toml"))
        .env("FUNDI__STORE__KIND", "postgres")
        .env("FUNDI__STORE__POSTGRES__URL", &url)
        .env("FUNDI__STORE__POSTGRES__SCHEMA", &schema)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(doctor.status.success(), "{said}");
    assert!(said.contains(" unfinished tasks"), "{said}");
    // n1's leases last until they run out; n2 holds a long task.
    assert!(said.contains("  n1: ") && said.contains("  n2: "), "{said}");
    assert!(said.contains("no task is set aside"), "{said}");

    // A subscriber on node 3 follows a task running on node 2, to its end.
    let on_n3 = task_events(&n3, &followed, 0).await;
    let on_n2 = task_events(&n2, &followed, 0).await;
    assert_eq!(ids(&on_n3), ids(&on_n2), "the same events, by the same ids");
    assert_eq!(
        ids(&on_n3),
        (1..=on_n3.len() as u64).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
    assert_eq!(steps(&on_n3), (1..=40).collect::<Vec<_>>());
    // Resumed on node 2 after the fifth event seen on node 3.
    let resumed = task_events(&n2, &followed, on_n3[4].0).await;
    assert_eq!(ids(&resumed), ids(&on_n3[5..]));

    // A cancel sent to node 3 stops the run on node 2.
    let canceled = ok(&n3, "CancelTask", json!({"id": long})).await;
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED", "{canceled}");
    let long_steps = steps(&task_events(&n2, &long, 0).await);
    assert!(long_steps.len() < 1_000, "the run stopped when canceled");

    // Every acknowledged task ends completed, node 1's taken over by the others; each
    // step of each run is in order, a step in flight at the kill run again at most once.
    for (at, id) in tasks.iter().enumerate() {
        let reader = if at % 2 == 0 { &n2 } else { &n3 };
        let done = poll_task(reader, id, |t| state(t) == "TASK_STATE_COMPLETED").await;
        assert_eq!(done["status"]["message"]["parts"][0]["text"], "counted");
        let events = task_events(reader, id, 0).await;
        let seen = steps(&events);
        let repeats = seen.windows(2).filter(|w| w[1] == w[0]).count();
        assert!(
            seen.windows(2).all(|w| w[1] == w[0] || w[1] == w[0] + 1) && repeats <= 1,
            "task {id} ran out of order or on two nodes at once: {seen:?}"
        );
        assert_eq!(seen.first(), Some(&1));
        assert_eq!(seen.last(), Some(&30));
    }
    let listed = ok(&n3, "ListTasks", json!({"pageSize": 100})).await;
    assert_eq!(listed["totalSize"], json!(tasks.len() + 2), "{listed}");

    // Every told event of every task reached the webhook, node 1's deliveries finished
    // by the node that took them over (at least once: a repeat is allowed).
    for id in &tasks {
        let told: BTreeSet<u64> = ids(&task_events(&n2, id, 0).await).into_iter().collect();
        let deadline = Instant::now() + DEADLINE;
        loop {
            let delivered: BTreeSet<u64> = pushed_seqs(&deliveries, id).into_iter().collect();
            if told.is_subset(&delivered) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "task {id}: events {:?} were never pushed",
                told.difference(&delivered).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // A console sign-in link made on one node opens on another, and the session it
    // opens is known to every node.
    let links = format!("{}/console/sign-in-links", n2.url);
    let link = call_with(
        reqwest::Method::POST,
        &links,
        CLUSTER_AGENT_TOKEN,
        CLUSTER_USER_TOKEN,
    )
    .await;
    let token = link["url"]
        .as_str()
        .unwrap()
        .split("token=")
        .nth(1)
        .unwrap();
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let opened = no_redirects
        .get(format!("{}/console/sign-in?token={token}", n3.url))
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200, "the link opens on another node");
    let held = opened.headers()["set-cookie"].to_str().unwrap();
    let held = held.split(';').next().unwrap().to_owned();
    let form = opened.text().await.unwrap();
    let hidden = |name: &str| {
        form.split(&format!("name=\"{name}\" value=\""))
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap()
            .to_owned()
    };
    let continued = no_redirects
        .post(format!("{}/console/sign-in", n3.url))
        .header("origin", &n3.url)
        .header("cookie", &held)
        .form(&[("token", hidden("token")), ("csrf", hidden("csrf"))])
        .send()
        .await
        .unwrap();
    assert_eq!(continued.status(), 303);
    let cookie = continued.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let page = no_redirects
        .get(format!("{}/console/tasks", n2.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("Signed in as <strong>alice</strong>")
    );

    drop((n2, n3));
    drop_schemas(&[schema]).await;
}
