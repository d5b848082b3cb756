//! One measurement of an engine: simulated sends per second, and the process's CPU
//! time per send (all threads: the writers, the engine's own, the background flush).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::{Args, Kind, Values};

/// What one measurement found.
#[derive(Clone, Copy)]
pub(crate) struct Measured {
    pub(crate) rate: f64,
    /// CPU time per send, in microseconds.
    pub(crate) cpu_us: f64,
}

/// Simulated sends on a fresh store of `kind`, for `args.seconds`, and the time the
/// engine then takes to finish what it left for the background (`Engine::settle`).
pub(crate) fn measure(kind: Kind, args: &Args, values: &Arc<Values>) -> anyhow::Result<Measured> {
    let dir = tempfile::tempdir()?;
    let engine = kind.open(dir.path(), values)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().build()?;
    let done = Arc::new(AtomicU64::new(0));
    let duration = Duration::from_secs(args.seconds);
    let steps = args.steps;
    let cpu_before = process_cpu()?;
    let elapsed = runtime.block_on(async {
        let started = Instant::now();
        let writers: Vec<_> = (0..args.concurrency)
            .map(|_| {
                let (engine, values, done) = (engine.clone(), values.clone(), done.clone());
                tokio::spawn(async move {
                    while started.elapsed() < duration {
                        let id = uuid::Uuid::now_v7().to_string();
                        engine.create(id.as_bytes(), &values)?;
                        // The skill runs between the commits, on another task.
                        for seq in 1..=steps {
                            tokio::task::yield_now().await;
                            engine.step(id.as_bytes(), seq, &values)?;
                        }
                        tokio::task::yield_now().await;
                        engine.complete(id.as_bytes(), &values)?;
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    anyhow::Ok(())
                })
            })
            .collect();
        for writer in writers {
            writer.await??;
        }
        let settling = engine.clone();
        tokio::task::spawn_blocking(move || settling.settle()).await?;
        anyhow::Ok(started.elapsed())
    })?;
    let cpu = process_cpu()? - cpu_before;
    drop(engine);
    let sends = done.load(Ordering::Relaxed) as f64;
    Ok(Measured {
        rate: sends / elapsed.as_secs_f64(),
        cpu_us: cpu.as_secs_f64() * 1e6 / sends,
    })
}

/// The CPU time this process has used, user and system (`/proc/self/stat`, in the
/// kernel's fixed 100 ticks a second).
fn process_cpu() -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // The fields after the command's name, which ends with the last parenthesis.
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line; from here, field 3 (the
    // state) is the first.
    let tick = |n: usize| -> anyhow::Result<u64> {
        let field = fields
            .get(n)
            .ok_or_else(|| anyhow::anyhow!("/proc/self/stat is short"))?;
        Ok(field.parse()?)
    };
    Ok(Duration::from_millis((tick(11)? + tick(12)?) * 10))
}

/// The median of some measurements.
pub(crate) fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
