//! Which unfinished tasks have their active-set marker (`A`) in sled, and the watermark
//! that makes the others findable.
//!
//! A task whose id sorts above the watermark joins the active set lazily: its first
//! commit writes no marker. A sweep, every second and at a clean close, writes the
//! markers of such tasks that are still unfinished, then moves the watermark up (key
//! `Mswept`, written after the markers: sled recovers a prefix of its log, so a
//! recovered watermark never lacks the markers it counts on). Most tasks (a blocking
//! send to a quick skill) end before their sweep and never write a marker, nor remove
//! it. At open, every task with a snapshot or events above the watermark on disk joins
//! the set before repair and recovery run (`SledStore::open`), so that those see every
//! task that may be unfinished, as they did when every task wrote its marker.
//!
//! A task whose id sorts at or below the watermark (ids are time-ordered; this happens
//! when the clock is set back) writes its marker with its first commit, as before.
//!
//! Here: the set in memory (`ActiveSet`), the thread that sweeps it (`Sweeper`), and
//! the join at open (`join_the_tail`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::layout::{Header, WATERMARK_KEY, active_key, keyed_id, task_key};
use crate::live_index::is_persisted;
use fundi_runtime::model::TaskId;
use fundi_runtime::store::StoreError;
use fundi_runtime::store::index::IndexEntry;

/// How often unfinished tasks' markers are written.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub(crate) struct ActiveSet {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Ids above it may lack a marker; no id at or below it does (in memory; the one in
    /// sled is never above it).
    watermark: String,
    /// Unfinished tasks above the watermark whose marker is not written yet.
    unmarked: HashSet<TaskId>,
}

impl ActiveSet {
    pub(crate) fn new(watermark: String) -> ActiveSet {
        ActiveSet {
            inner: Mutex::new(Inner {
                watermark,
                unmarked: HashSet::new(),
            }),
        }
    }

    /// At an unfinished task's first commit, before its writes: `true` if it needs no
    /// marker now (a sweep writes it if the task is still unfinished then).
    pub(crate) fn join_lazily(&self, id: &TaskId) -> bool {
        let mut inner = self.lock();
        let lazy = id.as_str() > inner.watermark.as_str();
        if lazy {
            inner.unmarked.insert(id.clone());
        }
        lazy
    }

    /// At a task's terminal commit, after its listing entries: whether it has a marker
    /// to remove. One it does not have will not be written.
    pub(crate) fn leave(&self, id: &TaskId) -> bool {
        !self.lock().unmarked.remove(id)
    }

    /// Writes the markers of the unfinished tasks that lack one, then the watermark.
    pub(crate) fn sweep(&self, db: &sled::Db) -> Result<(), StoreError> {
        let (watermark, ids) = {
            let mut inner = self.lock();
            let now = uuid::Uuid::now_v7().to_string();
            // Never down: a clock set back would only make the next open scan more.
            if now > inner.watermark {
                inner.watermark = now;
            }
            let ids: Vec<TaskId> = inner.unmarked.iter().cloned().collect();
            (inner.watermark.clone(), ids)
        };
        for id in ids {
            // Under the lock, so that a terminal commit sees either the task unmarked (and
            // no marker is written) or the marker written (and removes it).
            let mut inner = self.lock();
            if inner.unmarked.remove(&id)
                && let Err(e) = db.insert(active_key(&id), &[])
            {
                inner.unmarked.insert(id);
                return Err(StoreError::engine(e));
            }
        }
        db.insert(WATERMARK_KEY, watermark.as_bytes())
            .map_err(StoreError::engine)?;
        Ok(())
    }

    /// The tasks whose marker is not written yet.
    pub(crate) fn unmarked(&self) -> Vec<TaskId> {
        self.lock().unmarked.iter().cloned().collect()
    }

