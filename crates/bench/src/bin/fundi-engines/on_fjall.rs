//! fjall, an LSM tree: a commit is one atomic batch across partitions, as a store on
//! it would write it.

use std::path::Path;

use anyhow::Context;

use crate::{Engine, FLUSH_WINDOW, Values, key, listing_keys};

pub(crate) struct Fjall {
    keyspace: fjall::Keyspace,
    tasks: fjall::PartitionHandle,
    events: fjall::PartitionHandle,
    active: fjall::PartitionHandle,
    listing: fjall::PartitionHandle,
}

impl Fjall {
    pub(crate) fn open(dir: &Path) -> anyhow::Result<Fjall> {
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
        for listing in listing_keys(id, values) {
            batch.insert(&self.listing, listing, values.entry.as_slice());
        }
        batch.remove(&self.active, id);
        batch.commit()?;
        Ok(())
    }

    fn step(&self, id: &[u8], seq: u64, values: &Values) -> anyhow::Result<()> {
        let events = key(b"s", id, &seq.to_be_bytes());
        self.events.insert(events, values.step.as_slice())?;
        Ok(())
    }
}
