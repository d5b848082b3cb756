//! A closed-loop load generator: `concurrency` workers, each sending its next request as
//! soon as the previous one is answered (and checked), until the time is up.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one run measured.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    /// Operations completed (and checked).
    pub(crate) ops: u64,
    /// Units counted by the operations (requests, or SSE events).
    pub(crate) units: u64,
    pub(crate) elapsed: Duration,
    /// Latency of every operation.
    pub(crate) latencies: Vec<Duration>,
}

impl Sample {
    /// A sample of requests with these latencies over `elapsed`.
    pub(crate) fn from_latencies(latencies: Vec<Duration>, elapsed: Duration) -> Sample {
        let ops = latencies.len() as u64;
        Sample {
            ops,
            units: ops,
            elapsed,
            latencies,
        }
    }

    pub(crate) fn per_second(&self) -> f64 {
        self.units as f64 / self.elapsed.as_secs_f64()
    }

    pub(crate) fn percentile(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
        sorted[rank.min(sorted.len() - 1)]
    }
}

/// Runs `op` from `concurrency` workers for `duration`. `op` returns how many units it
/// counted (1 for a request, the number of events for a stream) or an error, which
/// stops the run: every answer is checked, none is sampled.
pub(crate) async fn run<F, Fut>(
    concurrency: usize,
    duration: Duration,
    op: F,
) -> anyhow::Result<Sample>
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<u64>> + Send,
{
    let op = Arc::new(op);
    let start = Instant::now();
    let deadline = start + duration;
    let workers: Vec<_> = (0..concurrency)
        .map(|worker| {
            let op = op.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut units = 0;
                let mut i = 0;
                while Instant::now() < deadline {
                    let began = Instant::now();
                    units += op(worker, i).await?;
                    latencies.push(began.elapsed());
                    i += 1;
                }
                anyhow::Ok((latencies, units))
            })
        })
        .collect();
    let mut sample = Sample {
        ops: 0,
        units: 0,
        elapsed: Duration::ZERO,
        latencies: Vec::new(),
    };
    for worker in workers {
        let (latencies, units) = worker.await??;
        sample.ops += latencies.len() as u64;
        sample.units += units;
        sample.latencies.extend(latencies);
    }
    sample.elapsed = start.elapsed();
    Ok(sample)
}

/// Runs `op(i)` once for every `i` in `0..count`, from `workers` workers that each take
/// the next index as they free up; the outputs, in no set order. An error stops the
/// run, as in [`run`].
pub(crate) async fn each<T, F, Fut>(count: usize, workers: usize, op: F) -> anyhow::Result<Vec<T>>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<T>> + Send,
{
    let op = Arc::new(op);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..workers)
        .map(|_| {
            let (op, next) = (op.clone(), next.clone());
            tokio::spawn(async move {
                let mut outputs = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= count {
                        return anyhow::Ok(outputs);
                    }
                    outputs.push(op(i).await?);
                }
            })
        })
        .collect();
    let mut outputs = Vec::with_capacity(count);
    for worker in workers {
        outputs.extend(worker.await??);
    }
    Ok(outputs)
}
