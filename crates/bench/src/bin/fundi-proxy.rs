//! What chaos-run's proxy costs when it injects nothing: bulk throughput and request
//! latency through the proxy, as ratios to the same traffic sent directly and through a
//! bare proxy (tokio's `copy_bidirectional`, the floor of any proxy in user space),
//! measured in the same run, rounds interleaved (direct, bare, proxy, direct, ...) so
//! that the machine's noise falls on all alike.
//!
//! `cargo run --release -p fundi-bench --bin fundi-proxy` (`--mb`, `--transfers`,
//! `--requests` scale it). Figures and what they show: docs/performance.md.

use fundi_runtime::Access;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use fundi_ops::chaos::MemoryChaosLog;
use fundi_ops::issues::MemoryIssueStore;
use fundi_runtime::{
    MemoryStore, Message, Part, PartContent, Runtime, RuntimeConfig, RuntimeHandle, SubmitRequest,
    TaskId,
};
use fundi_skills::{ChaosConfig, ChaosRunSkill};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(about = "chaos-run's proxy with no faults, against direct traffic")]
struct Args {
    /// MB each bulk transfer sends.
    #[arg(long, default_value_t = 256)]
    mb: usize,
    /// Bulk transfers per path (direct, proxy).
    #[arg(long, default_value_t = 8)]
    transfers: usize,
    /// Requests per path per round, on one kept-alive connection and one connection
    /// each.
    #[arg(long, default_value_t = 2000)]
    requests: usize,
    /// Rounds of requests per path.
    #[arg(long, default_value_t = 4)]
    rounds: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bulk = sending_upstream(args.mb * 1_000_000).await?;
    let http = echo_http_upstream().await?;
    let runtime = runtime(&[bulk.to_string(), http.to_string()]).await?;
    let bulk_proxy = start(&runtime, &bulk.to_string()).await?;
    let http_proxy = start(&runtime, &http.to_string()).await?;
    let (bulk_bare, http_bare) = (bare_proxy(bulk).await?, bare_proxy(http).await?);

    let (mut direct, mut bare, mut proxied) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..args.transfers {
        direct.push(transfer(bulk, args.mb).await?);
        bare.push(transfer(bulk_bare, args.mb).await?);
        proxied.push(transfer(bulk_proxy.1, args.mb).await?);
    }
    let (direct_mbps, bare_mbps) = (median(&mut direct), median(&mut bare));
    let proxy_mbps = median(&mut proxied);
    println!(
        "bulk: direct {direct_mbps:.0} MB/s, bare proxy {bare_mbps:.0} MB/s, chaos-run proxy \
         {proxy_mbps:.0} MB/s; ratio to direct {:.3}, to the bare proxy {:.3}",
        proxy_mbps / direct_mbps,
        proxy_mbps / bare_mbps
    );
    let mut results = json!({
        "bulk": {"directMBps": direct_mbps, "bareMBps": bare_mbps, "proxyMBps": proxy_mbps,
                 "ratio": proxy_mbps / direct_mbps, "ratioToBare": proxy_mbps / bare_mbps},
    });
    for (name, fresh) in [("keptAlive", false), ("newConnections", true)] {
        let (mut direct, mut bare, mut proxied) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..args.rounds {
            direct.extend(requests(http, args.requests, fresh).await?);
            bare.extend(requests(http_bare, args.requests, fresh).await?);
            proxied.extend(requests(http_proxy.1, args.requests, fresh).await?);
        }
        let (d50, d99) = (percentile(&mut direct, 50.0), percentile(&mut direct, 99.0));
        let b99 = percentile(&mut bare, 99.0);
        let (p50, p99) = (
            percentile(&mut proxied, 50.0),
            percentile(&mut proxied, 99.0),
        );
        println!(
            "requests ({name}): direct p50 {d50:.3} ms p99 {d99:.3} ms; bare proxy p99 \
             {b99:.3} ms; chaos-run proxy p50 {p50:.3} ms p99 {p99:.3} ms; added p99 {:.3} ms",
            p99 - d99
        );
        results[name] = json!({"directP50Ms": d50, "directP99Ms": d99, "bareP99Ms": b99,
                               "proxyP50Ms": p50, "proxyP99Ms": p99, "addedP99Ms": p99 - d99});
    }
    for (id, _) in [bulk_proxy, http_proxy] {
        runtime.cancel(&id, Access::Any).await?;
    }
    println!("{results}");
    Ok(())
}