    #[cfg(test)]
    pub(crate) fn is_unmarked(&self, id: &TaskId) -> bool {
        self.lock().unmarked.contains(id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding it leaves the set whole (each change is one insert or
        // remove), so a poisoned lock is still good.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The ids of the active set (tasks that may not be terminal).
pub(crate) fn active_ids(db: &sled::Db) -> Result<Vec<TaskId>, StoreError> {
    db.scan_prefix(b"A")
        .keys()
        .map(|key| Ok(keyed_id(&key.map_err(StoreError::engine)?)))
        .collect()
}

/// The watermark a store starts from: above every id written so far by this clock.
pub(crate) fn fresh_watermark(stored: Option<&str>) -> String {
    let now = uuid::Uuid::now_v7().to_string();
    match stored {
        Some(stored) if stored > now.as_str() => stored.to_owned(),
        _ => now,
    }
}

/// The ids of the tasks above `watermark` that have a snapshot (`T`) or events (`E`),
/// each once, in id order: the tasks that may lack their marker.
fn tail_ids(db: &sled::Db, watermark: &str) -> Result<Vec<TaskId>, StoreError> {
    let mut ids = std::collections::BTreeSet::new();
    // Keys sort like their ids (an `E` key's id ends at a 0 byte, below any id byte), so
    // the keys from the watermark's on are those of ids from it up (no task has the
    // watermark itself as its id).
    let above = |prefix: u8| {
        let start = [&[prefix], watermark.as_bytes()].concat();
        db.range(start..vec![prefix + 1])
    };
    for key in above(b'T').keys() {
        let key = key.map_err(StoreError::engine)?;
        ids.insert(String::from_utf8_lossy(&key[1..]).into_owned());
    }
    for key in above(b'E').keys() {
        let key = key.map_err(StoreError::engine)?;
        // `E` task id `\0` seq (8 bytes).
        if key.len() > 10 {
            ids.insert(String::from_utf8_lossy(&key[1..key.len() - 9]).into_owned());
        }
    }
    Ok(ids.into_iter().map(TaskId::from).collect())
}

/// At open, puts the tasks above the stored watermark (which may lack their `A` key)
/// into the active set on disk: the unfinished ones, and when the store is to be
/// repaired every one (repair then mends each and lets the terminal ones go again).
pub(crate) fn join_the_tail(
    db: &sled::Db,
    watermark: &str,
    repair: bool,
) -> Result<(), StoreError> {
    for id in tail_ids(db, watermark)? {
        let key = active_key(&id);
        if db.contains_key(&key).map_err(StoreError::engine)? {
            continue;
        }
        let unfinished = match db.get(task_key(&id)).map_err(StoreError::engine)? {
            Some(bytes) => match entry_of(&bytes) {
                Ok(entry) => !is_persisted(&entry),
                // Unreadable: it joins, and the open sets it aside.
                Err(StoreError::Codec { .. }) => true,
                Err(error) => return Err(error),
            },
            None => false,
        };
        if unfinished || repair {
            db.insert(key, &[]).map_err(StoreError::engine)?;
        }
    }
    Ok(())
}

/// The listing entry a snapshot's header names.
fn entry_of(snapshot: &[u8]) -> Result<IndexEntry, StoreError> {
    Ok(serde_json::from_slice(&Header::read(snapshot)?.entry)?)
}

/// The thread that writes the active set's missing keys; stopped and joined on drop.
#[derive(Debug)]
pub(crate) struct Sweeper {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sweeper {
    pub(crate) fn start(db: &sled::Db, active: &Arc<ActiveSet>) -> Result<Sweeper, StoreError> {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let (db, active) = (db.clone(), active.clone());
        let thread = std::thread::Builder::new()
            .name("fundi-store-sweep".into())
            .spawn(move || {
                use std::sync::mpsc::RecvTimeoutError;
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(SWEEP_INTERVAL) {
                    if let Err(error) = active.sweep(&db) {
                        tracing::warn!(%error, "writing the active set failed; retried in a second");
                    }
                }
            })
            .map_err(|e| StoreError::io("starting the active-set sweep", e))?;
        Ok(Sweeper {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
