//! Opening a sled store: sled's config for the durability asked for, the format check,
//! the active set brought up to date, a repair after a crash, and the listing entries
//! of unfinished tasks loaded into memory.

use std::path::Path;

use crate::active_set::{ActiveSet, Sweeper, fresh_watermark, join_the_tail};
use crate::counts::Counts;
use crate::flusher::GroupFlusher;
use crate::layout::{
    CLEAN_MARKER, FORMAT_KEY, Header, LIVE_MARKER, STORE_FORMAT, WATERMARK_KEY, active_id,
    context_key, decode_entry, is_current, task_key, updated_key,
};
use crate::live_index::{LiveIndex, is_persisted};
use crate::log_sync::LogSync;
use crate::positions::{Position, Positions, Turns};
use crate::quarantine::QUARANTINE_TREE;
use crate::store::{DEFAULT_CACHE_BYTES, Durability, SledStore};
use fundi_runtime::model::TaskId;
use fundi_runtime::store::StoreError;
use fundi_runtime::store::index::IndexEntry;

impl SledStore {
    /// Opens (or creates) the store in `path`. Must be called inside a tokio runtime.
    pub fn open(path: impl AsRef<Path>, durability: Durability) -> Result<SledStore, StoreError> {
        SledStore::open_with_cache(path, durability, DEFAULT_CACHE_BYTES)
    }

    /// Like [`SledStore::open`], with sled's page cache limited to `cache_bytes` (the
    /// store's share of memory; what does not fit is read from disk).
    pub fn open_with_cache(
        path: impl AsRef<Path>,
        durability: Durability,
        cache_bytes: u64,
    ) -> Result<SledStore, StoreError> {
        let path = path.as_ref();
        SledStore::with_config(
            sled::Config::new().path(path).cache_capacity(cache_bytes),
            durability,
            Some(path),
        )
    }

    /// A store in a temporary directory, removed when dropped (tests, benchmarks).
    pub fn temporary(durability: Durability) -> Result<SledStore, StoreError> {
        SledStore::with_config(sled::Config::new().temporary(true), durability, None)
    }

    /// Opens `config`; `dir` is where it lives (`None`: a temporary store).
    pub(crate) fn with_config(
        config: sled::Config,
        durability: Durability,
        dir: Option<&Path>,
    ) -> Result<SledStore, StoreError> {
        let config = match durability {
            // Every commit asks for its own (shared) flush; no timer needed.
            Durability::Sync => config.flush_every_ms(None),
            Durability::Batched { window } => {
                config.flush_every_ms(Some(window.as_millis().max(1) as u64))
            }
        };
        let db = config.open().map_err(opening)?;
        let log = std::sync::Arc::new(match dir {
            Some(dir) => LogSync::open(dir)?,
            None => LogSync::temporary(),
        });
        // Before anything is written: a newer layout is refused, not misread.
        let found = match db.get(FORMAT_KEY).map_err(StoreError::engine)? {
            Some(bytes) => <[u8; 8]>::try_from(bytes.as_ref())
                .map(u64::from_be_bytes)
                .map_err(|_| StoreError::damaged("the store format marker is not 8 bytes"))?,
            None => 0,
        };
        if found > STORE_FORMAT {
            return Err(StoreError::NewerFormat {
                found,
                supported: STORE_FORMAT,
            });
        }
        if found < STORE_FORMAT {
            db.insert(FORMAT_KEY, &STORE_FORMAT.to_be_bytes())
                .map_err(StoreError::engine)?;
        }
        let push = db.open_tree("push").map_err(StoreError::engine)?;
        let issues = db.open_tree("issues").map_err(StoreError::engine)?;
        let schedules = db.open_tree("schedules").map_err(StoreError::engine)?;
        let grants = db.open_tree("grants").map_err(StoreError::engine)?;
        let grant_digests = db.open_tree("grant_digests").map_err(StoreError::engine)?;
        let audit = db.open_tree("audit").map_err(StoreError::engine)?;
        let chaos = db.open_tree("chaos").map_err(StoreError::engine)?;
        let peers = db.open_tree("peers").map_err(StoreError::engine)?;
        let quarantine = db.open_tree(QUARANTINE_TREE).map_err(StoreError::engine)?;
        let flusher = match durability {
            Durability::Sync => Some(GroupFlusher::default()),
            Durability::Batched { .. } => None,
        };
        // From here until a clean close, the store counts as possibly half written; the
        // marker's removal is on disk before anything else is written.
        let was_clean = db
            .remove(CLEAN_MARKER)
            .map_err(StoreError::engine)?
            .is_some();
        let counts = match was_clean {
            true => Counts::load(&db)?,
            false => Counts::default(),
        };
        // A store created just now has nothing to repair.
        let repair = !was_clean && db.was_recovered();
        let stored_watermark = db
            .get(WATERMARK_KEY)
            .map_err(StoreError::engine)?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        if let Some(watermark) = &stored_watermark {
            join_the_tail(&db, watermark, repair)?;
        }
        // After the tail's keys, so that a crash before it scans the tail again.
        let watermark = fresh_watermark(stored_watermark.as_deref());
        db.insert(WATERMARK_KEY, watermark.as_bytes())
            .map_err(StoreError::engine)?;
        let mut store = SledStore {
            db,
            push,
            issues,
            schedules,
            grants,
            grant_digests,
            audit,
            chaos,
            peers,
            quarantine,
            flusher,
            log,
            counts,
            live: LiveIndex::default(),
            positions: Positions::default(),
            writers: Turns::default(),
            active: std::sync::Arc::new(ActiveSet::new(watermark)),
            sweeper: None,
            close_cleanly: false,
            #[cfg(test)]
            writes_left: std::sync::atomic::AtomicUsize::new(usize::MAX),
            #[cfg(test)]
            before_each_write: Default::default(),
        };
        if !store
            .db
            .contains_key(LIVE_MARKER)
            .map_err(StoreError::engine)?
        {
            store.take_live_entries_out_of_sled()?;
        }
        // Repair loads the unfinished tasks' entries as it mends them.
        match repair {
            true => crate::repair::repair(&store).map(|_| ())?,
            false => store.load_live_entries()?,
        }
        if repair {
            // A crash can stop a commit before its counts moved; and saved counts are
            // stale.
            let persisted = store.db.scan_prefix(b"U").map(decode_entry);
            let entries = persisted.chain(store.live.newest_first(None));
            store.counts = Counts::rebuild(entries)?;
            store.db.remove(b"Mcounts").map_err(StoreError::engine)?;
        }
        store.log.flush(&store.db)?;
        store.sweeper = Some(Sweeper::start(&store.db, &store.active)?);
        store.close_cleanly = true;
        Ok(store)
    }

