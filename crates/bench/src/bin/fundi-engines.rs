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
//!   listing entries of a terminal task.
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
//! `cargo run --release -p fundi-bench --bin fundi-engines -- [--seconds 5]
//! [--repeats 3] [--concurrency 64]`

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use redb::ReadableTable;

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
    /// The engines to measure (default: all; the first one is the `/ first` column's base).
    #[arg(long, value_delimiter = ',')]
    engines: Vec<Kind>,
}

/// One store engine, written to the way a fundi store on it would write.
trait Engine: Send + Sync {
    fn create(&self, id: &[u8], values: &Values) -> anyhow::Result<()>;
    fn complete(&self, id: &[u8], values: &Values) -> anyhow::Result<()>;
}

/// The bytes written, made once (text-like, so that no engine gains from compressing
/// repeated bytes more than it would on JSON).
struct Values {
    snapshot_created: Vec<u8>,
    snapshot_done: Vec<u8>,
    events_created: Vec<u8>,
    events_done: Vec<u8>,
    entry: Vec<u8>,
}

impl Values {
    fn new(percent: usize) -> Values {
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
        }
    }
}

fn key(prefix: &[u8], id: &[u8], suffix: &[u8]) -> Vec<u8> {
    [prefix, id, suffix].concat()
}

/// The listing keys' time part: the id's (a v7 uuid starts with its timestamp).
fn listing_keys(id: &[u8]) -> (Vec<u8>, Vec<u8>) {
    (key(b"U", &id[..13], id), key(b"C", id, id))
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
        let (updated, context) = listing_keys(id);
        self.db.insert(updated, values.entry.as_slice())?;
        self.db.insert(context, values.entry.as_slice())?;
        Ok(())
    }
}

struct Fjall {
    keyspace: fjall::Keyspace,
    tasks: fjall::PartitionHandle,
    events: fjall::PartitionHandle,
    active: fjall::PartitionHandle,
    listing: fjall::PartitionHandle,
}

impl Fjall {
    fn open(dir: &Path) -> anyhow::Result<Fjall> {
        let keyspace = fjall::Config::new(dir)
            .cache_size(256 * 1024 * 1024)
            .fsync_ms(Some(FLUSH_WINDOW.as_millis() as u16))
            .manual_journal_persist(true)
            .open()?;
        let partition =
            |name: &str| keyspace.open_partition(name, fjall::PartitionCreateOptions::default());
        Ok(Fjall {
            tasks: partition("tasks")?,
            events: partition("events")?,
            active: partition("active")?,
            listing: partition("listing")?,
            keyspace,
        })
    }
}

impl Engine for Fjall {
    fn create(&self, id: &[u8], values: &Values) -> anyhow::Result<()> {
        anyhow::ensure!(self.tasks.get(id)?.is_none(), "task exists");
        let mut batch = self.keyspace.batch();
        batch.insert(&self.active, id, b"");
        let events = key(b"", id, &1u64.to_be_bytes());
        batch.insert(&self.events, events, values.events_created.as_slice());
        batch.insert(&self.tasks, id, values.snapshot_created.as_slice());
        batch.commit()?;
        Ok(())
    }

    fn complete(&self, id: &[u8], values: &Values) -> anyhow::Result<()> {
        self.tasks.get(id)?.context("no snapshot")?;
        let mut batch = self.keyspace.batch();
        let events = key(b"", id, &3u64.to_be_bytes());
        batch.insert(&self.events, events, values.events_done.as_slice());
        batch.insert(&self.tasks, id, values.snapshot_done.as_slice());
        let (updated, context) = listing_keys(id);
        batch.insert(&self.listing, updated, values.entry.as_slice());
        batch.insert(&self.listing, context, values.entry.as_slice());
        batch.remove(&self.active, id);
        batch.commit()?;
        Ok(())
    }
}

const TASKS: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("tasks");
const EVENTS: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("events");
const ACTIVE: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("active");
const LISTING: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("listing");

struct Redb {
    db: Arc<redb::Database>,
    stop: Arc<AtomicBool>,
}

impl Redb {
    /// Commits are not durable (`Durability::None`); a thread makes everything durable
    /// every window (redb also frees pages only then).
    fn open(dir: &Path) -> anyhow::Result<Redb> {
        let db = Arc::new(redb::Database::create(dir.join("redb"))?);
        let stop = Arc::new(AtomicBool::new(false));
        let (flushed, stopped) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(FLUSH_WINDOW);
                if stopped.load(Ordering::Relaxed) {
                    break;
                }
                let durable = || -> anyhow::Result<()> { Ok(flushed.begin_write()?.commit()?) };
                if let Err(e) = durable() {
                    eprintln!("redb: a durable commit failed: {e}");
                }
            }
        });
        Ok(Redb { db, stop })
    }

    fn write(
        &self,
        apply: impl FnOnce(&redb::WriteTransaction) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(redb::Durability::None);
        apply(&txn)?;
        txn.commit()?;
        Ok(())
    }
}

