//! One measurement of a case, and the fan-out and restart measurements.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde_json::json;

use crate::args::Args;
use crate::cases::{Case, Target, Workload};
use crate::fleet::Urls;
use crate::load::{self, Sample};
use crate::server::{Credentials, Server};
use crate::{grpc, workloads};

pub(crate) async fn measure(
    case: &Case,
    urls: &Urls,
    client: &reqwest::Client,
    credentials: &Credentials,
    duration: Duration,
) -> anyhow::Result<Sample> {
    let fundi = match case.compared {
        true => urls.compare.as_ref().context("no --compare servers")?,
        false => &urls.main,
    };
    // Worker `w` sends to `servers[w % servers.len()]`.
    let servers: Arc<Vec<String>> = Arc::new(match case.target {
        Target::BareAxum => vec![urls.bare.clone()],
        Target::SledFlushPerRequest => vec![urls.sled.clone()],
        Target::RustSdk => vec![urls.rust_sdk.clone()],
        Target::RustSdkGrpc => vec![urls.rust_sdk_grpc.clone()],
        Target::FundiSync => vec![fundi.sync.clone()],
        Target::FundiBatched => vec![fundi.batched.clone()],
        Target::FundiMemory => vec![fundi.memory.clone()],
        Target::FundiPostgres => vec![fundi.postgres.clone().context("no --postgres-url server")?],
        Target::FundiPostgresOneNode => {
            vec![
                fundi
                    .nodes
                    .first()
                    .cloned()
                    .context("no --postgres-url nodes")?,
            ]
        }
        Target::FundiPostgresTwoNodes => fundi.nodes.clone(),
    });
    let url = servers[0].clone();
    let client = client.clone();
    match case.workload {
        Workload::SendBlocking => {
            load::run(case.concurrency, duration, move |w, i| {
                let (client, url) = (client.clone(), servers[w % servers.len()].clone());
                async move { workloads::send_blocking(&client, &url, w, i).await }
            })
            .await
        }
        Workload::GetTask => {
            let id = Arc::new(fundi.existing_task.clone());
            load::run(case.concurrency, duration, move |_, _| {
                let (client, url, id) = (client.clone(), url.clone(), id.clone());
                async move { workloads::get_task(&client, &url, &id).await }
            })
            .await
        }
        Workload::SendBlockingGrpc | Workload::StreamGrpc => {
            let clients =
                grpc::Client::connect_all(&servers, case.concurrency, credentials).await?;
            let clients = Arc::new(clients);
            let stream = case.workload == Workload::StreamGrpc;
            load::run(case.concurrency, duration, move |w, i| {
                let client = clients[w].clone();
                async move {
                    match stream {
                        true => grpc::stream(&client, w, i, false).await,
                        false => grpc::send_blocking(&client, w, i).await,
                    }
                }
            })
            .await
        }
        Workload::Stream | Workload::StreamEachStepStored => {
            let each_step_stored = case.workload == Workload::StreamEachStepStored;
            load::run(case.concurrency, duration, move |w, i| {
                let (client, url) = (client.clone(), servers[w % servers.len()].clone());
                async move { workloads::stream(&client, &url, w, i, each_step_stored).await }
            })
            .await
        }
    }
}

/// W3 fan-out on each fundi: median (over the repeats) of the p50 and p99 delay from an
/// event's timestamp to its arrival at each of `args.fan_out` subscribers (spread over
/// `args.fan_out_tasks` tasks).
pub(crate) async fn measure_fan_out(
    args: &Args,
    urls: &Urls,
    client: &reqwest::Client,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let mut rows = Vec::new();
    if args.fan_out == 0 {
        return Ok(rows);
    }
    let tasks = args.fan_out_tasks.max(1);
    println!(
        "\n{:<26} {:>11} {:>15} {:>9} {:>9}",
        format!("fan-out over {tasks} task(s)"),
        "subscribers",
        "live events",
        "delay p50",
        "delay p99"
    );
    for (name, url) in [
        ("sync", &urls.main.sync),
        ("batched", &urls.main.batched),
        ("memory store", &urls.main.memory),
    ] {
        let (mut p50s, mut p99s, mut received) = (Vec::new(), Vec::new(), 0);
        for repeat in 0..args.repeats {
            eprintln!(
                "[{}/{}] W3 fan-out, {name}, {} subscribers",
                repeat + 1,
                args.repeats,
                args.fan_out
            );
            let latencies = workloads::fan_out(client, url, args.fan_out, tasks).await?;
            let sample = Sample {
                ops: 0,
                units: 0,
                elapsed: Duration::ZERO,
                latencies,
            };
            received = sample.latencies.len();
            p50s.push(ms(sample.percentile(50.0)));
            p99s.push(ms(sample.percentile(99.0)));
        }
        let (p50, p99) = (median(p50s), median(p99s));
        println!(
            "{:<26} {:>11} {:>15} {:>6.2} ms {:>6.2} ms",
            format!("W3 fan-out, {name}"),
            args.fan_out,
            received,
            p50,
            p99
        );
        rows.push(
            json!({"store": name, "subscribers": args.fan_out, "tasks": tasks,
            "liveEventsReceived": received, "delayP50Ms": p50, "delayP99Ms": p99}),
        );
    }
    Ok(rows)
}

/// W4 restart: a sled `sync` server with `args.restart_tasks` unfinished tasks is
/// killed (SIGKILL) and started again on the same data; measures the time until it
/// listens again, which is after recovery has decided every unfinished task.
pub(crate) async fn measure_restart(
    args: &Args,
    dir: &std::path::Path,
    client: &reqwest::Client,
    credentials: &Credentials,
) -> anyhow::Result<Option<serde_json::Value>> {
    if args.restart_tasks == 0 {
        return Ok(None);
    }
    let data = dir.join("restart");
    let empty = Server::start(&args.fundi, &data, "sled", "sync", credentials)?;
    let baseline = empty.startup;
    let rss_empty = empty.rss_bytes().unwrap_or_default();
    eprintln!("creating {} unfinished tasks", args.restart_tasks);
    workloads::create_unfinished(client, &empty.url, args.restart_tasks).await?;
    let rss_loaded = empty.rss_bytes().unwrap_or_default();
    drop(empty); // SIGKILL
    let restarted = Server::start(&args.fundi, &data, "sled", "sync", credentials)?;
    let health = client
        .get(format!("{}/health", restarted.url))
        .send()
        .await?;
    anyhow::ensure!(health.status() == 200, "not healthy after restart");
    let rss_restarted = restarted.rss_bytes().unwrap_or_default();
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "\n{} live unfinished tasks: RSS {:.0} MiB (empty: {:.0} MiB, {:.1} KiB per task)",
        args.restart_tasks,
        mib(rss_loaded),
        mib(rss_empty),
        rss_loaded.saturating_sub(rss_empty) as f64 / 1024.0 / args.restart_tasks as f64
    );
    println!(
        "restart with {} unfinished tasks: listening after {:.2} s (empty store: {:.2} s), RSS then {:.0} MiB",
        args.restart_tasks,
        restarted.startup.as_secs_f64(),
        baseline.as_secs_f64(),
        mib(rss_restarted)
    );
    Ok(Some(json!({"unfinishedTasks": args.restart_tasks,
        "rssBytesWithTasks": rss_loaded, "rssBytesEmpty": rss_empty,
        "rssBytesAfterRestart": rss_restarted,
        "startupSeconds": restarted.startup.as_secs_f64(),
        "emptyStartupSeconds": baseline.as_secs_f64()})))
}

pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
