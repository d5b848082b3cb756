//! Removing ended tasks from a sled store (`TaskStore::remove_ended_before`), oldest
//! first as the `U` index orders them. Each removal is announced by an `R` key (the
//! task's id; its value: the task's listing entry, then its first message's `D` key),
//! written first and removed last, so that one a crash cut short is finished by the next
//! sweep:
//!
//! 1. `R` id: the removal starts;
//! 2. the `U` and `C` entries, and the counts: the task is no longer listed;
//! 3. `T` id: the task is not found;
//! 4. its `E` values, its `D` entry (if it still names this task), its push keys and
//!    chaos events;
//! 5. the `R` key.
//!
//! Counts live in memory; an unclean close rebuilds them from `U` and `C`, so a removal
//! cut after step 2 is counted once either way.

use crate::commit::TaskTable;
use crate::layout::{
    active_key, context_key, created_key, decode_created, event_prefix, legacy_head_key, task_key,
    updated_key,
};
use crate::read;
use fundi_runtime::model::TaskId;
use fundi_runtime::store::StoreError;
use fundi_runtime::store::index::IndexEntry;

const REMOVING: &[u8] = b"R";

/// See `TaskStore::remove_ended_before`: finishes removals a crash cut short, then
/// removes up to `limit` ended tasks last updated before `before_ms`.
pub(crate) fn remove_ended(
    tasks: &TaskTable,
    push: &sled::Tree,
    chaos: &sled::Tree,
    before_ms: i64,
    limit: usize,
) -> Result<usize, StoreError> {
    let db = &tasks.db;
    for item in db.scan_prefix(REMOVING) {
        let (key, value) = item.map_err(StoreError::engine)?;
        let id = TaskId::from(String::from_utf8_lossy(&key[1..]).into_owned());
        let (entry, created) = decode_marker(&value)?;
        remove_task(tasks, push, chaos, &id, &entry, created.as_deref())?;
    }
    let mut ended = Vec::new();
    for item in db.scan_prefix(b"U") {
        let (_, value) = item.map_err(StoreError::engine)?;
        let entry: IndexEntry = serde_json::from_slice(&value)?;
        if entry.ts_ms >= before_ms || ended.len() >= limit {
            break;
        }
        if entry.state().is_some_and(|s| s.is_terminal()) {
            ended.push(entry);
        }
    }
    for entry in &ended {
        let id = &entry.task_id;
        let created = read::task(db, &tasks.positions, id)?.and_then(|record| {
            let first = record.task.history.first()?;
            Some(created_key(record.owner.as_deref(), &first.message_id))
        });
        let marker = encode_marker(entry, created.as_deref())?;
        db.insert(removing_key(id), marker)
            .map_err(StoreError::engine)?;
        remove_task(tasks, push, chaos, id, entry, created.as_deref())?;
    }
    Ok(ended.len())
}

/// Steps 2 to 5 (see the module docs); each may have been done already.
fn remove_task(
    tasks: &TaskTable,
    push: &sled::Tree,
    chaos: &sled::Tree,
    id: &TaskId,
    entry: &IndexEntry,
    created: Option<&[u8]>,
) -> Result<(), StoreError> {
    let db = &tasks.db;
    let listed = updated_key(entry);
    if db.contains_key(&listed).map_err(StoreError::engine)? {
        db.remove(&listed).map_err(StoreError::engine)?;
        db.remove(context_key(entry)).map_err(StoreError::engine)?;
        tasks.counts.removed(entry);
    }
    db.remove(task_key(id)).map_err(StoreError::engine)?;
    tasks.positions.forget(id);
    // What older layouts or a lazy active set may have left beside it.
    db.remove(active_key(id)).map_err(StoreError::engine)?;
    db.remove(legacy_head_key(id)).map_err(StoreError::engine)?;
    for key in db.scan_prefix(event_prefix(id)).keys() {
        db.remove(key.map_err(StoreError::engine)?)
            .map_err(StoreError::engine)?;
    }
    if let Some(created) = created
        && let Some(value) = db.get(created).map_err(StoreError::engine)?
        && decode_created(&value).is_ok_and(|(task, _)| &task == id)
    {
        db.remove(created).map_err(StoreError::engine)?;
    }
    crate::push::remove_of(push, id)?;
    crate::chaos::remove_of(chaos, id)?;
    db.remove(removing_key(id)).map_err(StoreError::engine)?;
    Ok(())
}

fn removing_key(id: &TaskId) -> Vec<u8> {
    [REMOVING, id.as_str().as_bytes()].concat()
}

/// An `R` value: the entry's JSON length (u32 BE), the entry, then the `D` key.
fn encode_marker(entry: &IndexEntry, created: Option<&[u8]>) -> Result<Vec<u8>, StoreError> {
    let json = serde_json::to_vec(entry)?;
    let len = u32::try_from(json.len()).map_err(|_| StoreError::damaged("entry too large"))?;
    Ok([&len.to_be_bytes()[..], &json, created.unwrap_or_default()].concat())
}

fn decode_marker(bytes: &[u8]) -> Result<(IndexEntry, Option<Vec<u8>>), StoreError> {
    let damaged = || StoreError::damaged("a removal marker is damaged");
    let (len, rest) = bytes.split_at_checked(4).ok_or_else(damaged)?;
    let len = u32::from_be_bytes(len.try_into().map_err(|_| damaged())?) as usize;
    let (json, created) = rest.split_at_checked(len).ok_or_else(damaged)?;
    let entry = serde_json::from_slice(json)?;
    Ok((entry, (!created.is_empty()).then(|| created.to_vec())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fundi_runtime::model::TaskState;
    use fundi_runtime::store::ListQuery;
    use fundi_runtime::store::TaskStore;

    use crate::{Durability, SledStore};
    use fundi_runtime::testing::store_contract::{advance, created, record};

    /// How many tasks a listing counts, and how many its first page holds.
    async fn listed(store: &SledStore) -> (usize, usize) {
        let query = ListQuery {
            limit: 10,
            ..Default::default()
        };
        let page = store.list(&query).await.unwrap();
        (page.total, page.records.len())
    }

    /// A removal cut short after its marker (as a crash would) is finished by the next
    /// sweep, even one with nothing new to remove; and what was removed stays removed
    /// after the store is opened again.
    #[tokio::test]
    async fn a_removal_a_crash_cut_short_is_finished_by_the_next_sweep() {
        let dir = tempfile::tempdir().unwrap();
        let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
        for id in ["cut", "kept"] {
            let r = record(id, "c", TaskState::Working, 1_000, "u");
            store.commit(&r, 0, &[created(&r)]).await.unwrap();
            advance(&store, id, TaskState::Completed, 1_000).await;
        }
        let id = TaskId::from("cut");
        let entry = IndexEntry::of(&store.get(&id).await.unwrap().unwrap());
        store
            .db
            .insert(removing_key(&id), encode_marker(&entry, None).unwrap())
            .unwrap();
        assert_eq!(
            remove_ended(&store.tasks, &store.push, &store.chaos, 0, 10).unwrap(),
            0,
            "nothing new to remove"
        );
        assert!(
            store.get(&id).await.unwrap().is_none(),
            "the cut removal is finished"
        );
        assert!(store.db.scan_prefix(REMOVING).next().is_none());
        assert_eq!(listed(&store).await, (1, 1));
        drop(store);

        let store = crate::testing::open_sled(dir.path()).await;
        assert!(store.get(&id).await.unwrap().is_none());
        assert_eq!(listed(&store).await, (1, 1));
    }
}
