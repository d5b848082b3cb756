//! A task whose stored data cannot be decoded never stops the store from opening: it is
//! set aside, ended `failed` where its header can be read, and every other task served.

use chrono::Utc;
use serde_json::{Value, json};

use crate::layout::{event_key, task_key};
use fundi_runtime::model::*;
use fundi_runtime::store::*;

use crate::*;
use fundi_runtime::testing::store_contract::created;

/// A task of ann's in `state`, with `checkpoint`.
fn record(id: &str, state: TaskState, checkpoint: Option<Value>) -> TaskRecord {
    let now = Utc::now().timestamp_millis();
    let mut record = fundi_runtime::testing::store_contract::record(id, "ctx", state, now, "ann");
    record.checkpoint = checkpoint;
    record
}

/// A value nested deeper than serde_json reads back (it writes it all the same).
fn too_deep() -> Value {
    (0..200).fold(json!(1), |inner, _| json!([inner]))
}

fn owned_by_ann() -> ListQuery {
    ListQuery {
        owner: fundi_runtime::TaskOwner::user("ann"),
        limit: 10,
        ..ListQuery::default()
    }
}

#[tokio::test]
async fn an_unreadable_unfinished_task_is_failed_and_set_aside_at_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = crate::testing::open_sled(dir.path()).await;
        let fine = record("fine", TaskState::Working, None);
        store.commit(&fine, 0, &[created(&fine)]).await.unwrap();
        // Written whole (serde_json writes any depth), unreadable after.
        let broken = record("broken", TaskState::Working, Some(too_deep()));
        store.commit(&broken, 0, &[created(&broken)]).await.unwrap();
        assert!(store.get(broken.id()).await.is_err());
    }
    let store = crate::testing::open_sled(dir.path()).await;
    let active = store.active().await.unwrap();
    let ids: Vec<&str> = active.iter().map(|r| r.id().as_str()).collect();
    assert_eq!(ids, ["fine"], "every other task is served");
    let quarantined = store.quarantined().await.unwrap();
    assert_eq!(quarantined.len(), 1);
    assert_eq!(quarantined[0].task_id.as_str(), "broken");
    assert!(quarantined[0].failed);
    assert!(
        quarantined[0].reason.contains("recursion limit"),
        "{}",
        quarantined[0].reason
    );
    // The owner sees it failed, with the reason; its log holds the failure.
    let failed = store.get(&TaskId::from("broken")).await.unwrap().unwrap();
    assert_eq!(failed.state(), TaskState::Failed);
    assert_eq!(failed.owner.as_deref(), Some("ann"));
    assert_eq!(failed.skill, "echo");
    let text = failed.task.status.message.as_ref().unwrap().text();
    assert!(text.contains("set aside"), "{text}");
    let events = store.events(failed.id(), 0, 10).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].seq, failed.last_seq);
    let page = store.list(&owned_by_ann()).await.unwrap();
    assert_eq!(page.records.len(), 2);
    // The raw values are kept.
    assert!(
        store
            .quarantine
            .tree
            .contains_key(task_key(failed.id()))
            .unwrap()
    );
    drop(store);
    // And the next open has nothing more to set aside, nor forgets what it did.
    let store = crate::testing::open_sled(dir.path()).await;
    assert_eq!(store.active().await.unwrap().len(), 1);
    assert_eq!(store.quarantined().await.unwrap().len(), 1);
    let failed = store.get(&TaskId::from("broken")).await.unwrap().unwrap();
    assert_eq!(failed.state(), TaskState::Failed);
}

/// Opens a store holding one working task `t` whose value at `key` was then replaced by
/// `damage`; the store as the next open leaves it (with its directory), and what it set
/// aside.
async fn reopened_with(
    key: fn(&TaskId) -> Vec<u8>,
    damage: &[u8],
) -> (tempfile::TempDir, SledStore, Vec<QuarantinedTask>) {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = crate::testing::open_sled(dir.path()).await;
        let r = record("t", TaskState::Working, None);
        store.commit(&r, 0, &[created(&r)]).await.unwrap();
        store.db.insert(key(r.id()), damage).unwrap();
    }
    let store = crate::testing::open_sled(dir.path()).await;
    assert!(store.active().await.unwrap().is_empty());
    let quarantined = store.quarantined().await.unwrap();
    assert_eq!(quarantined.len(), 1);
    (dir, store, quarantined)
}

#[tokio::test]
async fn an_unreadable_tail_is_set_aside_while_the_store_opens() {
    // A tail commit whose value is damaged: the open reads tails to index them.
    let (_dir, store, _) = reopened_with(|id| event_key(id, 2), &[1u8, 0, 0]).await;
    let failed = store.get(&TaskId::from("t")).await.unwrap().unwrap();
    assert_eq!(failed.state(), TaskState::Failed);
}

#[tokio::test]
async fn a_snapshot_that_is_garbage_is_removed_and_reported() {
    let (_dir, store, quarantined) = reopened_with(task_key, b"\x02garbage").await;
    assert!(!quarantined[0].failed);
    assert!(store.get(&TaskId::from("t")).await.unwrap().is_none());
}

#[tokio::test]
async fn a_listing_leaves_out_an_unreadable_terminal_task() {
    let store = SledStore::temporary(Durability::Sync).unwrap();
    let fine = record("fine", TaskState::Completed, None);
    store.commit(&fine, 0, &[created(&fine)]).await.unwrap();
    let broken = record("broken", TaskState::Completed, Some(too_deep()));
    store.commit(&broken, 0, &[created(&broken)]).await.unwrap();
    let page = store.list(&owned_by_ann()).await.unwrap();
    let ids: Vec<&str> = page.records.iter().map(|r| r.id().as_str()).collect();
    assert_eq!(ids, ["fine"]);
}

/// A task the active set's sweep had not reached when the store crashed (its key is
/// written lazily, see `active_set`), its snapshot unreadable: the open sets it aside
/// as it does any other, rather than failing.
#[tokio::test]
async fn an_unreadable_snapshot_the_sweep_had_not_reached_is_set_aside_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = crate::testing::open_sled(dir.path()).await;
        let r = record("t", TaskState::Working, None);
        store.commit(&r, 0, &[created(&r)]).await.unwrap();
        store
            .db
            .insert(task_key(r.id()), b"\x02garbage".as_slice())
            .unwrap();
        assert!(store.tasks.active.is_unmarked(r.id()), "swept already");
        store.crash();
    }
    let store = crate::testing::open_sled(dir.path()).await;
    let quarantined = store.quarantined().await.unwrap();
    assert_eq!(quarantined.len(), 1);
    assert_eq!(quarantined[0].task_id.as_str(), "t");
    assert!(store.active().await.unwrap().is_empty());
}