impl Drop for Redb {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Engine for Redb {
    fn create(&self, id: &[u8], values: &Values) -> anyhow::Result<()> {
        self.write(|txn| {
            let mut tasks = txn.open_table(TASKS)?;
            anyhow::ensure!(tasks.get(id)?.is_none(), "task exists");
            txn.open_table(ACTIVE)?.insert(id, b"".as_slice())?;
            let events = key(b"", id, &1u64.to_be_bytes());
            txn.open_table(EVENTS)?
                .insert(events.as_slice(), values.events_created.as_slice())?;
            tasks.insert(id, values.snapshot_created.as_slice())?;
            Ok(())
        })
    }

    fn complete(&self, id: &[u8], values: &Values) -> anyhow::Result<()> {
        self.write(|txn| {
            let mut tasks = txn.open_table(TASKS)?;
            anyhow::ensure!(tasks.get(id)?.is_some(), "no snapshot");
            let events = key(b"", id, &3u64.to_be_bytes());
            txn.open_table(EVENTS)?
                .insert(events.as_slice(), values.events_done.as_slice())?;
            tasks.insert(id, values.snapshot_done.as_slice())?;
            let (updated, context) = listing_keys(id);
            let mut listing = txn.open_table(LISTING)?;
            listing.insert(updated.as_slice(), values.entry.as_slice())?;
            listing.insert(context.as_slice(), values.entry.as_slice())?;
            txn.open_table(ACTIVE)?.remove(id)?;
            Ok(())
        })
    }
}

#[derive(Clone, Copy, PartialEq, clap::ValueEnum)]
enum Kind {
    Sled,
    Fjall,
    Redb,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Sled, Kind::Fjall, Kind::Redb];

    fn name(self) -> &'static str {
        match self {
            Kind::Sled => "sled (as SledStore writes)",
            Kind::Fjall => "fjall (one batch per commit)",
            Kind::Redb => "redb (one transaction per commit)",
        }
    }

    fn open(self, dir: &Path) -> anyhow::Result<Arc<dyn Engine>> {
        Ok(match self {
            Kind::Sled => Arc::new(Sled::open(dir)?),
            Kind::Fjall => Arc::new(Fjall::open(dir)?),
            Kind::Redb => Arc::new(Redb::open(dir)?),
        })
    }
}

/// Simulated sends per second on a fresh store of `kind`.
fn measure(kind: Kind, args: &Args, values: &Arc<Values>) -> anyhow::Result<f64> {
    let dir = tempfile::tempdir()?;
    let engine = kind.open(dir.path())?;
    let runtime = tokio::runtime::Builder::new_multi_thread().build()?;
    let done = Arc::new(AtomicU64::new(0));
    let duration = Duration::from_secs(args.seconds);
    let elapsed = runtime.block_on(async {
        let started = Instant::now();
        let writers: Vec<_> = (0..args.concurrency)
            .map(|_| {
                let (engine, values, done) = (engine.clone(), values.clone(), done.clone());
                tokio::spawn(async move {
                    while started.elapsed() < duration {
                        let id = uuid::Uuid::now_v7().to_string();
                        engine.create(id.as_bytes(), &values)?;
                        // The skill runs between the two commits, on another task.
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
        anyhow::Ok(started.elapsed())
    })?;
    drop(engine);
    Ok(done.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64())
}

fn median(mut rates: Vec<f64>) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.repeats > 0 && args.concurrency > 0 && args.seconds > 0);
    anyhow::ensure!(args.value_percent > 0, "--value-percent must be above 0");
    let values = Arc::new(Values::new(args.value_percent));
    let kinds: Vec<Kind> = if args.engines.is_empty() {
        Kind::ALL.to_vec()
    } else {
        args.engines.clone()
    };
    let mut rates = vec![Vec::new(); kinds.len()];
    for repeat in 1..=args.repeats {
        // Interleaved, so that a noisy stretch of the machine hits every engine.
        for (n, &kind) in kinds.iter().enumerate() {
            eprintln!("[{repeat}/{}] {}", args.repeats, kind.name());
            rates[n].push(measure(kind, &args, &values)?);
        }
    }
    let medians: Vec<f64> = rates.into_iter().map(median).collect();
    println!(
        "{:<36} {:>14} {:>8}",
        format!(
            "engine (c={}, values {}%)",
            args.concurrency, args.value_percent
        ),
        "sends/s",
        "/ first"
    );
    for (kind, rate) in kinds.iter().zip(&medians) {
        println!(
            "{:<36} {:>14.0} {:>8.2}",
            kind.name(),
            rate,
            rate / medians[0]
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
    fn every_engine_runs_the_two_commits_of_a_send() {
        let values = Values::new(100);
        for kind in Kind::ALL {
            let dir = tempfile::tempdir().unwrap();
            let engine = kind.open(dir.path()).unwrap();
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
            engine.complete(id, &values).unwrap();
        }
    }
}
