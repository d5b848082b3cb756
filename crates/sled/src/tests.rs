//! The sled store's tests, by concern; the helpers they share.

pub(super) use std::sync::Arc;
pub(super) use std::time::Duration;

pub(super) use chrono::{TimeZone, Utc};

pub(super) use fundi_runtime::model::*;
pub(super) use fundi_runtime::store::*;

pub(super) use crate::*;
pub(super) use fundi_runtime::model::{Message, Part, TaskEventKind, TaskStatus};
pub(super) use fundi_runtime::testing::store_contract::{
    self, advance, created, event_seqs, list_all, push_config, record, try_advance,
    try_advance_saying,
};

mod active_set;
mod commits;
mod crashes;
mod engine;
mod formats;
mod resting;
mod stores;

/// The kinds of store the tests run on.
pub(super) const KINDS: [&str; 3] = ["memory", "sled-sync", "sled-batched"];

/// A fresh, empty store of `kind`.
pub(super) fn fresh(kind: &str) -> Arc<dyn TaskStore> {
    match kind {
        "memory" => Arc::new(MemoryStore::new()),
        "sled-sync" => Arc::new(SledStore::temporary(Durability::Sync).unwrap()),
        _ => Arc::new(
            SledStore::temporary(Durability::Batched {
                window: Duration::from_millis(5),
            })
            .unwrap(),
        ),
    }
}

pub(super) async fn stores() -> Vec<(&'static str, Arc<dyn TaskStore>)> {
    KINDS.into_iter().map(|kind| (kind, fresh(kind))).collect()
}

pub(super) fn push_stores() -> Vec<(&'static str, Arc<dyn PushStore>)> {
    vec![
        ("memory", Arc::new(MemoryStore::new())),
        (
            "sled",
            Arc::new(SledStore::temporary(Durability::Sync).unwrap()),
        ),
    ]
}

/// Commits a `working` status whose message is `text`, as a skill's progress, with a
/// checkpoint counting the steps; returns the record written.
pub(super) async fn progress(store: &dyn TaskStore, id: &str, text: &str) -> TaskRecord {
    let mut r = store.get(&TaskId::from(id)).await.unwrap().unwrap();
    r.task.status = TaskStatus {
        state: TaskState::Working,
        message: Some(Message::agent(vec![Part::text(text)])),
        // As stored: to the millisecond.
        timestamp: Utc
            .timestamp_millis_opt(Utc::now().timestamp_millis())
            .unwrap(),
    };
    r.version += 1;
    r.last_seq += 1;
    r.checkpoint = Some(serde_json::json!({ "step": r.last_seq }));
    r.idle_until = None;
    let event = TaskEvent {
        seq: r.last_seq,
        task_id: r.task.id.clone(),
        context_id: r.task.context_id.clone(),
        kind: TaskEventKind::Status(r.task.status.clone()),
    };
    store.commit(&r, r.version - 1, &[event]).await.unwrap();
    r
}

pub(super) fn decode_seqs(bytes: &[u8]) -> Vec<u64> {
    let events = crate::layout::decode_events(bytes).unwrap();
    events.iter().map(|e| e.seq).collect()
}

/// Opens the store in `dir` again (see `testing::open_sled`).
pub(super) async fn reopen(dir: &std::path::Path) -> SledStore {
    crate::testing::open_sled(dir).await
}

/// sled itself, opened on `dir` again.
pub(super) async fn reopen_raw(dir: &std::path::Path) -> sled::Db {
    crate::testing::once_unlocked(|| sled::open(dir))
        .await
        .unwrap()
}

/// The `A` keys in `db`, as task ids.
pub(super) fn active_keys(db: &sled::Db) -> Vec<String> {
    db.scan_prefix(b"A")
        .keys()
        .map(|key| crate::layout::keyed_id(&key.unwrap()).to_string())
        .collect()
}

/// The ids of the tasks `active` returns (what recovery resumes), in order.
pub(super) async fn active_task_ids(store: &SledStore) -> Vec<String> {
    let mut ids: Vec<String> = store
        .active()
        .await
        .unwrap()
        .iter()
        .map(|r| r.id().to_string())
        .collect();
    ids.sort();
    ids
}

