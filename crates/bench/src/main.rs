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

mod baselines;
mod grpc;
mod instructions;
mod load;
mod rust_sdk;
mod scale;
mod server;
mod workloads;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use serde_json::json;

use crate::baselines::Baseline;
use crate::load::Sample;
use crate::server::{Credentials, Server};

#[derive(Debug, Parser)]
#[command(about = "Benchmarks a fundi release binary against baselines measured in the same run")]
struct Args {
    /// The fundi binary to measure (build it with --release).
    #[arg(long, default_value = "target/release/fundi")]
    fundi: PathBuf,
    /// Another fundi binary (say, a build of the commit before a change) measured in the
    /// same run, each of its measurements right after the same one of `--fundi`; the
    /// table then gives `--fundi`'s rate as a ratio to it too. (The W1 to W3 workloads;
    /// fan-out and W4 run on `--fundi` only.)
    #[arg(long)]
    compare: Option<PathBuf>,
    /// Also measure W1 and W3 on a fundi storing in PostgreSQL at this URL (in a schema
    /// of its own, dropped after), beside sled in the same run.
    #[arg(long)]
    postgres_url: Option<String>,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Repeats of every measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Run only the measurements whose name contains this text (bare axum and sled
    /// always run; the Rust SDK's are named like fundi's: "W1 send, Rust SDK in memory").
    #[arg(long)]
    only: Option<String>,
    /// SSE subscribers on one task for the fan-out measurement (0 skips it).
    #[arg(long, default_value_t = 1000)]
    fan_out: usize,
    /// Unfinished tasks left in the store for the restart measurement (0 skips it).
    #[arg(long, default_value_t = 10_000)]
    restart_tasks: usize,
    /// Live input-required tasks for the memory measurement (0 skips it).
    #[arg(long, default_value_t = 0)]
    input_required_tasks: usize,
    /// Terminal tasks seeded into a store for the read measurements (0 skips it).
    #[arg(long, default_value_t = 0)]
    stored_tasks: usize,
    /// Instead of rates, count the instructions `--fundi` (and `--compare`) spend per
    /// W1 send and per W3 stream, under valgrind's callgrind: the same on a busy machine
    /// as on an idle one (needs valgrind).
    #[arg(long)]
    instructions: bool,
    /// Internal: scales the operations counted with `--instructions` (the test suite
    /// runs a brief count).
    #[arg(long, hide = true, default_value_t = 1.0)]
    instruction_scale: f64,
    /// Where to write the results as JSON.
    #[arg(long, default_value = "target/bench/results.json")]
    out: PathBuf,
    /// Internal: serve this baseline and nothing else (the bench starts itself so).
    #[arg(long, hide = true, value_enum)]
    serve_baseline: Option<Baseline>,
    /// Internal: the sled baseline's directory.
    #[arg(long, hide = true)]
    baseline_dir: Option<PathBuf>,
}

/// A named measurement: which server, which workload, how many workers.
#[derive(Clone)]
struct Case {
    name: &'static str,
    target: Target,
    workload: Workload,
    concurrency: usize,
    /// Served by the `--compare` binary.
    compared: bool,
}

impl Case {
    fn label(&self) -> String {
        match self.compared {
            true => format!("{} [compare]", self.name),
            false => self.name.to_string(),
        }
    }

    /// Baselines run whatever `--only` says.
    fn is_baseline(&self) -> bool {
        matches!(self.target, Target::BareAxum | Target::SledFlushPerRequest)
    }

