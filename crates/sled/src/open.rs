//! What opening a sled store does beyond sled's own open (`SledStore::open`): the
//! listing entries of unfinished tasks taken out of sled's index once (stores of an
//! older layout) and loaded into memory, and why sled would not open.

use crate::active_set::active_ids;
use crate::commit::TaskTable;
use crate::layout::{Header, LIVE_MARKER, context_key, is_current, task_key, updated_key};
use crate::live_index::is_persisted;
use crate::positions::Position;
use crate::quarantine::Quarantine;
use crate::read;
use crate::rest::Rest;
use crate::resting::{self, Resting};
use fundi_runtime::approval::at_rest;
use fundi_runtime::model::{TaskId, TaskState};
use fundi_runtime::store::StoreError;
use fundi_runtime::store::index::IndexEntry;

/// The snapshot headers of the active set's tasks (the set can also name a task
/// whose first commit failed: it has none).
fn active_headers(
    db: &sled::Db,
) -> Result<impl Iterator<Item = Result<Header, StoreError>> + '_, StoreError> {
    let ids = active_ids(db)?.into_iter();
    Ok(ids.filter_map(|id| match db.get(task_key(&id)) {
        Ok(Some(bytes)) => Some(Header::read(&bytes)),
        Ok(None) => None,
        Err(e) => Some(Err(StoreError::engine(e))),
    }))
}

/// Stores written before `LIVE_MARKER` kept every task's entry in `U` and `C`: takes
/// those of unfinished tasks out (the entry before a commit a crash cut too), once.
pub(crate) fn take_live_entries_out_of_sled(db: &sled::Db) -> Result<(), StoreError> {
    for header in active_headers(db)? {
        let header = header?;
        for json in [Some(&header.entry), header.previous.as_ref()]
            .into_iter()
            .flatten()
        {
            let entry: IndexEntry = serde_json::from_slice(json)?;
            if !is_persisted(&entry) {
                db.remove(updated_key(&entry)).map_err(StoreError::engine)?;
                db.remove(context_key(&entry)).map_err(StoreError::engine)?;
            }
        }
    }
    // After the removals in sled's log, so a crash before it repeats them.
    db.insert(LIVE_MARKER, &[]).map_err(StoreError::engine)?;
    Ok(())
}

/// The in-memory entries and positions of the tasks found indexed at rest (the two
/// built side by side, one on each core).
pub(crate) fn load_resting(tasks: &TaskTable, resting: Vec<Resting>) {
    let positions: Vec<_> = resting
        .iter()
        .map(|t| (t.entry.task_id.clone(), t.position))
        .collect();
    std::thread::scope(|scope| {
        scope.spawn(|| tasks.positions.load(positions.into_iter()));
        let entries = resting.into_iter().map(|t| (t.position.version, t.entry));
        tasks.live.load(entries);
    });
}

/// Rebuilds the in-memory entries of these unfinished tasks of the active set (those
/// not indexed at rest): a task's snapshot names its entry, unless commits followed it
/// (its tail). Their positions too, which spares recovery's reads of them a look for a
/// tail. A task that cannot be decoded is set aside (`quarantine`), never an error.
pub(crate) fn load_live_entries(
    tasks: &TaskTable,
    quarantine: &Quarantine,
    ids: &[TaskId],
) -> Result<(), StoreError> {
    for id in ids {
        let id = id.clone();
        let Some(bytes) = tasks.db.get(task_key(&id)).map_err(StoreError::engine)? else {
            continue;
        };
        let (entry, at) = match live_entry(&tasks.db, &id, &bytes) {
            Ok(found) => found,
            Err(error @ StoreError::Codec { .. }) => {
                quarantine.set_aside(tasks, &id, &error)?;
                continue;
            }
            Err(error) => return Err(error),
        };
        if !is_persisted(&entry) {
            tasks.live.put(at.version, &entry);
            tasks.positions.reached(&id, at);
        }
    }
    Ok(())
}

/// An unfinished task's listing entry and position, from its snapshot (`bytes`) and
/// tail.
pub(crate) fn live_entry(
    db: &sled::Db,
    id: &TaskId,
    bytes: &[u8],
) -> Result<(IndexEntry, Position), StoreError> {
    let header = Header::read(bytes)?;
    let mut at = Position::at_snapshot(header.version, header.last_seq, is_current(bytes));
    let entry = match read::has_tail(db, id, header.last_seq)? {
        false => serde_json::from_slice(&header.entry)?,
        true => {
            let record = read::with_tail(db, header.record(bytes)?)?;
            (at.version, at.last_seq) = (record.version, record.last_seq);
            IndexEntry::of(&record)
        }
    };
    Ok((entry, at))
}

/// Why sled would not open: another process holding the directory's lock (sled reports
/// a lock it cannot take as an I/O error that says so, the lock's own error in its
/// text), or anything else.
pub(crate) fn opening(error: sled::Error) -> StoreError {
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

/// The first open of a store written before format 5: indexes each of `ids` (loaded
/// from their snapshots just now) that is at rest, its snapshot its last commit and in
/// the current layout. A crash part way leaves the rest unindexed: read from their
/// snapshots at each open, until their next commit.
pub(crate) fn index_the_rest(tasks: &TaskTable, ids: &[TaskId]) -> Result<usize, StoreError> {
    let mut indexed = 0;
    for id in ids {
        let (Some(at), Some(entry)) = (tasks.positions.get(id), tasks.live.entry(id)) else {
            continue;
        };
        if !at.snapshot_current || at.since_snapshot() > 0 || !at.is_snapshot(at.last_seq) {
            continue;
        }
        // Waiting for input says the entry; waiting for an approver, only the record.
        let rests = match entry.state() {
            Some(state) if state.is_interrupted() => true,
            Some(TaskState::Submitted) => match read::task(&tasks.db, &tasks.positions, id) {
                Ok(record) => record.is_some_and(|record| at_rest(&record.task.status)),
                // Unindexed: recovery reads it again, and sets it aside.
                Err(StoreError::Codec { .. }) => false,
                Err(error) => return Err(error),
            },
            _ => false,
        };
        if !rests {
            continue;
        }
        resting::index(
            &tasks.db,
            id,
            at.version,
            at.last_seq,
            &entry,
            Rest::Waiting,
        )?;
        tasks.positions.mark_indexed(id, at.version, Rest::Waiting);
        indexed += 1;
    }
    Ok(indexed)
}