/// What a reopened store says about itself must agree everywhere: snapshots, event logs,
/// listing (each task once, in its stored state), counts and the active set.
pub(super) async fn assert_consistent(store: &SledStore, context: &str) {
    let mut snapshots = Vec::new();
    for id in ["t1", "t2"] {
        if let Some(r) = store.get(&TaskId::from(id)).await.unwrap() {
            let seqs = event_seqs(store, r.id(), 0, 100).await;
            assert_eq!(
                seqs,
                (1..=r.last_seq).collect::<Vec<_>>(),
                "{context}: {id}"
            );
            let stray = store
                .db
                .range(crate::layout::event_key(r.id(), r.last_seq + 1)..)
                .keys()
                .filter(|k| {
                    k.as_ref()
                        .unwrap()
                        .starts_with(&crate::layout::event_prefix(r.id()))
                })
                .count();
            assert_eq!(stray, 0, "{context}: {id} has uncommitted events");
            let bytes = store.db.get(crate::layout::task_key(r.id())).unwrap();
            let header = crate::layout::Header::read(&bytes.unwrap()).unwrap();
            if r.state().is_terminal() {
                assert_eq!(
                    header.version, r.version,
                    "{context}: {id}'s snapshot is not its last commit"
                );
            }
            if header.inline_through > 0 {
                let copies = store
                    .db
                    .range(
                        crate::layout::event_key(r.id(), 0)
                            ..=crate::layout::event_key(r.id(), header.inline_through),
                    )
                    .count();
                assert_eq!(
                    copies, 0,
                    "{context}: {id} has its snapshot's events apart too"
                );
            }
            snapshots.push(r);
        } else {
            let events = store
                .db
                .scan_prefix(crate::layout::event_prefix(&TaskId::from(id)));
            assert_eq!(
                events.count(),
                0,
                "{context}: {id} has events but no snapshot"
            );
        }
    }
    assert_listed_once(store, &snapshots, context).await;
    // In sled, the listing index holds terminal tasks only (unfinished ones are in
    // memory), each once in each index.
    let mut terminal: Vec<String> = snapshots
        .iter()
        .filter(|r| r.state().is_terminal())
        .map(|r| r.id().to_string())
        .collect();
    terminal.sort();
    for prefix in [b"U".as_slice(), b"Cc\0"] {
        let mut indexed: Vec<String> = store
            .db
            .scan_prefix(prefix)
            .map(|item| {
                crate::layout::decode_entry(item)
                    .unwrap()
                    .task_id
                    .to_string()
            })
            .collect();
        indexed.sort();
        assert_eq!(indexed, terminal, "{context}: {prefix:?} index");
    }
    for state in [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::InputRequired,
        TaskState::Completed,
    ] {
        for owner in [
            fundi_runtime::TaskOwner::Any,
            fundi_runtime::TaskOwner::user("u"),
        ] {
            let page = store
                .list(&ListQuery {
                    limit: 100,
                    state: Some(state),
                    owner: owner.clone(),
                    ..Default::default()
                })
                .await
                .unwrap();
            let expected = snapshots.iter().filter(|r| r.state() == state).count();
            assert_eq!(
                page.records.len(),
                expected,
                "{context}: {state:?} {owner:?}"
            );
            assert_eq!(page.total, expected, "{context}: {state:?} {owner:?} total");
        }
    }
    let active = active_task_ids(store).await;
    let expected: Vec<String> = snapshots
        .iter()
        .filter(|r| !r.state().is_terminal())
        .map(|r| r.id().to_string())
        .collect();
    assert_eq!(active, expected, "{context}: active set");
    // On disk, the active set holds unfinished tasks only, and every one of them but
    // those still waiting for the sweep to write their key.
    let on_disk = active_keys(&store.db);
    for id in &expected {
        assert!(
            on_disk.contains(id) || store.tasks.active.is_unmarked(&TaskId::from(id.as_str())),
            "{context}: {id} is in no active set"
        );
    }
    assert!(
        on_disk.iter().all(|id| expected.contains(id)),
        "{context}: active-set keys {on_disk:?}, unfinished tasks {expected:?}"
    );
    assert_rest_index_true(store, &snapshots, context);
}

/// A task indexed at rest is unfinished, its snapshot is its last commit, and the index
/// names that commit and the task's listing entry (see `resting`).
pub(super) fn assert_rest_index_true(store: &SledStore, tasks: &[TaskRecord], context: &str) {
    for item in store.db.scan_prefix(b"W") {
        let (key, value) = item.unwrap();
        let id = String::from_utf8_lossy(&key[1..]).into_owned();
        let Some(r) = tasks.iter().find(|r| r.id().as_str() == id) else {
            panic!("{context}: {id} is indexed at rest but not stored");
        };
        assert!(
            !r.state().is_terminal(),
            "{context}: {id} indexed, terminal"
        );
        let snapshot = store.db.get(crate::layout::task_key(r.id())).unwrap();
        let header = crate::layout::Header::read(&snapshot.unwrap()).unwrap();
        assert_eq!(
            (header.version, header.last_seq),
            (r.version, r.last_seq),
            "{context}: {id} is indexed at rest, and its snapshot is not its last commit"
        );
        let indexed = crate::resting::decode(r.id().clone(), &value).unwrap();
        let at = indexed.position;
        assert_eq!(
            (at.version, at.last_seq),
            (r.version, r.last_seq),
            "{context}: {id}"
        );
        assert_eq!(
            indexed.entry,
            index::IndexEntry::of(r),
            "{context}: {id}'s entry"
        );
        let rest = crate::rest::Rest::of(r);
        assert!(rest.is_some(), "{context}: {id} indexed, not at rest");
        assert_eq!(at.rest, rest, "{context}: {id} indexed as it rests");
    }
}

/// Each stored task is listed exactly once, in its stored state, and counted.
pub(super) async fn assert_listed_once(store: &SledStore, snapshots: &[TaskRecord], context: &str) {
    let page = store
        .list(&ListQuery {
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    let sorted = |records: &[TaskRecord]| {
        let mut pairs: Vec<(String, TaskState)> = records
            .iter()
            .map(|r| (r.id().to_string(), r.state()))
            .collect();
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        pairs
    };
    assert_eq!(
        sorted(&page.records),
        sorted(snapshots),
        "{context}: listing"
    );
    assert_eq!(page.total, snapshots.len(), "{context}: total");
}

/// A `T` value as stores of format 1 wrote it (`layout`): the header's words, its
/// parts (the entry, no previous entry, the events) and the record, uncompressed.
pub(super) fn uncompressed_snapshot(r: &TaskRecord, events: &[TaskEvent]) -> Vec<u8> {
    let entry = serde_json::to_vec(&fundi_runtime::store::index::IndexEntry::of(r)).unwrap();
    let events_json = serde_json::to_vec(events).unwrap();
    let mut bytes = vec![1];
    for word in [r.version, r.last_seq, events.last().map_or(0, |e| e.seq)] {
        bytes.extend_from_slice(&word.to_be_bytes());
    }
    for part in [entry.as_slice(), b"", events_json.as_slice()] {
        bytes.extend_from_slice(&(part.len() as u32).to_be_bytes());
        bytes.extend_from_slice(part);
    }
    bytes.extend_from_slice(&serde_json::to_vec(r).unwrap());
    bytes
}
