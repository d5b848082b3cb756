//! `fundi-engines`: what fundi's writes for one blocking send cost on sled, its store,
//! and on two other embedded stores, measured in the same run. Evidence for choosing
//! the store engine and its layout (see docs/performance.md, "Tried and dropped"), not a
//! fundi workload.
//!
//! Each simulated request makes the two commits a W1 send makes, with values of the
//! sizes fundi writes for one (an echo task with a short text):
//!
//! - creation: read the snapshot (none), then write it with the first events;
//! - completion: read the snapshot, then write it with all the events, and the two
//!   listing entries of a terminal task;
//! - with `--steps N`, N commits between the two, each of one progress event, as a
//!   skill that awaits each step makes (a W3 stream with each step stored makes 20):
//!   on sled each is written to a free slot of its own, as `SledStore` appends a commit.
//!
//! On sled the pieces are single-key writes in that order, compare-and-swap for the
//! snapshot, exactly as `SledStore` writes them for a task whose events fit in its
//! snapshot and which ends before the active set's sweep (sled runs everything under
//! one global lock once a process uses a batch or a transaction). On fjall and redb a
//! commit is one atomic batch or write transaction, as a store on them would write it,
//! with the events and the active-set marker under keys of their own. Every engine is
//! flushed in the background at most every 10 ms (fundi's default `batched` window);
//! none waits for the disk per commit.
//!
//! The fourth, `checkpointed`, is not an engine but a design on sled (`checkpointed`):
//! what a send would cost the store if its commits went to a log of fundi's own and
//! sled were written once per task, in the background.
//!
//! `cargo run --release -p fundi-bench --bin fundi-engines -- [--seconds 5]
//! [--repeats 3] [--concurrency 64]`

mod checkpointed;
mod measure;
mod on_fjall;
mod on_redb;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use measure::median;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The background flush window, as fundi's `batched` default.
const FLUSH_WINDOW: Duration = Duration::from_millis(10);

/// Value sizes of one W1 send (bytes), as fundi wrote them for a short text before it
/// compressed snapshots: the snapshot after creation and after completion (header,
/// listing entry and record JSON, without events), the events of each commit, and a
/// listing entry. Today a snapshot with its events is LZ4-compressed to about 0.3 of
/// that (`--value-percent 30` stands for it; the listing entries are
/// not compressed, so it undersizes them).
const SNAPSHOT_CREATED: usize = 640;
const SNAPSHOT_DONE: usize = 1_090;
const EVENTS_CREATED: usize = 700;
const EVENTS_DONE: usize = 585;
const INDEX_ENTRY: usize = 120;
/// A progress step's event: a working status with a short text.
const EVENTS_STEP: usize = 300;

#[derive(Parser)]
#[command(about = "fundi's per-send writes on sled, fjall and redb, measured in one run")]
struct Args {
    /// Seconds per measurement.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Repeats of every measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Concurrent writers (tokio tasks on a runtime with one worker per core, as
    /// fundi's server).
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Every value's size, in percent of fundi's JSON (to see what a more compact
    /// encoding would save; 30 for fundi's compressed snapshots).
    #[arg(long, default_value_t = 100)]
    value_percent: usize,
    /// Leave out a terminal task's two listing entries (what a layout without them as
    /// keys of their own would save).
    #[arg(long)]
    no_listing: bool,
    /// Progress commits of each task between its creation and its completion.
    #[arg(long, default_value_t = 0)]
    steps: u64,
    /// The engines to measure (default: all; the first one is the `/ first` column's base).
    #[arg(long, value_delimiter = ',')]
    engines: Vec<Kind>,
}

/// One store engine, written to the way a fundi store on it would write.
trait Engine: Send + Sync {
    fn create(&self, id: &[u8], values: &Values) -> anyhow::Result<()>;
    fn complete(&self, id: &[u8], values: &Values) -> anyhow::Result<()>;
    /// The `seq`th progress commit (from 1) of a task created and not completed.
    fn step(&self, id: &[u8], seq: u64, values: &Values) -> anyhow::Result<()>;
    /// Returns once the work a commit left for the background is done (nothing to
    /// wait for where a commit is whole when it returns; the background flush aside).
    fn settle(&self) {}
}

/// The bytes written, made once (text-like, so that no engine gains from compressing
/// repeated bytes more than it would on JSON).
struct Values {
    snapshot_created: Vec<u8>,
    snapshot_done: Vec<u8>,
    events_created: Vec<u8>,
    events_done: Vec<u8>,
    entry: Vec<u8>,
    step: Vec<u8>,
    /// Whether a terminal task's two listing entries are written.
    listing: bool,
}

impl Values {
    fn new(percent: usize, listing: bool) -> Values {
        let text = |len: usize| {
            let len = len * percent / 100;
            let mut bytes = Vec::with_capacity(len + 36);
            while bytes.len() < len {
                bytes.extend_from_slice(uuid::Uuid::new_v4().to_string().as_bytes());
            }
            bytes.truncate(len);
            bytes
        };
        Values {
            snapshot_created: text(SNAPSHOT_CREATED),
            snapshot_done: text(SNAPSHOT_DONE),
            events_created: text(EVENTS_CREATED),
            events_done: text(EVENTS_DONE),
            entry: text(INDEX_ENTRY),
            step: text(EVENTS_STEP),
            listing,
        }
    }
}

fn key(prefix: &[u8], id: &[u8], suffix: &[u8]) -> Vec<u8> {
    [prefix, id, suffix].concat()
}

/// The listing keys of a terminal task (none with `--no-listing`); their time part is
/// the id's (a v7 uuid starts with its timestamp).
fn listing_keys(id: &[u8], values: &Values) -> Vec<Vec<u8>> {
    match values.listing {
        true => vec![key(b"U", &id[..13], id), key(b"C", id, id)],
        false => Vec::new(),
    }
}

struct Sled {
    db: sled::Db,
}

impl Sled {
    fn open(dir: &Path) -> anyhow::Result<Sled> {
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(256 * 1024 * 1024)
            .flush_every_ms(Some(FLUSH_WINDOW.as_millis() as u64))
            .open()?;
        Ok(Sled { db })
    }
}

impl Engine for Sled {
    fn create(&self, id: &[u8], values: &Values) -> anyhow::Result<()> {
        let snapshot = key(b"T", id, b"");
        anyhow::ensure!(self.db.get(&snapshot)?.is_none(), "task exists");
        let value = [&values.snapshot_created[..], &values.events_created].concat();
        self.db
            .compare_and_swap(snapshot, None::<&[u8]>, Some(value))?
            .map_err(|_| anyhow::anyhow!("task created twice"))?;
        Ok(())
    }

