//! sled behind a log of fundi's own, as docs/performance.md ("Toward a durable send at
//! the memory store's cost") lays the design out: a commit is appended to the log and
//! applied to the task's state in memory; sled is written by a checkpointer, once per
//! task that ended since the last checkpoint (its final snapshot with its events, and
//! its two listing entries, inserted blind: nothing is read or compared).
//!
//! As with the other engines, nothing waits for the disk per commit: a thread writes
//! and syncs the log, and checkpoints, every flush window. The log's entries carry no
//! checksum here (a CRC-32 of a commit's kilobyte is a few hundred instructions).

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::{Engine, FLUSH_WINDOW, Sled, Values, key, listing_keys};

/// What the hot path and the checkpointer share.
#[derive(Default)]
struct Shared {
    /// Unfinished tasks: their progress commits so far (how many).
    held: Mutex<HashMap<Vec<u8>, u64>>,
    /// Log entries not written yet.
    log: Mutex<Vec<u8>>,
    /// Tasks that ended since the last checkpoint, with their progress commits.
    ended: Mutex<Vec<(Vec<u8>, u64)>>,
    /// Tasks that ended, and those of them written to sled.
    ended_total: AtomicU64,
    checkpointed: AtomicU64,
}

pub(crate) struct Checkpointed {
    sled: Arc<Sled>,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    checkpointer: Option<std::thread::JoinHandle<()>>,
}

impl Checkpointed {
    pub(crate) fn open(dir: &Path, values: Arc<Values>) -> anyhow::Result<Checkpointed> {
        let sled = Arc::new(Sled::open(&dir.join("sled"))?);
        let mut log = File::create(dir.join("log"))?;
        let shared = Arc::new(Shared::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (db, background, stopped) = (sled.clone(), shared.clone(), stop.clone());
        let checkpointer = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                std::thread::sleep(FLUSH_WINDOW);
                let mut checkpoint = || -> anyhow::Result<()> {
                    let entries = std::mem::take(&mut *background.log.lock().unwrap());
                    log.write_all(&entries)?;
                    log.sync_data()?;
                    let ended = std::mem::take(&mut *background.ended.lock().unwrap());
                    for (id, steps) in ended {
                        write_final(&db.db, &id, steps, &values)?;
                        background.checkpointed.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                };
                if let Err(e) = checkpoint() {
                    eprintln!("checkpointed: a checkpoint failed: {e}");
                }
            }
        });
        Ok(Checkpointed {
            sled,
            shared,
            stop,
            checkpointer: Some(checkpointer),
        })
    }

    fn append(&self, id: &[u8], parts: &[&[u8]]) {
        let mut log = self.shared.log.lock().unwrap();
        log.extend_from_slice(&(id.len() as u32).to_le_bytes());
        log.extend_from_slice(id);
        for part in parts {
            log.extend_from_slice(&(part.len() as u32).to_le_bytes());
            log.extend_from_slice(part);
        }
    }
}

impl Drop for Checkpointed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(checkpointer) = self.checkpointer.take() {
            let _ = checkpointer.join();
        }
    }
}

/// A checkpoint of a task that ended: its last snapshot, its events (in the snapshot
/// while they fit in the 4 KiB `SledStore` inlines, else in one value of their own),
/// and its listing entries.
fn write_final(db: &sled::Db, id: &[u8], steps: u64, values: &Values) -> anyhow::Result<()> {
    let mut events = [&values.events_created[..], &values.events_done].concat();
    for _ in 0..steps {
        events.extend_from_slice(&values.step);
    }
    let snapshot = match events.len() <= 4 * 1024 {
        true => [&values.snapshot_done[..], &events].concat(),
        false => {
            db.insert(key(b"E", id, &1u64.to_be_bytes()), events)?;
            values.snapshot_done.clone()
        }
    };
    db.insert(key(b"T", id, b""), snapshot)?;
    for listing in listing_keys(id, values) {
        db.insert(listing, values.entry.as_slice())?;
    }
    Ok(())
}

impl Engine for Checkpointed {
    fn create(&self, id: &[u8], values: &Values) -> anyhow::Result<()> {
        {
            let mut held = self.shared.held.lock().unwrap();
            anyhow::ensure!(!held.contains_key(id), "task exists");
            // An id not held may be of a task that ended: sled answers for those.
            anyhow::ensure!(
                !self.sled.db.contains_key(key(b"T", id, b""))?,
                "task exists"
            );
            held.insert(id.to_vec(), 0);
        }
        self.append(id, &[&values.snapshot_created, &values.events_created]);
        Ok(())
    }

    fn complete(&self, id: &[u8], values: &Values) -> anyhow::Result<()> {
        let steps = self.shared.held.lock().unwrap().remove(id);
        let steps = steps.ok_or_else(|| anyhow::anyhow!("no snapshot"))?;
        self.append(id, &[&values.snapshot_done, &values.events_done]);
        self.shared.ended.lock().unwrap().push((id.to_vec(), steps));
        self.shared.ended_total.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn step(&self, id: &[u8], seq: u64, values: &Values) -> anyhow::Result<()> {
        {
            let mut held = self.shared.held.lock().unwrap();
            let steps = held
                .get_mut(id)
                .ok_or_else(|| anyhow::anyhow!("no snapshot"))?;
            anyhow::ensure!(*steps + 1 == seq, "step {seq} out of turn");
            *steps = seq;
        }
        self.append(id, &[&values.step]);
        Ok(())
    }

    /// Waits until every task that ended is in sled: a measurement counts the
    /// checkpointer's backlog in its time.
    fn settle(&self) {
        let shared = &self.shared;
        while shared.checkpointed.load(Ordering::Relaxed)
            < shared.ended_total.load(Ordering::Relaxed)
        {
            std::thread::sleep(FLUSH_WINDOW / 10);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// A task that ended reaches sled at a checkpoint, and its id is then taken.
    #[test]
    fn an_ended_task_is_checkpointed_into_sled() {
        let values = Arc::new(Values::new(100, true));
        let dir = tempfile::tempdir().unwrap();
        let engine = Checkpointed::open(dir.path(), values.clone()).unwrap();
        let id = uuid::Uuid::now_v7().to_string();
        let id = id.as_bytes();
        engine.create(id, &values).unwrap();
        assert!(engine.step(id, 2, &values).is_err(), "a step out of turn");
        for seq in 1..=20 {
            engine.step(id, seq, &values).unwrap();
        }
        engine.complete(id, &values).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !engine.sled.db.contains_key(key(b"T", id, b"")).unwrap() {
            assert!(Instant::now() < deadline, "never checkpointed");
            std::thread::sleep(FLUSH_WINDOW);
        }
        assert!(engine.create(id, &values).is_err(), "created twice");
        // Twenty steps' events are past what a snapshot carries: a value of their own.
        let events = engine
            .sled
            .db
            .get(key(b"E", id, &1u64.to_be_bytes()))
            .unwrap();
        assert_eq!(events.map(|e| e.len()), Some(700 + 585 + 20 * 300));
        let log = std::fs::metadata(dir.path().join("log")).unwrap().len();
        assert!(log > 0, "nothing was logged");
    }
}