    /// Served by a fundi binary (so `--compare` measures it too).
    fn is_fundi(&self) -> bool {
        matches!(
            self.target,
            Target::FundiSync | Target::FundiBatched | Target::FundiMemory
        )
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Target {
    BareAxum,
    SledFlushPerRequest,
    FundiSync,
    FundiBatched,
    FundiMemory,
    /// fundi on PostgreSQL (`--postgres-url`).
    FundiPostgres,
    /// One fundi node of several on a PostgreSQL schema (`store.postgres.node-id`).
    FundiPostgresOneNode,
    /// Two fundi nodes on one PostgreSQL schema, each worker's requests to one of them.
    FundiPostgresTwoNodes,
    /// The official A2A Rust SDK's server, in memory (`rust_sdk`).
    RustSdk,
    /// The same over its gRPC binding.
    RustSdkGrpc,
}

#[derive(Clone, Copy, PartialEq)]
enum Workload {
    SendBlocking,
    GetTask,
    /// W3: echo posts its steps (`SkillContext::post_progress_with_checkpoint`).
    Stream,
    /// W3 with each step stored before the next (echo's `waitEachStep`): the cost of
    /// `SkillContext::progress_with_checkpoint`. Set beside the SDK's plain W3.
    StreamEachStepStored,
    /// W1 over gRPC (`grpc.rs`).
    SendBlockingGrpc,
    /// W3 over gRPC.
    StreamGrpc,
}

impl Workload {
    fn is_stream(self) -> bool {
        matches!(
            self,
            Workload::Stream | Workload::StreamEachStepStored | Workload::StreamGrpc
        )
    }
}

fn cases() -> Vec<Case> {
    use Target::*;
    use Workload::*;
    let mut cases = Vec::new();
    for c in [1, 16, 50, 64] {
        cases.push(Case {
            name: "bare axum echo",
            target: BareAxum,
            workload: SendBlocking,
            concurrency: c,
            compared: false,
        });
    }
    for c in [16, 64] {
        cases.push(Case {
            name: "sled flush per request",
            target: SledFlushPerRequest,
            workload: SendBlocking,
            concurrency: c,
            compared: false,
        });
    }
    for (name, target) in [
        ("W1 send, sync", FundiSync),
        ("W1 send, batched", FundiBatched),
        ("W1 send, memory store", FundiMemory),
        ("W1 send, postgres", FundiPostgres),
        ("W1 send, postgres, 1 node of several", FundiPostgresOneNode),
        ("W1 send, postgres, 2 nodes", FundiPostgresTwoNodes),
        ("W1 send, Rust SDK in memory", RustSdk),
    ] {
        for c in [1, 16, 64] {
            cases.push(Case {
                name,
                target,
                workload: SendBlocking,
                concurrency: c,
                compared: false,
            });
        }
    }
    for (name, target) in [
        ("W1 send, sync, gRPC", FundiSync),
        ("W1 send, Rust SDK in memory, gRPC", RustSdkGrpc),
    ] {
        for c in [1, 16, 64] {
            cases.push(Case {
                name,
                target,
                workload: SendBlockingGrpc,
                concurrency: c,
                compared: false,
            });
        }
    }
    cases.push(Case {
        name: "W2 get, sync",
        target: FundiSync,
        workload: GetTask,
        concurrency: 16,
        compared: false,
    });
    for (name, target) in [
        ("W3 stream, sync", FundiSync),
        ("W3 stream, batched", FundiBatched),
        ("W3 stream, memory store", FundiMemory),
        ("W3 stream, postgres", FundiPostgres),
        (
            "W3 stream, postgres, 1 node of several",
            FundiPostgresOneNode,
        ),
        ("W3 stream, postgres, 2 nodes", FundiPostgresTwoNodes),
        ("W3 stream, Rust SDK in memory", RustSdk),
    ] {
        for c in [1, 50] {
            cases.push(Case {
                name,
                target,
                workload: Stream,
                concurrency: c,
                compared: false,
            });
        }
    }
    for (name, target) in [
        ("W3 stream, sync, gRPC", FundiSync),
        ("W3 stream, Rust SDK in memory, gRPC", RustSdkGrpc),
    ] {
        for c in [1, 50] {
            cases.push(Case {
                name,
                target,
                workload: StreamGrpc,
                concurrency: c,
                compared: false,
            });
        }
    }
    for (name, target) in [
        ("W3 stream, each step stored, sync", FundiSync),
        ("W3 stream, each step stored, batched", FundiBatched),
    ] {
        for c in [1, 50] {
            cases.push(Case {
                name,
                target,
                workload: StreamEachStepStored,
                concurrency: c,
                compared: false,
            });
        }
    }
    cases
}

struct Urls {
    bare: String,
    sled: String,
    rust_sdk: String,
    rust_sdk_grpc: String,
    main: FundiUrls,
    compare: Option<FundiUrls>,
}

/// The servers of one fundi binary.
struct FundiUrls {
    sync: String,
    batched: String,
    memory: String,
    postgres: Option<String>,
    /// Two nodes on one schema of their own.
    nodes: Vec<String>,
    existing_task: String,
}

/// One fundi binary's three servers (sled `sync`, sled `batched`, memory store).
struct FundiServers {
    sync: Server,
    batched: Server,
    memory: Server,
    postgres: Option<Server>,
    /// Two nodes on one schema (`{schema}_nodes`), with `--postgres-url`.
    nodes: Vec<Server>,
}

impl FundiServers {
    fn start(
        binary: &std::path::Path,
        dir: &std::path::Path,
        credentials: &Credentials,
        postgres: Option<(&str, &str)>,
    ) -> anyhow::Result<FundiServers> {
        let start = |name: &str, store: &str, durability: &str| {
            Server::start(binary, &dir.join(name), store, durability, credentials)
        };
        Ok(FundiServers {
            sync: start("sync", "sled", "sync")?,
            batched: start("batched", "sled", "batched")?,
            memory: start("memory", "memory", "sync")?,
            postgres: match postgres {
                Some((url, schema)) => Some(Server::start_postgres(
                    binary,
                    &dir.join("postgres"),
                    url,
                    schema,
                    None,
                    credentials,
                )?),
                None => None,
            },
            nodes: match postgres {
                Some((url, schema)) => ["a", "b"]
                    .into_iter()
                    .map(|node| {
                        Server::start_postgres(
                            binary,
                            &dir.join(format!("node-{node}")),
                            url,
                            &format!("{schema}_nodes"),
                            Some(node),
                            credentials,
                        )
                    })
                    .collect::<anyhow::Result<_>>()?,
                None => Vec::new(),
            },
        })
    }

    async fn urls(&self, client: &reqwest::Client) -> anyhow::Result<FundiUrls> {
        Ok(FundiUrls {
            existing_task: workloads::create_task(client, &self.sync.url).await?,
            sync: self.sync.url.clone(),
            batched: self.batched.url.clone(),
            memory: self.memory.url.clone(),
            postgres: self.postgres.as_ref().map(|p| p.url.clone()),
            nodes: self.nodes.iter().map(|n| n.url.clone()).collect(),
        })
    }
}

async fn measure(
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
/// event's timestamp to its arrival at each of `args.fan_out` subscribers.
async fn measure_fan_out(
    args: &Args,
    urls: &Urls,
    client: &reqwest::Client,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let mut rows = Vec::new();
    if args.fan_out == 0 {
        return Ok(rows);
    }
    println!(
        "\n{:<26} {:>11} {:>15} {:>9} {:>9}",
        "fan-out on one task", "subscribers", "live events", "delay p50", "delay p99"
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
            let latencies = workloads::fan_out(client, url, args.fan_out).await?;
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
        rows.push(json!({"store": name, "subscribers": args.fan_out,
            "liveEventsReceived": received, "delayP50Ms": p50, "delayP99Ms": p99}));
    }
    Ok(rows)
}

/// W4 restart: a sled `sync` server with `args.restart_tasks` unfinished tasks is
/// killed (SIGKILL) and started again on the same data; measures the time until it
/// listens again, which is after recovery has decided every unfinished task.
async fn measure_restart(
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

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

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
    let dir = tempfile::tempdir()?;
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
    let compare = match &args.compare {
        Some(binary) => Some(FundiServers::start(
            binary,
            &dir.path().join("compare"),
            &credentials,
            None,
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
    let restart = measure_restart(&args, dir.path(), &client, &credentials).await?;
    let input_required = if args.input_required_tasks > 0 {
        Some(
            scale::input_required(
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
        "results": results, "fanOut": fan_out, "restart": restart,
        "inputRequired": input_required, "stored": stored});
    std::fs::write(&args.out, serde_json::to_string_pretty(&report)?)?;
    eprintln!("results written to {}", args.out.display());
    drop((fundi, compare, bare, sled_flush, rust_sdk, rust_sdk_grpc));
    if let Some(url) = &args.postgres_url {
        let (db, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        db.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; DROP SCHEMA IF EXISTS {schema}_nodes CASCADE"
        ))
        .await?;
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
