//! Instructions per operation, counted by valgrind's callgrind. A count is the same on a
//! busy machine as on an idle one, so a change of a few percent shows where rates (which
//! move by a tenth or more between repeats here) cannot; it does not see waiting, cache
//! misses or contention, which the rates do.
//!
//! Each workload is driven one request at a time against the in-memory store (the
//! store's own disk work is not what a count can judge), on two fresh servers: one gets
//! `ops` operations, the other `11 * ops`. The difference over `10 * ops` is the cost of
//! one operation, start-up and shutdown left out.

use std::path::Path;

use anyhow::{Context, bail};

use crate::server::{Credentials, Server};
use crate::workloads;

/// What is counted.
#[derive(Debug, Clone, Copy)]
enum Workload {
    /// W1: a blocking SendMessage.
    Send,
    /// W3: a stream of 20 posted progress steps.
    Stream,
    /// W3: a stream whose 20 steps are each stored before the next.
    StreamEachStepStored,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Send => "W1 send",
            Workload::Stream => "W3 stream",
            Workload::StreamEachStepStored => "W3 stream, each step stored",
        }
    }

    /// Operations in the small run (the large one has eleven times as many).
    fn ops(self) -> u64 {
        match self {
            Workload::Send => 100,
            Workload::Stream | Workload::StreamEachStepStored => 10,
        }
    }
}

/// Counts every workload on `fundi` (and `compare`) and prints instructions per
/// operation, with the ratio to `compare`. `scale` multiplies the operation counts
/// (1 for a measurement; the test suite runs a smaller one to keep the command working).
pub(crate) async fn report(
    fundi: &Path,
    compare: Option<&Path>,
    scale: f64,
    credentials: &Credentials,
    client: &reqwest::Client,
) -> anyhow::Result<serde_json::Value> {
    let mut rows = Vec::new();
    println!(
        "{:<32} {:>16} {:>16} {:>9}",
        "workload", "instructions/op", "compare", "ratio"
    );
    for workload in [
        Workload::Send,
        Workload::Stream,
        Workload::StreamEachStepStored,
    ] {
        let ops = ((workload.ops() as f64 * scale).round() as u64).max(1);
        let main = per_op(fundi, workload, ops, credentials, client).await?;
        let other = match compare {
            Some(binary) => Some(per_op(binary, workload, ops, credentials, client).await?),
            None => None,
        };
        let ratio = other.map(|other| main / other);
        println!(
            "{:<32} {:>16.0} {:>16} {:>9}",
            workload.name(),
            main,
            other.map_or("-".into(), |o| format!("{o:.0}")),
            ratio.map_or("-".into(), |r| format!("{r:.3}")),
        );
        rows.push(serde_json::json!({
            "workload": workload.name(),
            "opsCounted": 10 * ops,
            "instructionsPerOp": main,
            "compareInstructionsPerOp": other,
            "ratioToCompare": ratio,
        }));
    }
    Ok(serde_json::Value::Array(rows))
}

/// Instructions per operation of `workload` on `binary`.
async fn per_op(
    binary: &Path,
    workload: Workload,
    ops: u64,
    credentials: &Credentials,
    client: &reqwest::Client,
) -> anyhow::Result<f64> {
    let small = total(binary, workload, ops, credentials, client).await?;
    let large = total(binary, workload, 11 * ops, credentials, client).await?;
    if large <= small {
        bail!(
            "{}: {large} instructions for {} operations, {small} for {ops}",
            workload.name(),
            11 * ops
        );
    }
    Ok((large - small) as f64 / (10 * ops) as f64)
}

/// The instructions a fresh server spends from its start to its graceful stop, with
/// `ops` operations of `workload` in between.
async fn total(
    binary: &Path,
    workload: Workload,
    ops: u64,
    credentials: &Credentials,
    client: &reqwest::Client,
) -> anyhow::Result<u64> {
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("callgrind.out");
    let wrapper = [
        "valgrind".to_owned(),
        "--tool=callgrind".to_owned(),
        format!("--callgrind-out-file={}", out.display()),
    ];
    let server = Server::start_wrapped(
        &wrapper,
        binary,
        &dir.path().join("data"),
        "memory",
        "sync",
        credentials,
    )
    .context("starting fundi under valgrind (is valgrind installed? apt-get install valgrind)")?;
    for i in 0..ops {
        match workload {
            Workload::Send => workloads::send_blocking(client, &server.url, 0, i).await?,
            Workload::Stream => workloads::stream(client, &server.url, 0, i, false).await?,
            Workload::StreamEachStepStored => {
                workloads::stream(client, &server.url, 0, i, true).await?
            }
        };
    }
    server.stop_gracefully()?;
    let text =
        std::fs::read_to_string(&out).with_context(|| format!("reading {}", out.display()))?;
    text.lines()
        .find_map(|line| line.strip_prefix("summary:"))
        .and_then(|n| n.trim().parse().ok())
        .with_context(|| format!("no summary line in {}", out.display()))
}