async fn runtime(targets: &[String]) -> anyhow::Result<RuntimeHandle> {
    let mut config = ChaosConfig::default();
    config.allowed_targets = targets.to_vec();
    let skill = ChaosRunSkill::new(
        config,
        Arc::new(MemoryIssueStore::new()),
        Arc::new(MemoryChaosLog::new()),
    )
    .map_err(anyhow::Error::msg)?;
    Ok(Runtime::builder()
        .shared_store(Arc::new(MemoryStore::new()))
        .config({
            let mut runtime_config = RuntimeConfig::default();
            runtime_config.approvals = Default::default();
            runtime_config
        })
        .skill(skill)
        .start()
        .await?)
}

/// A run with one long phase and no faults; its task and the proxy's address.
async fn start(runtime: &RuntimeHandle, target: &str) -> anyhow::Result<(TaskId, SocketAddr)> {
    let data = json!({"target": target, "plan": [{"name": "clean", "durationMs": 600_000}]});
    let request = SubmitRequest::new(Message::user(vec![Part::data(data)]));
    let id = runtime.submit(request).await?.task.id;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let task = runtime.get(&id, None, Access::Any).await?;
        let listen = task
            .artifacts
            .iter()
            .find_map(|a| match &a.parts[0].content {
                PartContent::Data(data) if a.artifact_id == "chaos-proxy" => {
                    data["listen"].as_str().map(str::to_owned)
                }
                _ => None,
            });
        if let Some(listen) = listen {
            return Ok((id, listen.parse()?));
        }
        if task.status.state.is_terminal() || Instant::now() > deadline {
            bail!("the proxy did not start: {:?}", task.status);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A proxy with nothing in it: each connection copied both ways by tokio.
async fn bare_proxy(to: SocketAddr) -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(mut upstream) = TcpStream::connect(to).await else {
                    return;
                };
                let _ = (client.set_nodelay(true), upstream.set_nodelay(true));
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            });
        }
    });
    Ok(addr)
}

/// Sends `bytes` on every connection.
async fn sending_upstream(bytes: usize) -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let block = vec![b'x'; 1 << 20];
        let block: Arc<[u8]> = block.into();
        while let Ok((mut stream, _)) = listener.accept().await {
            let block = block.clone();
            tokio::spawn(async move {
                let mut left = bytes;
                while left > 0 {
                    let n = left.min(block.len());
                    if stream.write_all(&block[..n]).await.is_err() {
                        return;
                    }
                    left -= n;
                }
                let _ = stream.shutdown().await;
            });
        }
    });
    Ok(addr)
}

/// Answers `GET /` with "ok", keeping connections alive unless asked not to.
async fn echo_http_upstream() -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(addr)
}

/// Reads a whole transfer from `to`: MB/s.
async fn transfer(to: SocketAddr, mb: usize) -> anyhow::Result<f64> {
    let started = Instant::now();
    let mut stream = TcpStream::connect(to).await?;
    let mut buffer = vec![0; 1 << 16];
    let mut got = 0;
    loop {
        let n = stream.read(&mut buffer).await?;
        if n == 0 {
            break;
        }
        got += n;
    }
    if got != mb * 1_000_000 {
        bail!(
            "a transfer through {to} got {got} bytes of {}",
            mb * 1_000_000
        );
    }
    Ok(mb as f64 / started.elapsed().as_secs_f64())
}

/// `count` GETs, one after the other: each one's latency in ms.
async fn requests(to: SocketAddr, count: usize, fresh: bool) -> anyhow::Result<Vec<f64>> {
    let mut builder = reqwest::Client::builder().no_proxy();
    if fresh {
        builder = builder.pool_max_idle_per_host(0);
    }
    let client = builder.build()?;
    let url = format!("http://{to}/");
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        let body = client.get(&url).send().await?.text().await?;
        if body != "ok" {
            bail!("{url} answered {body:?}");
        }
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(latencies)
}

fn median(values: &mut [f64]) -> f64 {
    percentile(values, 50.0)
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * values.len() as f64).ceil().max(1.0) as usize;
    values
        .get(rank.min(values.len()) - 1)
        .copied()
        .context("no values")
        .unwrap_or(f64::NAN)
}
