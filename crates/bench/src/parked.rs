//! W4 waiting tasks: many tasks waiting for input on one node (sled), each parked once
//! it has rested `PARK_AFTER_MS` (runtime semantics, "Parked tasks"). Measures the RSS
//! a parked task costs, an answer to a parked task against one to a task that kept its
//! actor (on a second server that never parks, in the same run), and a restart with
//! the whole backlog.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

use crate::load::{self, Sample};
use crate::measure::ms;
use crate::server::{Credentials, Server};
use crate::workloads::{post_json, send_request};

/// How long a waiting task keeps its actor on the parking server.
pub(crate) const PARK_AFTER_MS: u64 = 1_000;

/// Answers measured on each server.
const ANSWERS: usize = 4_000;

/// Workers that create tasks, and that answer them.
pub(crate) const CREATORS: usize = 64;
const ANSWERERS: usize = 16;

/// A task waiting for input: its id and context.
type Waiting = (String, String);

/// `count` tasks waiting for input, parked: RSS per task, answers to parked and live
/// tasks, and a restart with the backlog.
pub(crate) async fn waiting_tasks(
    fundi: &Path,
    dir: &Path,
    client: &reqwest::Client,
    credentials: &Credentials,
    count: usize,
) -> anyhow::Result<Value> {
    let data = dir.join("parked");
    let parking = Server::start_parking(fundi, &data, credentials, PARK_AFTER_MS)?;
    let rss_empty = parking.rss_bytes().unwrap_or_default();
    eprintln!("creating {count} tasks waiting for input");
    let started = Instant::now();
    let tasks = create_waiting(client, &parking.url, count).await?;
    let created_per_second = count as f64 / started.elapsed().as_secs_f64();
    let rss_created = parking.rss_bytes().unwrap_or_default();
    eprintln!("waiting for every task to park");
    wait_until_parked(client, &parking.url).await?;
    let rss_parked = parking.rss_bytes().unwrap_or_default();
    let per_parked = rss_parked.saturating_sub(rss_empty) as f64 / count as f64;

    let answered = ANSWERS.min(count);
    let parked_answers = answer_all(client, &parking.url, &tasks[..answered]).await?;

    // The same answers to tasks that kept their actor, on a server that never parks.
    let keeping = Server::start_parking(fundi, &dir.join("kept"), credentials, 0)?;
    let keeping_empty = keeping.rss_bytes().unwrap_or_default();
    let kept_tasks = create_waiting(client, &keeping.url, answered).await?;
    let keeping_loaded = keeping.rss_bytes().unwrap_or_default();
    let per_live = keeping_loaded.saturating_sub(keeping_empty) as f64 / answered as f64;
    let live_answers = answer_all(client, &keeping.url, &kept_tasks).await?;
    let empty_startup = keeping.startup.as_secs_f64();
    drop(keeping);

    drop(parking); // SIGKILL, with the backlog stored.
    let restarted = Server::start_parking(fundi, &data, credentials, PARK_AFTER_MS)?;
    let health = client
        .get(format!("{}/health", restarted.url))
        .send()
        .await?;
    ensure!(health.status() == 200, "not healthy after restart");
    let rss_restarted = restarted.rss_bytes().unwrap_or_default();

    let (parked_p99, live_p99) = (
        parked_answers.percentile(99.0),
        live_answers.percentile(99.0),
    );
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "\nW4 {count} tasks waiting for input (sled): RSS {:.0} MiB parked ({:.0} MiB as \
         created, {:.0} MiB empty), {:.2} KiB per parked task; a task that keeps its actor \
         {:.1} KiB; created at {created_per_second:.0}/s",
        mib(rss_parked),
        mib(rss_created),
        mib(rss_empty),
        per_parked / 1024.0,
        per_live / 1024.0,
    );
    println!(
        "W4 answer at c={ANSWERERS}, {answered} each: to a parked task p50 {:.2} ms p99 {:.2} ms, \
         to a live one p50 {:.2} ms p99 {:.2} ms (p99 ratio {:.2})",
        ms(parked_answers.percentile(50.0)),
        ms(parked_p99),
        ms(live_answers.percentile(50.0)),
        ms(live_p99),
        ms(parked_p99) / ms(live_p99).max(f64::MIN_POSITIVE),
    );
    println!(
        "W4 restart with {count} waiting tasks: listening after {:.2} s (empty store: {:.2} s), \
         RSS then {:.0} MiB",
        restarted.startup.as_secs_f64(),
        empty_startup,
        mib(rss_restarted)
    );
    Ok(json!({
        "tasks": count, "parkAfterMs": PARK_AFTER_MS,
        "rssEmptyMiB": mib(rss_empty), "rssCreatedMiB": mib(rss_created),
        "rssParkedMiB": mib(rss_parked), "bytesPerTask": per_parked,
        "bytesPerLiveTask": per_live, "createdPerSecond": created_per_second,
        "answers": answered,
        "answerToParkedP50Ms": ms(parked_answers.percentile(50.0)),
        "answerToParkedP99Ms": ms(parked_p99),
        "answerToLiveP50Ms": ms(live_answers.percentile(50.0)),
        "answerToLiveP99Ms": ms(live_p99),
        "restartSeconds": restarted.startup.as_secs_f64(),
        "emptyStartupSeconds": empty_startup,
        "rssAfterRestartMiB": mib(rss_restarted),
    }))
}