    fn complete(&self, id: &[u8], values: &Values) -> anyhow::Result<()> {
        let snapshot = key(b"T", id, b"");
        let old = self.db.get(&snapshot)?.context("no snapshot")?;
        let value = [
            &values.snapshot_done[..],
            &values.events_created,
            &values.events_done,
        ]
        .concat();
        self.db
            .compare_and_swap(snapshot, Some(old), Some(value))?
            .map_err(|_| anyhow::anyhow!("snapshot changed"))?;
        for listing in listing_keys(id, values) {
            self.db.insert(listing, values.entry.as_slice())?;
        }
        Ok(())
    }

    fn step(&self, id: &[u8], seq: u64, values: &Values) -> anyhow::Result<()> {
        let slot = key(b"E", id, &seq.to_be_bytes());
        self.db
            .compare_and_swap(slot, None::<&[u8]>, Some(values.step.as_slice()))?
            .map_err(|_| anyhow::anyhow!("step written twice"))?;
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq, clap::ValueEnum)]
enum Kind {
    Sled,
    Fjall,
    Redb,
    Checkpointed,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Sled, Kind::Fjall, Kind::Redb, Kind::Checkpointed];

    fn name(self) -> &'static str {
        match self {
            Kind::Sled => "sled (as SledStore writes)",
            Kind::Fjall => "fjall (one batch per commit)",
            Kind::Redb => "redb (one transaction per commit)",
            Kind::Checkpointed => "sled behind a log, checkpointed",
        }
    }

    fn open(self, dir: &Path, values: &Arc<Values>) -> anyhow::Result<Arc<dyn Engine>> {
        Ok(match self {
            Kind::Sled => Arc::new(Sled::open(dir)?),
            Kind::Fjall => Arc::new(on_fjall::Fjall::open(dir)?),
            Kind::Redb => Arc::new(on_redb::Redb::open(dir)?),
            Kind::Checkpointed => Arc::new(checkpointed::Checkpointed::open(dir, values.clone())?),
        })
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.repeats > 0 && args.concurrency > 0 && args.seconds > 0);
    anyhow::ensure!(args.value_percent > 0, "--value-percent must be above 0");
    let values = Arc::new(Values::new(args.value_percent, !args.no_listing));
    let kinds: Vec<Kind> = if args.engines.is_empty() {
        Kind::ALL.to_vec()
    } else {
        args.engines.clone()
    };
    let mut runs = vec![Vec::new(); kinds.len()];
    for repeat in 1..=args.repeats {
        // Interleaved, so that a noisy stretch of the machine hits every engine.
        for (n, &kind) in kinds.iter().enumerate() {
            eprintln!("[{repeat}/{}] {}", args.repeats, kind.name());
            runs[n].push(measure::measure(kind, &args, &values)?);
        }
    }
    let rates: Vec<f64> = runs
        .iter()
        .map(|r| median(r.iter().map(|m| m.rate)))
        .collect();
    let cpu: Vec<f64> = runs
        .iter()
        .map(|r| median(r.iter().map(|m| m.cpu_us)))
        .collect();
    println!(
        "{:<36} {:>10} {:>8} {:>13} {:>8}",
        format!(
            "engine (c={}, values {}%{}{})",
            args.concurrency,
            args.value_percent,
            match args.steps {
                0 => String::new(),
                n => format!(", {n} steps"),
            },
            if args.no_listing { ", no listing" } else { "" }
        ),
        "sends/s",
        "/ first",
        "CPU µs/send",
        "/ first"
    );
    for (n, kind) in kinds.iter().enumerate() {
        println!(
            "{:<36} {:>10.0} {:>8.2} {:>13.1} {:>8.2}",
            kind.name(),
            rates[n],
            rates[n] / rates[0],
            cpu[n],
            cpu[n] / cpu[0]
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each engine really writes and reads what the measurement says: a send completes
    /// only after its creation, and a task is created once.
    #[test]
    fn every_engine_runs_the_commits_of_a_send() {
        let values = Arc::new(Values::new(100, true));
        for kind in Kind::ALL {
            let dir = tempfile::tempdir().unwrap();
            let engine = kind.open(dir.path(), &values).unwrap();
            let id = uuid::Uuid::now_v7().to_string();
            let id = id.as_bytes();
            assert!(
                engine.complete(id, &values).is_err(),
                "{}: completed a task never created",
                kind.name()
            );
            engine.create(id, &values).unwrap();
            assert!(
                engine.create(id, &values).is_err(),
                "{}: created a task twice",
                kind.name()
            );
            engine.step(id, 1, &values).unwrap();
            engine.complete(id, &values).unwrap();
        }
    }
}
