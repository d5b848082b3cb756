//! `fundi-bench`: throughput and latency of a fundi release binary on loopback, reported
//! as ratios to limits measured in the same run (a bare axum JSON-RPC echo, and sled
//! insert + flush per request) and to the official A2A Rust SDK's server in memory,
//! because the machine is shared and noisy. Each measurement is repeated and the median
//! reported.
//!
//! ```sh
//! cargo build --release -p fundi -p fundi-bench
//! target/release/fundi-bench --fundi target/release/fundi
//! target/release/fundi-bench --instructions --compare /tmp/fundi-before   # valgrind
//! ```

mod args;
mod baselines;
mod cases;
mod data;
mod fleet;
mod grpc;
mod instructions;
mod load;
mod measure;
mod parked;
mod rust_sdk;
mod scale;
mod server;
mod stalled;
mod waiting;
mod workloads;

use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use serde_json::json;

use crate::args::Args;
use crate::baselines::Baseline;
use crate::cases::{Case, Target, Workload, cases};
use crate::data::Data;
use crate::fleet::{FundiServers, Urls};
use crate::load::Sample;
use crate::measure::{measure, measure_fan_out, measure_restart, median, ms};
use crate::server::{Credentials, Server};

/// The same allocator as the server, so the baselines served from this process are
/// measured on equal terms.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(baseline) = args.serve_baseline {
        let dir = args.baseline_dir.context("--baseline-dir is required")?;
        return baselines::serve_forever(baseline, &dir).await;
    }
    let duration = Duration::from_secs_f64(args.seconds);
    let dir = Data::new(args.keep_data.as_deref())?;
    let credentials = Credentials::generate();
    if args.instructions {
        return count_instructions(&args, &credentials).await;
    }
    let bare = Server::baseline(Baseline::Axum, &dir.path().join("bare"))?;
    let sled_flush = Server::baseline(Baseline::SledFlush, &dir.path().join("sled-baseline"))?;
    let rust_sdk = Server::baseline(Baseline::RustSdk, &dir.path().join("rust-sdk"))?;
    let rust_sdk_grpc = Server::baseline(Baseline::RustSdkGrpc, &dir.path().join("rust-sdk-grpc"))?;
    let schema = format!("fundi_bench_{}", std::process::id());
    let postgres = args
        .postgres_url
        .as_deref()
        .map(|url| (url, schema.as_str()));
    let fundi = FundiServers::start(&args.fundi, dir.path(), &credentials, postgres)?;
    // The compared build on PostgreSQL too, in schemas of its own.
    let compare_schema = format!("{schema}_compare");
    let compare = match &args.compare {
        Some(binary) => Some(FundiServers::start(
            binary,
            &dir.path().join("compare"),
            &credentials,
            postgres.map(|(url, _)| (url, compare_schema.as_str())),
        )?),
        None => None,
    };
    let client = reqwest::Client::builder()
        .default_headers(credentials.headers()?)
        .tcp_nodelay(true)
        .pool_max_idle_per_host(256)
        .build()?;
    let urls = Urls {
        bare: bare.url.clone(),
        sled: sled_flush.url.clone(),
        rust_sdk: rust_sdk.url.clone(),
        rust_sdk_grpc: rust_sdk_grpc.url.clone(),
        main: fundi.urls(&client).await?,
        compare: match &compare {
            Some(servers) => Some(servers.urls(&client).await?),
            None => None,
        },
    };

    let cases: Vec<Case> = cases()
        .into_iter()
        .filter(|c| {
            !matches!(
                c.target,
                Target::FundiPostgres
                    | Target::FundiPostgresOneNode
                    | Target::FundiPostgresTwoNodes
            ) || args.postgres_url.is_some()
        })
        .filter(|c| {
            c.is_baseline()
                || args
                    .only
                    .as_deref()
                    .is_none_or(|only| c.name.contains(only))
        })
        // Each of fundi's measurements followed at once by the same on `--compare`.
        .flat_map(|c| {
            let twin = (args.compare.is_some() && c.is_fundi()).then(|| Case {
                compared: true,
                ..c.clone()
            });
            std::iter::once(c).chain(twin)
        })
        .collect();
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); cases.len()];
    // Round-robin over the cases, so that drift in the machine's load spreads evenly.
    for repeat in 0..args.repeats {
        for (i, case) in cases.iter().enumerate() {
            eprintln!(
                "[{}/{}] {} c={}",
                repeat + 1,
                args.repeats,
                case.label(),
                case.concurrency
            );
            samples[i].push(measure(case, &urls, &client, &credentials, duration).await?);
        }
    }

    let rate = |i: usize| median(samples[i].iter().map(Sample::per_second).collect());
    let bare_at = |c: usize| {
        cases
            .iter()
            .position(|k| k.target == Target::BareAxum && k.concurrency == c)
            .map(rate)
    };
    // A fundi measurement's rate as a ratio to the Rust SDK's in the same workload.
    let to_rust_sdk = |i: usize| -> Option<f64> {
        let case = &cases[i];
        if !case.is_fundi() {
            return None;
        }
        cases
            .iter()
            .position(|k| {
                let same = match case.workload {
                    Workload::StreamEachStepStored => Workload::Stream,
                    workload => workload,
                };
                matches!(k.target, Target::RustSdk | Target::RustSdkGrpc)
                    && k.workload == same
                    && k.concurrency == case.concurrency
            })
            .map(|sdk| rate(i) / rate(sdk))
    };
    // `--fundi`'s rate as a ratio to `--compare`'s: the median of the ratios of the
    // repeats taken side by side.
    let to_compared = |i: usize| -> Option<f64> {
        cases
            .get(i + 1)
            .filter(|t| t.compared && !cases[i].compared)?;
        let ratios = samples[i]
            .iter()
            .zip(&samples[i + 1])
            .map(|(a, b)| a.per_second() / b.per_second())
            .collect();
        Some(median(ratios))
    };
    println!(
        "{:<37} {:>5} {:>12} {:>9} {:>9} {:>10} {:>10} {:>10}",
        "measurement",
        "conc",
        "per second",
        "p50 ms",
        "p99 ms",
        "/ bare axum",
        "/ Rust SDK",
        "/ compare"
    );
    let mut results = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let per_second = rate(i);
        let p50 = median(samples[i].iter().map(|s| ms(s.percentile(50.0))).collect());
        let p99 = median(samples[i].iter().map(|s| ms(s.percentile(99.0))).collect());
        let ratio = bare_at(case.concurrency).map(|bare| per_second / bare);
        let to_sdk = to_rust_sdk(i);
        let compared = to_compared(i);
        let unit = if case.workload.is_stream() {
            "events"
        } else {
            "requests"
        };
        let figure = |r: Option<f64>| r.map_or("-".into(), |r| format!("{r:.3}"));
        println!(
            "{:<37} {:>5} {:>12.0} {:>9.2} {:>9.2} {:>10} {:>10} {:>10}",
            case.label(),
            case.concurrency,
            per_second,
            p50,
            p99,
            figure(ratio),
            figure(to_sdk),
            figure(compared)
        );
        results.push(json!({
            "measurement": case.name, "concurrency": case.concurrency, "unit": unit,
            "binary": if case.compared { "compare" } else { "fundi" },
            "perSecondMedian": per_second, "p50Ms": p50, "p99Ms": p99,
            "ratioToBareAxum": ratio, "ratioToRustSdk": to_sdk, "ratioToCompare": compared,
            "repeats": samples[i].iter().map(|s| json!({
                "perSecond": s.per_second(), "operations": s.ops,
                "p50Ms": ms(s.percentile(50.0)), "p99Ms": ms(s.percentile(99.0)),
                // A single stalled request hides below p99 but not here.
                "maxMs": ms(s.percentile(100.0))})).collect::<Vec<_>>(),
        }));
    }
    let fan_out = measure_fan_out(&args, &urls, &client).await?;
    let stalled = if args.stalled_subscribers > 0 {
        Some(
            stalled::stalled_subscribers(
                &args.fundi,
                dir.path(),
                &client,
                &credentials,
                args.stalled_subscribers,
                args.stalled_steps,
            )
            .await?,
        )
    } else {
        None
    };
    let restart = measure_restart(&args, dir.path(), &client, &credentials).await?;
    let input_required = if args.input_required_tasks > 0 {
        Some(
            parked::waiting_tasks(
                &args.fundi,
                dir.path(),
                &client,
                &credentials,
                args.input_required_tasks,
            )
            .await?,
        )
    } else {
        None
    };
    let waiting = if args.waiting_tasks > 0 {
        Some(
            waiting::waiting_kinds(
                &args.fundi,
                dir.path(),
                &client,
                &credentials,
                args.waiting_tasks,
            )
            .await?,
        )
    } else {
        None
    };
    let stored = if args.stored_tasks > 0 {
        Some(
            scale::stored(
                &args.fundi,
                dir.path(),
                &client,
                &credentials,
                args.stored_tasks,
                duration,
            )
            .await?,
        )
    } else {
        None
    };
    if let Some(parent) = args.out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let report = json!({"secondsPerRun": args.seconds, "repeats": args.repeats,
        "results": results, "fanOut": fan_out, "stalled": stalled, "restart": restart,
        "inputRequired": input_required, "waiting": waiting, "stored": stored});
    std::fs::write(&args.out, serde_json::to_string_pretty(&report)?)?;
    eprintln!("results written to {}", args.out.display());
    drop((fundi, compare, bare, sled_flush, rust_sdk, rust_sdk_grpc));
    if let Some(url) = &args.postgres_url {
        let (db, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        for schema in [&schema, &compare_schema] {
            db.batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; DROP SCHEMA IF EXISTS {schema}_nodes CASCADE"
            ))
            .await?;
        }
    }
    Ok(())
}

/// `--instructions`: the counts, printed and written to `--out`.
async fn count_instructions(args: &Args, credentials: &Credentials) -> anyhow::Result<()> {
    let client = reqwest::Client::builder()
        .default_headers(credentials.headers()?)
        .build()?;
    let rows = instructions::report(
        &args.fundi,
        args.compare.as_deref(),
        args.instruction_scale,
        credentials,
        &client,
    )
    .await?;
    if let Some(parent) = args.out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let results = json!({"instructions": rows});
    std::fs::write(&args.out, serde_json::to_string_pretty(&results)?)?;
    println!("results written to {}", args.out.display());
    Ok(())
}