/// Creates `count` echo tasks that ask for input, from `CREATORS` workers.
async fn create_waiting(
    client: &reqwest::Client,
    url: &str,
    count: usize,
) -> anyhow::Result<Vec<Waiting>> {
    let (client, url) = (client.clone(), url.to_owned());
    load::each(count, CREATORS, move |_| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let body = send_request("SendMessage", "ask", Some(json!({"askInput": true})));
            let answer = post_json(&client, &url, &body).await?;
            let task = &answer["result"]["task"];
            ensure!(
                task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED",
                "not waiting for input: {answer}"
            );
            let id = task["id"].as_str().context("no task id")?;
            let context = task["contextId"].as_str().context("no context id")?;
            anyhow::Ok((id.to_owned(), context.to_owned()))
        }
    })
    .await
}

/// Polls `/metrics` until no task has an actor.
async fn wait_until_parked(client: &reqwest::Client, url: &str) -> anyhow::Result<()> {
    wait_until_live(client, url, 0).await
}

/// Polls `/metrics` until `live` tasks have an actor.
pub(crate) async fn wait_until_live(
    client: &reqwest::Client,
    url: &str,
    live: usize,
) -> anyhow::Result<()> {
    wait_until_metric(client, url, "fundi_task_actors_live", live).await
}

/// Polls `/metrics` until the gauge `name` reads `value`.
pub(crate) async fn wait_until_metric(
    client: &reqwest::Client,
    url: &str,
    name: &str,
    value: usize,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let text = client
            .get(format!("{url}/metrics"))
            .send()
            .await?
            .text()
            .await?;
        // `fundi_task_actors_live{otel_scope_name="fundi"} 3`
        let now = text
            .lines()
            .filter(|l| {
                l.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with(['{', ' ']))
            })
            .find_map(|l| l.split_whitespace().last()?.parse::<f64>().ok());
        match now {
            Some(n) if n == value as f64 => return Ok(()),
            Some(_) => {}
            None => bail!("{url}/metrics has no {name}"),
        }
        ensure!(
            Instant::now() < deadline,
            "{name} is {now:?} after 600 s, not {value}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Answers each task once (a blocking send: the answer must complete it), from
/// `ANSWERERS` workers; the latency of each answer.
async fn answer_all(
    client: &reqwest::Client,
    url: &str,
    tasks: &[Waiting],
) -> anyhow::Result<Sample> {
    let tasks = Arc::new(tasks.to_vec());
    let (client, url) = (client.clone(), url.to_owned());
    let started = Instant::now();
    let latencies = load::each(tasks.len(), ANSWERERS, move |i| {
        let (client, url, tasks) = (client.clone(), url.clone(), tasks.clone());
        async move {
            let (id, context) = &tasks[i];
            let mut body = send_request("SendMessage", "the answer", None);
            body["params"]["message"]["taskId"] = json!(id);
            body["params"]["message"]["contextId"] = json!(context);
            let began = Instant::now();
            let answer = post_json(&client, &url, &body).await?;
            let latency = began.elapsed();
            ensure!(
                answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED",
                "an answer did not complete its task: {answer}"
            );
            anyhow::Ok(latency)
        }
    })
    .await?;
    Ok(Sample::from_latencies(latencies, started.elapsed()))
}
