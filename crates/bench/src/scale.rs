//! W4 scale: a store holding many terminal tasks (GetTask and ListTasks latency, memory,
//! startup). Many tasks waiting for input: `parked`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use chrono::Utc;
use fundi_runtime::TaskStore;
use fundi_runtime::model::{
    Artifact, ContextId, Message, Part, Task, TaskEvent, TaskEventKind, TaskId, TaskState,
    TaskStatus,
};
use fundi_runtime::store::TaskRecord;
use fundi_store_sled::{Durability, SledStore};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::load::Sample;
use crate::server::{Credentials, Server};
use crate::workloads::post_json;

/// The subject the bench's user token stands for (the owner of seeded tasks).
pub(crate) const BENCH_USER: &str = "bench";

fn terminal_record(n: usize) -> (TaskRecord, TaskEvent) {
    let id = TaskId::generate();
    let context = ContextId::generate();
    let text = format!("stored task {n}");
    let mut first = Message::user(vec![Part::text(text.clone())]);
    first.task_id = Some(id.clone());
    first.context_id = Some(context.clone());
    let task = Task {
        id: id.clone(),
        context_id: context.clone(),
        status: TaskStatus {
            state: TaskState::Completed,
            message: None,
            timestamp: Utc::now(),
        },
        artifacts: vec![Artifact::new("echo", "echo", vec![Part::text(text)])],
        history: vec![first],
        metadata: None,
    };
    let event = TaskEvent {
        seq: 1,
        task_id: id,
        context_id: context,
        kind: TaskEventKind::Created(task.clone()),
    };
    let mut record = TaskRecord::new(task, "echo");
    record.owner = Some(BENCH_USER.into());
    (record, event)
}

/// Writes `count` completed tasks into a sled store at `path`; returns some of their ids.
async fn seed(path: &Path, count: usize) -> anyhow::Result<Vec<String>> {
    let store = Arc::new(
        SledStore::open(
            path,
            Durability::Batched {
                window: Duration::from_millis(50),
            },
        )
        .context("opening the store to seed")?,
    );
    let sample_every = (count / 10_000).max(1);
    let ids: Vec<String> = futures::stream::iter(0..count)
        .map(|n| {
            let store = store.clone();
            async move {
                let (record, event) = terminal_record(n);
                store
                    .commit(&record, 0, std::slice::from_ref(&event))
                    .await?;
                anyhow::Ok((n % sample_every == 0).then(|| record.task.id.to_string()))
            }
        })
        .buffer_unordered(64)
        .filter_map(|r| async move { r.transpose() })
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    store.flush().await?;
    Ok(ids)
}

/// A server over a store of `count` terminal tasks: startup, RSS, GetTask and ListTasks.
async fn over_stored(
    fundi: &Path,
    path: &Path,
    client: &reqwest::Client,
    credentials: &Credentials,
    count: usize,
    seconds: Duration,
) -> anyhow::Result<Value> {
    eprintln!("seeding {count} terminal tasks");
    let seeding = Instant::now();
    let ids = seed(path, count).await?;
    let seeded_in = seeding.elapsed();
    let server = Server::start(fundi, path, "sled", "sync", credentials)?;
    let rss_started = server.rss_bytes().unwrap_or_default();
    let sample_id = ids.first().context("no task was seeded")?.clone();
    let ids = Arc::new(ids);
    let get = load(client, &server.url, seconds, move |n| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask",
               "params": {"id": ids[n % ids.len()], "historyLength": 1}})
    })
    .await?;
    let list = load(client, &server.url, seconds, |n| {
        let params = if n % 2 == 0 {
            json!({"pageSize": 50})
        } else {
            json!({"pageSize": 50, "status": "TASK_STATE_COMPLETED"})
        };
        json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": params})
    })
    .await?;
    let rss_after = server.rss_bytes().unwrap_or_default();
    let startup = server.startup;
    // Killed (SIGKILL): the next start repairs the store, which rebuilds the task counts
    // from every terminal task's listing entry.
    drop(server);
    let crashed = Server::start(fundi, path, "sled", "sync", credentials)?;
    let probe = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                       "params": {"id": sample_id, "historyLength": 1}});
    let answer = post_json(client, &crashed.url, &probe).await?;
    ensure!(
        answer["result"]["id"] == sample_id.as_str(),
        "a stored task is missing after the restart: {answer}"
    );
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{count:>9} stored: startup {:.2} s ({:.2} s after a kill), RSS {:.0} MiB at start, {:.0} MiB after reads; GetTask {:.0}/s p99 {:.2} ms; ListTasks {:.0}/s p99 {:.2} ms; seeded at {:.0}/s",
        startup.as_secs_f64(),
        crashed.startup.as_secs_f64(),
        mib(rss_started),
        mib(rss_after),
        get.per_second(),
        ms(get.percentile(99.0)),
        list.per_second(),
        ms(list.percentile(99.0)),
        count as f64 / seeded_in.as_secs_f64(),
    );
    Ok(
        json!({"storedTasks": count, "startupSeconds": startup.as_secs_f64(),
              "startupAfterKillSeconds": crashed.startup.as_secs_f64(),
              "rssAtStartMiB": mib(rss_started), "rssAfterReadsMiB": mib(rss_after),
              "getTaskPerSecond": get.per_second(), "getTaskP99Ms": ms(get.percentile(99.0)),
              "listTasksPerSecond": list.per_second(), "listTasksP99Ms": ms(list.percentile(99.0))}),
    )
}

/// `stored` terminal tasks against a small store of 1,000, same reads, same run.
pub(crate) async fn stored(
    fundi: &Path,
    dir: &Path,
    client: &reqwest::Client,
    credentials: &Credentials,
    stored: usize,
    seconds: Duration,
) -> anyhow::Result<Value> {
    println!("\nW4 stored terminal tasks (16 readers)");
    let small = over_stored(
        fundi,
        &dir.join("stored-small"),
        client,
        credentials,
        1_000,
        seconds,
    )
    .await?;
    let large = over_stored(
        fundi,
        &dir.join("stored-large"),
        client,
        credentials,
        stored,
        seconds,
    )
    .await?;
    Ok(json!({"small": small, "large": large}))
}

/// 16 workers sending `body(n)` for `duration`; every answer must be a result.
async fn load(
    client: &reqwest::Client,
    url: &str,
    duration: Duration,
    body: impl Fn(usize) -> Value + Send + Sync + 'static,
) -> anyhow::Result<Sample> {
    let body = Arc::new(body);
    let counter = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..16)
        .map(|_| {
            let (client, url, body, counter) = (
                client.clone(),
                url.to_owned(),
                body.clone(),
                counter.clone(),
            );
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while started.elapsed() < duration {
                    let n = counter.fetch_add(1, Ordering::Relaxed);
                    let at = Instant::now();
                    let answer = post_json(&client, &url, &body(n)).await?;
                    ensure!(answer.get("result").is_some(), "failed: {answer}");
                    latencies.push(at.elapsed());
                }
                anyhow::Ok(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await??);
    }
    Ok(Sample::from_latencies(latencies, started.elapsed()))
}
