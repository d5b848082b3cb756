//! redb, a copy-on-write B-tree: a commit is one write transaction, not durable on its
//! own; a thread makes everything durable every flush window.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use redb::ReadableTable;

use crate::{Engine, FLUSH_WINDOW, Values, key, listing_keys};

const TASKS: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("tasks");
const EVENTS: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("events");
const ACTIVE: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("active");
const LISTING: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("listing");

pub(crate) struct Redb {
    db: Arc<redb::Database>,
    stop: Arc<AtomicBool>,
}

impl Redb {
    /// Commits are not durable (`Durability::None`); a thread makes everything durable
    /// every window (redb also frees pages only then).
    pub(crate) fn open(dir: &Path) -> anyhow::Result<Redb> {
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
            let mut listing = txn.open_table(LISTING)?;
            for key in listing_keys(id, values) {
                listing.insert(key.as_slice(), values.entry.as_slice())?;
            }
            txn.open_table(ACTIVE)?.remove(id)?;
            Ok(())
        })
    }

    fn step(&self, id: &[u8], seq: u64, values: &Values) -> anyhow::Result<()> {
        self.write(|txn| {
            let events = key(b"s", id, &seq.to_be_bytes());
            txn.open_table(EVENTS)?
                .insert(events.as_slice(), values.step.as_slice())?;
            Ok(())
        })
    }
}