    /// Writes the missing `A` keys now (tests; the sweeper does it every second).
    #[cfg(test)]
    pub(crate) fn sweep(&self) {
        self.active.sweep(&self.db).unwrap();
    }

    /// Drops the store as a crash would leave it: without marking it closed cleanly, so
    /// the next open repairs it. Everything written so far is flushed first (a crash
    /// loses unflushed writes too, but those are not what repair is for).
    #[cfg(test)]
    pub(crate) fn crash(mut self) {
        self.db.flush().unwrap();
        self.close_cleanly = false;
    }

    /// The ids of the active set (tasks that may not be terminal).
    pub(crate) fn active_ids(&self) -> Result<Vec<TaskId>, StoreError> {
        self.db
            .scan_prefix(b"A")
            .keys()
            .map(|key| Ok(active_id(&key.map_err(StoreError::engine)?)))
            .collect()
    }

    /// The snapshot headers of the active set's tasks (the set can also name a task
    /// whose first commit failed: it has none).
    pub(crate) fn active_headers(
        &self,
    ) -> Result<impl Iterator<Item = Result<Header, StoreError>> + '_, StoreError> {
        let ids = self.active_ids()?.into_iter();
        Ok(ids.filter_map(|id| match self.db.get(task_key(&id)) {
            Ok(Some(bytes)) => Some(Header::read(&bytes)),
            Ok(None) => None,
            Err(e) => Some(Err(StoreError::engine(e))),
        }))
    }

    /// Stores written before `LIVE_MARKER` kept every task's entry in `U` and `C`: takes
    /// those of unfinished tasks out (the entry before a commit a crash cut too), once.
    pub(crate) fn take_live_entries_out_of_sled(&self) -> Result<(), StoreError> {
        for header in self.active_headers()? {
            let header = header?;
            for json in [Some(&header.entry), header.previous.as_ref()]
                .into_iter()
                .flatten()
            {
                let entry: IndexEntry = serde_json::from_slice(json)?;
                if !is_persisted(&entry) {
                    self.db
                        .remove(updated_key(&entry))
                        .map_err(StoreError::engine)?;
                    self.db
                        .remove(context_key(&entry))
                        .map_err(StoreError::engine)?;
                }
            }
        }
        // After the removals in sled's log, so a crash before it repeats them.
        self.db
            .insert(LIVE_MARKER, &[])
            .map_err(StoreError::engine)?;
        Ok(())
    }

    /// Rebuilds the in-memory entries of unfinished tasks from the active set: a task's
    /// snapshot names its entry, unless commits followed it (its tail). Their positions
    /// too, which spares recovery's reads of them a look for a tail.
    /// A task that cannot be decoded is set aside (`quarantine`), never an error.
    pub(crate) fn load_live_entries(&self) -> Result<(), StoreError> {
        for id in self.active_ids()? {
            let Some(bytes) = self.db.get(task_key(&id)).map_err(StoreError::engine)? else {
                continue;
            };
            let (entry, at) = match self.live_entry(&id, &bytes) {
                Ok(found) => found,
                Err(error @ StoreError::Codec { .. }) => {
                    self.set_aside(&id, &error)?;
                    continue;
                }
                Err(error) => return Err(error),
            };
            if !is_persisted(&entry) {
                self.live.put(at.version, &entry);
                self.positions.reached(&id, at);
            }
        }
        Ok(())
    }

    /// An unfinished task's listing entry and position, from its snapshot (`bytes`) and
    /// tail.
    pub(crate) fn live_entry(
        &self,
        id: &TaskId,
        bytes: &[u8],
    ) -> Result<(IndexEntry, Position), StoreError> {
        let header = Header::read(bytes)?;
        let mut at = Position::at_snapshot(header.version, header.last_seq, is_current(bytes));
        let entry = match self.has_tail(id, header.last_seq)? {
            false => serde_json::from_slice(&header.entry)?,
            true => {
                let record = self.with_tail(header.record(bytes)?)?;
                (at.version, at.last_seq) = (record.version, record.last_seq);
                IndexEntry::of(&record)
            }
        };
        Ok((entry, at))
    }
}

/// Why sled would not open: another process holding the directory's lock (sled reports
/// a lock it cannot take as an I/O error that says so, the lock's own error in its
/// text), or anything else.
fn opening(error: sled::Error) -> StoreError {
    match &error {
        sled::Error::Io(io)
            if io.kind() == std::io::ErrorKind::WouldBlock
                || io.to_string().starts_with("could not acquire lock") =>
        {
            StoreError::Locked(Box::new(error))
        }
        _ => StoreError::engine(error),
    }
}
