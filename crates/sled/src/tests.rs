use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};

use fundi_runtime::model::*;
use fundi_runtime::store::*;

use crate::*;
use fundi_runtime::model::{Message, Part, TaskEventKind, TaskStatus};
use fundi_runtime::testing::store_contract::{
    self, advance, created, event_seqs, list_all, push_config, record, try_advance,
    try_advance_saying,
};

/// The kinds of store the tests run on.
const KINDS: [&str; 3] = ["memory", "sled-sync", "sled-batched"];

/// A fresh, empty store of `kind`.
fn fresh(kind: &str) -> Arc<dyn TaskStore> {
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

async fn stores() -> Vec<(&'static str, Arc<dyn TaskStore>)> {
    KINDS.into_iter().map(|kind| (kind, fresh(kind))).collect()
}

#[tokio::test]
async fn the_memory_and_sled_stores_keep_the_task_store_contract() {
    for kind in KINDS {
        store_contract::check_task_store(kind, || async move { fresh(kind) }).await;
    }
}

/// Terminal and unfinished tasks (which the sled store indexes in different places)
/// interleave in one order, in every filter, across many pages and across reopening.
#[tokio::test]
async fn listing_interleaves_terminal_and_unfinished_tasks_across_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let mut named = stores().await;
    named.push(("sled-on-disk", Arc::new(reopen(dir.path()).await)));
    let states = [
        TaskState::Completed,
        TaskState::InputRequired,
        TaskState::Working,
    ];
    // 200 tasks: three share each timestamp; contexts alternate (one id a prefix of the
    // other); a third are terminal.
    let spec = |n: usize| {
        let ts = (n / 3) as i64 * 10;
        (format!("t{n:03}"), ["a", "ab"][n % 2], states[n % 3], ts)
    };
    let queries = [
        ("all", ListQuery::default()),
        (
            "context a",
            ListQuery {
                context_id: Some(ContextId::from("a")),
                ..Default::default()
            },
        ),
        (
            "completed in ab",
            ListQuery {
                context_id: Some(ContextId::from("ab")),
                state: Some(TaskState::Completed),
                ..Default::default()
            },
        ),
        (
            "working",
            ListQuery {
                state: Some(TaskState::Working),
                ..Default::default()
            },
        ),
        (
            "recent",
            ListQuery {
                updated_after: Some(Utc.timestamp_millis_opt(500).unwrap()),
                ..Default::default()
            },
        ),
    ];
    let expected = |query: &ListQuery| {
        let mut tasks: Vec<_> = (0..200)
            .map(spec)
            .filter(|(_, ctx, state, ts)| {
                query.context_id.as_ref().is_none_or(|c| c.as_str() == *ctx)
                    && query.state.is_none_or(|s| s == *state)
                    && query
                        .updated_after
                        .is_none_or(|t| t.timestamp_millis() <= *ts)
            })
            .map(|(id, _, _, ts)| (ts, id))
            .collect();
        tasks.sort();
        tasks.reverse();
        tasks.into_iter().map(|(_, id)| id).collect::<Vec<_>>()
    };
    for (name, store) in named {
        for n in 0..200 {
            let (id, ctx, state, ts) = spec(n);
            let r = record(&id, ctx, TaskState::Submitted, 0, "x");
            store.commit(&r, 0, &[created(&r)]).await.unwrap();
            advance(&*store, &id, state, ts).await;
        }
        for (query_name, query) in &queries {
            let context = format!("{name}: {query_name}");
            assert_eq!(
                list_all(&*store, query, &context).await,
                expected(query),
                "{context}"
            );
        }
    }
    // Dropped above: closed cleanly. Then crashed, so the next open repairs.
    for after in ["a clean close", "a crash"] {
        let store = reopen(dir.path()).await;
        for (query_name, query) in &queries {
            let context = format!("reopened after {after}: {query_name}");
            assert_eq!(
                list_all(&store, query, &context).await,
                expected(query),
                "{context}"
            );
        }
        store.crash();
    }
}

#[tokio::test]
async fn sled_keeps_everything_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
        let r = record("t1", "c", TaskState::Submitted, 1_000, "u");
        store.commit(&r, 0, &[created(&r)]).await.unwrap();
        advance(&store, "t1", TaskState::Working, 2_000).await;
    }
    let store = reopen(dir.path()).await;
    let r = store.get(&TaskId::from("t1")).await.unwrap().unwrap();
    assert_eq!((r.state(), r.version), (TaskState::Working, 2));
    assert_eq!(store.events(r.id(), 0, 10).await.unwrap().len(), 2);
    assert_eq!(store.active().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sync_writers_all_complete_sharing_flushes() {
    let store = Arc::new(SledStore::temporary(Durability::Sync).unwrap());
    let writers: Vec<_> = (0..200)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let r = record(&format!("t{i}"), "c", TaskState::Submitted, 1_000 + i, "u");
                store.commit(&r, 0, &[created(&r)]).await
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap().unwrap();
    }
    let page = store
        .list(&ListQuery {
            limit: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.total, 200);
}

fn push_stores() -> Vec<(&'static str, Arc<dyn PushStore>)> {
    vec![
        ("memory", Arc::new(MemoryStore::new())),
        (
            "sled",
            Arc::new(SledStore::temporary(Durability::Sync).unwrap()),
        ),
    ]
}

#[tokio::test]
async fn the_memory_and_sled_stores_keep_the_push_store_contract() {
    for (name, store) in push_stores() {
        store_contract::push_configs_are_kept_per_task(name, &*store).await;
    }
}

#[tokio::test]
async fn sled_keeps_push_configs_and_cursors_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
        store
            .put_config(&push_config("t1", "a", "https://x/1"), 0)
            .await
            .unwrap();
        let cursor = PushCursor {
            delivered_seq: 4,
            ..PushCursor::default()
        };
        store
            .set_cursor(&TaskId::from("t1"), "a", &cursor)
            .await
            .unwrap();
        store.flush().await.unwrap();
    }
    let store = reopen(dir.path()).await;
    let open = store.unfinished().await.unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].cursor.delivered_seq, 4);
    assert_eq!(open[0].config.url, "https://x/1");
}

/// Commits a `working` status whose message is `text`, as a skill's progress, with a
/// checkpoint counting the steps; returns the record written.
async fn progress(store: &dyn TaskStore, id: &str, text: &str) -> TaskRecord {
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
    let event = TaskEvent {
        seq: r.last_seq,
        task_id: r.task.id.clone(),
        context_id: r.task.context_id.clone(),
        kind: TaskEventKind::Status(r.task.status.clone()),
    };
    store.commit(&r, r.version - 1, &[event]).await.unwrap();
    r
}

/// A long-running task's progress commits write their events alone, one value each,
/// after its snapshot; a new snapshot is written every `SNAPSHOT_EVERY` commits (moving
/// out the events the first one carried). The task reads back as written after every
/// commit (its snapshot with the commits since replayed, checkpoint and version
/// included), and from any point and with any limit, the log reads back whole and in
/// order, across a reopen too.
#[tokio::test]
async fn progress_commits_write_their_events_alone_and_read_back_whole() {
    use crate::layout::{Header, event_prefix, task_key};
    use crate::store::SNAPSHOT_EVERY;
    let dir = tempfile::tempdir().unwrap();
    let sled = Arc::new(reopen(dir.path()).await);
    let mut all = stores().await;
    all.push(("sled-inspected", sled.clone()));
    // Past the second snapshot: about 28 KiB of events, several times what a snapshot
    // carries.
    let commits = 2 * SNAPSHOT_EVERY + 6;
    for (name, store) in &all {
        let r = record("long", "c", TaskState::Working, 1_000, "u");
        store.commit(&r, 0, &[created(&r)]).await.unwrap();
        for n in 0..commits {
            let written = progress(&**store, "long", &format!("{n:03} {}", "p".repeat(300))).await;
            let read = store.get(written.id()).await.unwrap();
            assert_eq!(read.as_ref(), Some(&written), "{name}: after commit {n}");
        }
    }
    let id = TaskId::from("long");
    let last = commits + 1;
    let check_log = |store: Arc<dyn TaskStore>, name: String| {
        let id = id.clone();
        async move {
            for after in 0..=last {
                for limit in [1, 3, 100] {
                    let seqs = event_seqs(&*store, &id, after, limit).await;
                    let expected: Vec<u64> = (after + 1..=last).take(limit).collect();
                    assert_eq!(seqs, expected, "{name}: after {after}, limit {limit}");
                }
            }
        }
    };
    for (name, store) in &all {
        check_log(store.clone(), name.to_string()).await;
    }
    // One value per commit, each with its own events; the snapshot carries none, and
    // is the last `SNAPSHOT_EVERY`th commit's.
    let bytes = sled.db.get(task_key(&id)).unwrap().unwrap();
    let header = Header::read(&bytes).unwrap();
    assert_eq!(header.inline(&bytes), Default::default());
    assert_eq!(header.version, 2 * SNAPSHOT_EVERY + 1);
    let values: Vec<Vec<u64>> = sled
        .db
        .scan_prefix(event_prefix(&id))
        .values()
        .map(|v| decode_seqs(&v.unwrap()))
        .collect();
    let one_each: Vec<Vec<u64>> = (1..=last).map(|seq| vec![seq]).collect();
    assert_eq!(values, one_each);
    // And across a reopen: the tail is still replayed, and listed as it stands.
    let written = sled.get(&id).await.unwrap().unwrap();
    drop(all);
    let sled = Arc::into_inner(sled).expect("the only handle left");
    drop(sled);
    let store = Arc::new(reopen(dir.path()).await);
    assert_eq!(store.get(&id).await.unwrap(), Some(written.clone()));
    check_log(store.clone(), "reopened".into()).await;
    let listed = store
        .list(&ListQuery {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.records, [written]);
    assert_eq!(active_task_ids(&store).await, ["long"]);
}

fn decode_seqs(bytes: &[u8]) -> Vec<u64> {
    let events = crate::layout::decode_events(bytes).unwrap();
    events.iter().map(|e| e.seq).collect()
}

/// A task written before snapshots carried events (its header has no format byte, its
/// events are all in their own values) reads back whole, and its next commits keep
/// writing events apart: a log never has events inline after ones apart.
#[tokio::test]
async fn a_task_whose_events_were_all_written_apart_keeps_them_so() {
    use crate::layout::{Header, event_key, event_prefix, task_key};
    use fundi_runtime::store::index::IndexEntry;
    let dir = tempfile::tempdir().unwrap();
    let store = reopen(dir.path()).await;
    let r = record("before", "c", TaskState::Working, 1_000, "u");
    store.commit(&r, 0, &[created(&r)]).await.unwrap();
    // Rewritten as the build before wrote it: version, last seq, entry, no previous
    // entry, JSON; the first event in its own value.
    let entry = serde_json::to_vec(&IndexEntry::of(&r)).unwrap();
    let mut before = Vec::new();
    before.extend_from_slice(&r.version.to_be_bytes());
    before.extend_from_slice(&r.last_seq.to_be_bytes());
    before.extend_from_slice(&(entry.len() as u32).to_be_bytes());
    before.extend_from_slice(&entry);
    before.extend_from_slice(&0u32.to_be_bytes());
    before.extend_from_slice(&serde_json::to_vec(&r).unwrap());
    store.db.insert(task_key(r.id()), before).unwrap();
    store
        .db
        .insert(
            event_key(r.id(), 1),
            serde_json::to_vec(&created(&r)).unwrap(),
        )
        .unwrap();
    drop(store);
    let store = reopen(dir.path()).await;
    assert_eq!(store.get(r.id()).await.unwrap().unwrap().version, 1);
    assert_eq!(event_seqs(&store, r.id(), 0, 10).await, [1]);

    // Its next commit writes a snapshot in the current layout (and then its commits
    // may follow it alone).
    progress(&store, "before", "still going").await;
    assert_eq!(event_seqs(&store, r.id(), 0, 10).await, [1, 2]);
    assert_eq!(event_seqs(&store, r.id(), 1, 10).await, [2]);
    let header = Header::read(&store.db.get(task_key(r.id())).unwrap().unwrap()).unwrap();
    assert_eq!((header.version, header.inline_through), (2, 0));
    assert_eq!(store.db.scan_prefix(event_prefix(r.id())).count(), 2);
}

/// Opens the store in `dir` again (see `testing::open_sled`).
async fn reopen(dir: &std::path::Path) -> SledStore {
    crate::testing::open_sled(dir).await
}

/// sled itself, opened on `dir` again.
async fn reopen_raw(dir: &std::path::Path) -> sled::Db {
    crate::testing::once_unlocked(|| sled::open(dir))
        .await
        .unwrap()
}

/// The `A` keys in `db`, as task ids.
fn active_keys(db: &sled::Db) -> Vec<String> {
    db.scan_prefix(b"A")
        .keys()
        .map(|key| crate::layout::active_id(&key.unwrap()).to_string())
        .collect()
}

/// The ids of the tasks `active` returns (what recovery resumes), in order.
async fn active_task_ids(store: &SledStore) -> Vec<String> {
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
async fn assert_consistent(store: &SledStore, context: &str) {
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
        TaskState::Completed,
    ] {
        for owner in [None, Some("u".to_string())] {
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
            on_disk.contains(id) || store.active.is_unmarked(&TaskId::from(id.as_str())),
            "{context}: {id} is in no active set"
        );
    }
    assert!(
        on_disk.iter().all(|id| expected.contains(id)),
        "{context}: active-set keys {on_disk:?}, unfinished tasks {expected:?}"
    );
}

/// A crash can stop a commit after any of its writes. Whatever the point, the reopened
/// store holds the commit whole (if its commit point was written: its snapshot, or its
/// own events' value) or not at all, agrees with itself everywhere, and takes the task's
/// next commit. For a task whose events ride in its snapshot, for one whose first event
/// is too large to (its commits then write their events apart), and for commits too
/// large for the snapshot, which move its events out.
#[tokio::test]
async fn a_commit_cut_short_by_a_crash_is_whole_or_absent_after_reopen() {
    use std::sync::atomic::Ordering;
    // The commit to cut: 0 creates t1; 1 moves it to working (its events alone, after
    // the snapshot); 2 completes it with two events after that (a new snapshot: the
    // events move out of the old one, and the task leaves the active set); 3 completes
    // it right after its creation (a new snapshot, carrying the events if they fit).
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Events {
        Inline,
        Apart,
        MovingOut,
    }
    let cases = (0..4).flat_map(|stage| {
        [Events::Inline, Events::Apart, Events::MovingOut].map(|events| (stage, events))
    });
    // Too large for the snapshot, with what it already carries.
    let large = "x".repeat(crate::store::INLINE_EVENTS_LIMIT);
    for (stage, events) in cases.filter(|&(stage, e)| stage > 0 || e != Events::MovingOut) {
        let cut_says = (events == Events::MovingOut).then_some(large.as_str());
        // The commits before the cut one.
        let before: u64 = match stage {
            0 => 0,
            1 | 3 => 1,
            _ => 2,
        };
        for writes in 0.. {
            let context = format!("stage {stage}, {events:?}, crash after {writes} writes");
            let dir = tempfile::tempdir().unwrap();
            let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
            let other = record("t2", "c", TaskState::Working, 500, "u");
            store.commit(&other, 0, &[created(&other)]).await.unwrap();
            let mut fresh = record("t1", "c", TaskState::Submitted, 1_000, "u");
            if events == Events::Apart {
                fresh.task.history = vec![Message::user(vec![Part::text(large.clone())])];
            }
            if stage > 0 {
                store.commit(&fresh, 0, &[created(&fresh)]).await.unwrap();
            }
            if stage == 2 {
                try_advance(&store, "t1", TaskState::Working, 2_000, 1)
                    .await
                    .unwrap();
            }
            store.writes_left.store(writes, Ordering::Release);
            let result = match stage {
                0 => store.commit(&fresh, 0, &[created(&fresh)]).await,
                1 => try_advance_saying(&store, "t1", TaskState::Working, 2_000, 1, cut_says)
                    .await
                    .map(drop),
                _ => try_advance_saying(&store, "t1", TaskState::Completed, 3_000, 2, cut_says)
                    .await
                    .map(drop),
            };
            let finished = result.is_ok();
            store.crash();

            let store = reopen(dir.path()).await;
            assert_consistent(&store, &context).await;
            let t1 = store.get(&TaskId::from("t1")).await.unwrap();
            let version = t1.as_ref().map_or(0, |r| r.version);
            if finished || writes == 0 {
                assert_eq!(version, before + u64::from(finished), "{context}");
            }
            assert!(version == before || version == before + 1, "{context}");
            let committed = version == before + 1;
            // The task goes on: no leftover of the cut commit blocks the next one.
            match t1 {
                Some(r) if !r.state().is_terminal() => {
                    try_advance(&store, "t1", TaskState::Completed, 9_000, 2)
                        .await
                        .unwrap();
                }
                Some(_) => {}
                None => {
                    store.commit(&fresh, 0, &[created(&fresh)]).await.unwrap();
                }
            }
            assert_consistent(&store, &format!("{context}, then one more commit")).await;
            // A snapshot carries its task's events as long as they fit; a commit cut
            // before its commit point leaves them there.
            if stage == 0 || stage == 3 {
                let apart = store
                    .db
                    .scan_prefix(crate::layout::event_prefix(&TaskId::from("t1")))
                    .count();
                let moved = events == Events::MovingOut && committed;
                assert_eq!(
                    apart > 0,
                    events == Events::Apart || moved,
                    "{context}: events written apart"
                );
            }
            if finished {
                break;
            }
        }
    }
}

#[tokio::test]
async fn a_clean_close_needs_no_repair_and_a_crash_does() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
        let r = record("t1", "c", TaskState::Submitted, 1_000, "u");
        store.commit(&r, 0, &[created(&r)]).await.unwrap();
    }
    let store = reopen(dir.path()).await;
    assert!(
        !store.db.contains_key(crate::layout::CLEAN_MARKER).unwrap(),
        "an open store is not marked clean"
    );
    store.crash();
    let store = reopen(dir.path()).await;
    assert_consistent(&store, "after a crash with nothing half done").await;
}

/// Stores written before the `T` header (record JSON alone, the indexed entry in `V`,
/// counts in `N` keys) open, read, list and count as before, and a task's next commit
/// moves it to the current layout.
#[tokio::test]
async fn a_store_in_the_previous_layout_opens_and_moves_on() {
    use crate::layout::{context_key, event_key, legacy_head_key, task_key, updated_key};
    use fundi_runtime::store::index::IndexEntry;
    let dir = tempfile::tempdir().unwrap();
    {
        let db = sled::Config::new().path(dir.path()).open().unwrap();
        for (id, state) in [("old1", TaskState::Working), ("old2", TaskState::Completed)] {
            let r = record(id, "c", state, 1_000, "u");
            let entry = IndexEntry::of(&r);
            let entry_json = serde_json::to_vec(&entry).unwrap();
            db.insert(task_key(r.id()), serde_json::to_vec(&r).unwrap())
                .unwrap();
            db.insert(
                legacy_head_key(r.id()),
                serde_json::to_vec(&serde_json::json!({"v": 1, "e": entry})).unwrap(),
            )
            .unwrap();
            db.insert(
                event_key(r.id(), 1),
                serde_json::to_vec(&created(&r)).unwrap(),
            )
            .unwrap();
            db.insert(updated_key(&entry), entry_json.clone()).unwrap();
            db.insert(context_key(&entry), entry_json).unwrap();
            if !state.is_terminal() {
                db.insert([b"A".as_slice(), id.as_bytes()].concat(), &[])
                    .unwrap();
            }
        }
        db.insert(b"Mcounts", &[]).unwrap();
        db.flush().unwrap();
    }
    let store = reopen(dir.path()).await;
    // The unfinished task's entries left the sled index for memory.
    assert_eq!(store.db.scan_prefix(b"U").count(), 1);
    assert_eq!(store.db.scan_prefix(b"C").count(), 1);
    let page = store
        .list(&ListQuery {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!((page.records.len(), page.total), (2, 2));
    let working = ListQuery {
        limit: 10,
        state: Some(TaskState::Working),
        owner: Some("u".into()),
        ..Default::default()
    };
    assert_eq!(store.list(&working).await.unwrap().total, 1);
    let active = store.active().await.unwrap();
    assert_eq!(active.len(), 1);
    assert_eq!(store.events(active[0].id(), 0, 10).await.unwrap().len(), 1);

    try_advance(&store, "old1", TaskState::Completed, 2_000, 1)
        .await
        .unwrap();
    assert!(
        !store
            .db
            .contains_key(legacy_head_key(&TaskId::from("old1")))
            .unwrap()
    );
    let mut snapshots = Vec::new();
    for id in ["old1", "old2"] {
        snapshots.push(store.get(&TaskId::from(id)).await.unwrap().unwrap());
    }
    assert_listed_once(&store, &snapshots, "after moving on").await;
    assert_eq!(store.list(&working).await.unwrap().total, 0);
}

/// Stores written before unfinished tasks were indexed in memory hold every task's
/// entry in `U` and `C`, and a crash could leave an unfinished task's previous entry
/// there too. Opened now, after a clean close or a crash, each task is listed once, in
/// its stored state, and sled's index keeps terminal tasks only.
#[tokio::test]
async fn a_store_indexing_unfinished_tasks_on_disk_opens_and_moves_on() {
    use crate::layout::{Header, LIVE_MARKER, context_key, encode_record, task_key, updated_key};
    use fundi_runtime::store::index::IndexEntry;
    for crashed in [false, true] {
        let context = format!("crashed: {crashed}");
        let dir = tempfile::tempdir().unwrap();
        let store = reopen(dir.path()).await;
        for (id, state) in [("t1", TaskState::Working), ("t2", TaskState::Completed)] {
            let r = record(id, "c", TaskState::Submitted, 1_000, "u");
            store.commit(&r, 0, &[created(&r)]).await.unwrap();
            advance(&store, id, state, 2_000).await;
        }
        // As the earlier layout left it: t1's entries in the index, and (as after a
        // crash between a commit's index insert and its removals) its previous ones
        // too, named by its header.
        let t1 = store.get(&TaskId::from("t1")).await.unwrap().unwrap();
        let mut before = t1.clone();
        before.task.status.state = TaskState::Submitted;
        before.task.status.timestamp = Utc.timestamp_millis_opt(1_000).unwrap();
        let (entry, previous) = (IndexEntry::of(&t1), IndexEntry::of(&before));
        let (entry_json, previous_json) = (
            serde_json::to_vec(&entry).unwrap(),
            serde_json::to_vec(&previous).unwrap(),
        );
        let stored = store.db.get(task_key(t1.id())).unwrap().unwrap();
        let header = encode_record(
            &t1,
            &serde_json::to_vec(&t1).unwrap(),
            &entry_json,
            Some(&previous_json),
            &Header::read(&stored).unwrap().inline(&stored),
        )
        .unwrap();
        store.db.insert(task_key(t1.id()), header).unwrap();
        for (e, json) in [(&entry, &entry_json), (&previous, &previous_json)] {
            store.db.insert(updated_key(e), json.as_slice()).unwrap();
            store.db.insert(context_key(e), json.as_slice()).unwrap();
        }
        store.db.remove(LIVE_MARKER).unwrap();
        match crashed {
            true => store.crash(),
            false => drop(store),
        }

        let store = reopen(dir.path()).await;
        assert!(store.db.contains_key(LIVE_MARKER).unwrap(), "{context}");
        assert_consistent(&store, &context).await;
        let listed = |state| ListQuery {
            limit: 10,
            state: Some(state),
            context_id: Some(ContextId::from("c")),
            ..Default::default()
        };
        let working = store.list(&listed(TaskState::Working)).await.unwrap();
        assert_eq!(working.records.len(), 1, "{context}");
        let submitted = store.list(&listed(TaskState::Submitted)).await.unwrap();
        assert_eq!(submitted.records.len(), 0, "{context}");
        // And it goes on: t1 completes into sled's index.
        advance(&store, "t1", TaskState::Completed, 3_000).await;
        assert_consistent(&store, &format!("{context}, then t1 completed")).await;
    }
}

/// Each stored task is listed exactly once, in its stored state, and counted.
async fn assert_listed_once(store: &SledStore, snapshots: &[TaskRecord], context: &str) {
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

/// Tasks with generated (time-ordered) ids join the active set lazily: a task that ends
/// before the sweep never writes its key, the sweep writes the keys of the others, and
/// a crash at any time leaves recovery every unfinished task, swept or not.
#[tokio::test]
async fn tasks_join_the_active_set_lazily_and_a_crash_loses_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
    // Generated after the open: above its watermark.
    let ids: Vec<String> = (0..3).map(|_| TaskId::generate().to_string()).collect();
    let [quick, swept_then_done, swept] = [&ids[0], &ids[1], &ids[2]];
    for id in [quick, swept_then_done, swept] {
        let r = record(id, "c", TaskState::Working, 1_000, "u");
        store.commit(&r, 0, &[created(&r)]).await.unwrap();
    }
    assert_eq!(
        active_keys(&store.db),
        Vec::<String>::new(),
        "no key before a sweep"
    );
    advance(&store, quick, TaskState::Completed, 2_000).await;
    store.sweep();
    let mut expected = vec![swept_then_done.clone(), swept.clone()];
    assert_eq!(
        active_keys(&store.db),
        expected,
        "the sweep writes the unfinished tasks' keys"
    );
    let watermark = store.db.get(crate::layout::WATERMARK_KEY).unwrap().unwrap();
    assert!(
        watermark.as_ref() > swept.as_bytes(),
        "the watermark moved past the swept tasks"
    );
    advance(&store, swept_then_done, TaskState::Completed, 3_000).await;
    let late = &TaskId::generate().to_string();
    let r = record(late, "c", TaskState::Working, 4_000, "u");
    store.commit(&r, 0, &[created(&r)]).await.unwrap();
    expected = vec![swept.clone()];
    assert_eq!(
        active_keys(&store.db),
        expected,
        "a terminal task's key goes"
    );
    store.crash();

    let store = reopen(dir.path()).await;
    let active = active_task_ids(&store).await;
    expected = vec![swept.clone(), late.clone()];
    assert_eq!(
        active, expected,
        "recovery sees the swept task and the one created after"
    );
    assert_eq!(
        active_keys(&store.db),
        expected,
        "both are in the active set on disk"
    );
    let events = store
        .events(&TaskId::from(late.as_str()), 0, 10)
        .await
        .unwrap();
    assert_eq!(events.len(), 1, "the unswept task's events are kept");
    // Each goes on as before.
    for id in [swept, late] {
        advance(&store, id, TaskState::Completed, 5_000).await;
    }
    assert!(store.active().await.unwrap().is_empty());
    assert_eq!(active_keys(&store.db), Vec::<String>::new());
}

/// A task whose id sorts at or below the watermark (a clock set back) cannot wait for
/// the sweep: the next open would not look for it. It writes its key at once.
#[tokio::test]
async fn a_task_below_the_watermark_writes_its_key_with_its_first_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
    let early = "00000000-0000-7000-8000-000000000000";
    let r = record(early, "c", TaskState::Working, 1_000, "u");
    store.commit(&r, 0, &[created(&r)]).await.unwrap();
    assert_eq!(active_keys(&store.db), vec![early.to_string()]);
    assert!(!store.active.is_unmarked(&TaskId::from(early)));
    store.crash();
    let store = reopen(dir.path()).await;
    assert_eq!(store.active().await.unwrap().len(), 1);
    advance(&store, early, TaskState::Completed, 2_000).await;
    assert_eq!(active_keys(&store.db), Vec::<String>::new());
}

/// A clean close sweeps a last time: the next open finds every unfinished task's key and
/// nothing above the watermark.
#[tokio::test]
async fn a_clean_close_writes_every_missing_key() {
    let dir = tempfile::tempdir().unwrap();
    let id;
    {
        let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
        id = TaskId::generate().to_string();
        let r = record(&id, "c", TaskState::Working, 1_000, "u");
        store.commit(&r, 0, &[created(&r)]).await.unwrap();
        assert_eq!(active_keys(&store.db), Vec::<String>::new());
    }
    let db = reopen_raw(dir.path()).await;
    assert_eq!(active_keys(&db), vec![id.clone()]);
    let watermark = db.get(crate::layout::WATERMARK_KEY).unwrap().unwrap();
    assert!(watermark.as_ref() > id.as_bytes());
    drop(db);
    let store = reopen(dir.path()).await;
    assert_eq!(store.active().await.unwrap().len(), 1);
}

/// Sweeps racing commits: whatever the interleaving, no terminal task keeps a key and
/// every unfinished one has its key or is still waiting for the sweep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweeps_racing_commits_leave_no_task_out_and_no_key_behind() {
    let store = Arc::new(SledStore::temporary(Durability::Sync).unwrap());
    let sweeping = {
        let store = store.clone();
        tokio::spawn(async move {
            for _ in 0..200 {
                store.sweep();
                tokio::task::yield_now().await;
            }
        })
    };
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut unfinished = Vec::new();
                for n in 0..50 {
                    let id = TaskId::generate().to_string();
                    let r = record(&id, "c", TaskState::Working, 1_000, "u");
                    store.commit(&r, 0, &[created(&r)]).await.unwrap();
                    tokio::task::yield_now().await;
                    if (writer + n) % 3 == 0 {
                        unfinished.push(id);
                    } else {
                        advance(&*store, &id, TaskState::Completed, 2_000).await;
                    }
                }
                unfinished
            })
        })
        .collect();
    let mut unfinished = Vec::new();
    for writer in writers {
        unfinished.extend(writer.await.unwrap());
    }
    sweeping.await.unwrap();
    unfinished.sort();
    let keys = active_keys(&store.db);
    assert!(
        keys.iter().all(|id| unfinished.contains(id)),
        "a terminal task kept its key"
    );
    for id in &unfinished {
        assert!(
            keys.contains(id) || store.active.is_unmarked(&TaskId::from(id.as_str())),
            "{id} is in no active set"
        );
    }
    store.sweep();
    assert_eq!(active_keys(&store.db), unfinished);
}

/// A store records its format at every open; one written by a newer build (a format
/// this one does not know) is refused with an error naming both formats, and left as it
/// was, instead of being misread request by request.
#[tokio::test]
async fn a_store_in_a_newer_format_is_refused_and_left_untouched() {
    use crate::layout::{FORMAT_KEY, STORE_FORMAT};
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
        let format = store.db.get(FORMAT_KEY).unwrap().unwrap();
        assert_eq!(format.as_ref(), STORE_FORMAT.to_be_bytes());
        let r = record("t1", "c", TaskState::Working, 1_000, "u");
        store.commit(&r, 0, &[created(&r)]).await.unwrap();
        store
            .db
            .insert(FORMAT_KEY, &(STORE_FORMAT + 1).to_be_bytes())
            .unwrap();
    }
    let before: Vec<_> = {
        let db = reopen_raw(dir.path()).await;
        db.iter().map(|item| item.unwrap()).collect()
    };
    let error = crate::testing::once_unlocked(|| SledStore::open(dir.path(), Durability::Sync))
        .await
        .expect_err("a newer store is refused");
    assert!(
        matches!(error, StoreError::NewerFormat { found, supported }
            if found == STORE_FORMAT + 1 && supported == STORE_FORMAT),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains(&format!("store format {}", STORE_FORMAT + 1))
            && message.contains(&format!("up to {STORE_FORMAT}")),
        "{message}"
    );
    let db = reopen_raw(dir.path()).await;
    let after: Vec<_> = db.iter().map(|item| item.unwrap()).collect();
    assert_eq!(before, after, "a refused open writes nothing");
}

/// A commit that loses its race while moving a snapshot's events out (the slot of its
/// own first event is taken, by a writer racing from the same version whose commit is
/// in) takes back the copy it wrote: the snapshot still carries the events, once, and
/// the other writer's commit follows them.
#[tokio::test]
async fn a_move_that_loses_its_race_takes_back_what_it_wrote() {
    use crate::layout::{Header, encode_commit, encode_events, event_key, task_key};
    let store = SledStore::temporary(Durability::Sync).unwrap();
    let r = record("t1", "c", TaskState::Working, 1_000, "u");
    store.commit(&r, 0, &[created(&r)]).await.unwrap();
    // The other writer's commit: a progress note, its events alone after the snapshot.
    let note = TaskStatus {
        state: TaskState::Working,
        message: Some(Message::agent(vec![Part::text("theirs")])),
        timestamp: Utc.timestamp_millis_opt(1_500).unwrap(),
    };
    let theirs = TaskEvent {
        seq: 2,
        task_id: r.task.id.clone(),
        context_id: r.task.context_id.clone(),
        kind: TaskEventKind::Status(note.clone()),
    };
    let events = encode_events(std::slice::from_ref(&theirs)).unwrap();
    let theirs_value = encode_commit(2, 2, None, &events).unwrap();
    let taken = event_key(r.id(), 2);
    // Too large to stay in the snapshot, and final: a new snapshot, moving the events
    // out first; the other writer takes slot 2 between that copy and this commit's own.
    let large = "x".repeat(crate::store::INLINE_EVENTS_LIMIT);
    let mut writes = 0;
    let slot = taken.clone();
    *store.before_each_write.0.lock().unwrap() = Some(Box::new(move |db: &sled::Db| {
        writes += 1;
        if writes == 2 {
            db.insert(&slot, theirs_value.as_slice()).unwrap();
        }
    }));
    let lost = try_advance_saying(&store, "t1", TaskState::Completed, 2_000, 1, Some(&large)).await;
    store.before_each_write.0.lock().unwrap().take();
    assert!(
        matches!(lost, Err(StoreError::Conflict { found: 2, .. })),
        "{lost:?}"
    );
    assert!(
        !store.db.contains_key(event_key(r.id(), 1)).unwrap(),
        "the copy stays"
    );
    assert!(
        store.db.contains_key(&taken).unwrap(),
        "the other writer's slot went"
    );
    let bytes = store.db.get(task_key(r.id())).unwrap().unwrap();
    let header = Header::read(&bytes).unwrap();
    assert_eq!((header.version, header.inline_through), (1, 1));
    let seqs = event_seqs(&store, r.id(), 0, 10).await;
    assert_eq!(seqs, [1, 2]);
    let now = store.get(r.id()).await.unwrap().unwrap();
    assert_eq!((now.version, now.last_seq), (2, 2));
    assert_eq!(now.task.status, note);
}

/// The vendored sled splits index nodes above 64 children and merges them below 16
/// instead of 256 and 64 (`vendor/sled/FUNDI-PATCH.md`). Enough keys for many index
/// nodes, written in order (as task ids and listing keys are) and scattered, then mostly
/// removed (leaves merge, and so index nodes), read back exactly, before and after a
/// reopen.
#[tokio::test]
async fn sled_index_nodes_split_and_merge_without_losing_keys() {
    use std::collections::BTreeMap;
    const N: u32 = 20_011; // prime: `i * 7_919 % N` visits every i once.
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::<Vec<u8>, Vec<u8>>::new();
    let in_order = |i: u32| [b"a".as_slice(), &i.to_be_bytes()].concat();
    let scattered = |i: u32| [b"b".as_slice(), &(i * 7_919 % N).to_be_bytes()].concat();
    let assert_same = |db: &sled::Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, when: &str| {
        let stored: Vec<(Vec<u8>, Vec<u8>)> = db
            .iter()
            .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect();
        let expected: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(stored.len(), expected.len(), "{when}: number of keys");
        assert!(stored == expected, "{when}: keys or values differ");
        for (key, value) in model.iter().step_by(97) {
            assert_eq!(
                db.get(key).unwrap().as_deref(),
                Some(value.as_slice()),
                "{when}"
            );
        }
    };
    {
        let db = sled::open(dir.path()).unwrap();
        for i in 0..N {
            for key in [in_order(i), scattered(i)] {
                let value = vec![(i % 251) as u8; 1 + (i % 40) as usize];
                db.insert(&key, value.as_slice()).unwrap();
                model.insert(key, value);
            }
        }
        assert_same(&db, &model, "written");
        // Nine in ten of the ordered keys, in long runs: whole leaves empty out.
        for i in (0..N).filter(|i| i % 1_000 >= 100) {
            db.remove(in_order(i)).unwrap();
            model.remove(&in_order(i));
        }
        // Three in four of the scattered ones.
        for i in (0..N).filter(|i| i % 4 != 0) {
            db.remove(scattered(i)).unwrap();
            model.remove(&scattered(i));
        }
        assert_same(&db, &model, "mostly removed");
        db.flush().unwrap();
    }
    let db = reopen_raw(dir.path()).await;
    assert_same(&db, &model, "reopened");
    for i in 0..N / 2 {
        let key = in_order(N + i);
        db.insert(&key, &[1]).unwrap();
        model.insert(key, vec![1]);
    }
    assert_same(&db, &model, "written again after the reopen");
}

/// sled's flush alone does not survive a power loss (`log_sync`): every flush a `sync`
/// store waits for syncs the log file, and a settle with nothing pending syncs nothing.
#[tokio::test]
async fn a_sync_store_syncs_its_log_for_each_flush_it_waits_for() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
    // Opening ends with a flush: what repair wrote is durable before anything is read.
    assert_eq!(store.log.syncs(), 1);
    let r = record("t1", "c", TaskState::Working, 1_000, "u");
    store.commit(&r, 0, &[created(&r)]).await.unwrap();
    assert_eq!(store.log.syncs(), 2, "a commit waits for a synced flush");
    store.settle().await.unwrap();
    assert_eq!(store.log.syncs(), 2, "nothing pending: no flush, no sync");
    advance(&store, "t1", TaskState::Completed, 2_000).await;
    assert_eq!(store.log.syncs(), 3);
    store.flush().await.unwrap();
    assert_eq!(store.log.syncs(), 4, "an explicit flush syncs too");
}

/// sled writes a value too large for its log (over a quarter of a 512 KiB segment) as a
/// file of its own, which the vendored patch syncs before the log names it.
#[tokio::test]
async fn a_task_too_large_for_the_log_is_kept_in_a_file_of_its_own_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = record("t1", "c", TaskState::Completed, 1_000, "u");
    let text: String = (0..300_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    r.task.history = vec![Message::user(vec![Part::text(text)])];
    {
        let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
        store.commit(&r, 0, &[created(&r)]).await.unwrap();
    }
    let blobs = std::fs::read_dir(dir.path().join("blobs")).unwrap().count();
    assert!(
        blobs > 0,
        "the task went to sled's log, not to a blob: resize the test"
    );
    let store = reopen(dir.path()).await;
    let stored = store
        .get(r.id())
        .await
        .unwrap()
        .expect("the task survives a reopen");
    assert_eq!(stored.task.history, r.task.history);
}

/// A `T` value as stores of format 1 wrote it (`layout`): the header's words, its
/// parts (the entry, no previous entry, the events) and the record, uncompressed.
fn uncompressed_snapshot(r: &TaskRecord, events: &[TaskEvent]) -> Vec<u8> {
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

/// Snapshots are written compressed (format 2). A store of format 1, whose snapshots
/// are not, opens and reads the same; each task's next commit compresses its snapshot,
/// and the store stays consistent across a crash after it.
#[tokio::test]
async fn a_store_with_uncompressed_snapshots_opens_and_moves_on() {
    use crate::layout::{FORMAT_KEY, STORE_FORMAT, event_prefix, task_key};
    let dir = tempfile::tempdir().unwrap();
    let mut before = Vec::new();
    {
        let store = reopen(dir.path()).await;
        for (id, state) in [("t1", TaskState::Working), ("t2", TaskState::Completed)] {
            let r = record(id, "c", TaskState::Submitted, 1_000, "u");
            store.commit(&r, 0, &[created(&r)]).await.unwrap();
            let r = advance(&store, id, state, 2_000).await;
            let events = store.events(r.id(), 0, 10).await.unwrap();
            let written = store.db.get(task_key(r.id())).unwrap().unwrap();
            let plain = uncompressed_snapshot(&r, &events);
            assert_eq!(written.first(), Some(&2), "{id}: written in format 2");
            assert!(
                written.len() < plain.len(),
                "{id}: {} bytes compressed, {} not",
                written.len(),
                plain.len()
            );
            store.db.insert(task_key(r.id()), plain).unwrap();
            // That layout kept every event in the snapshot.
            for key in store.db.scan_prefix(event_prefix(r.id())).keys() {
                store.db.remove(key.unwrap()).unwrap();
            }
            before.push((r, events));
        }
        store.db.insert(FORMAT_KEY, &1u64.to_be_bytes()).unwrap();
    }

    let store = reopen(dir.path()).await;
    let format = store.db.get(FORMAT_KEY).unwrap().unwrap();
    assert_eq!(format.as_ref(), STORE_FORMAT.to_be_bytes());
    for (r, events) in &before {
        assert_eq!(store.get(r.id()).await.unwrap().as_ref(), Some(r));
        assert_eq!(&store.events(r.id(), 0, 10).await.unwrap(), events);
    }
    assert_eq!(active_task_ids(&store).await, ["t1"]);
    assert_consistent(&store, "format 1").await;

    let t1 = advance(&store, "t1", TaskState::Completed, 3_000).await;
    let written = store.db.get(task_key(t1.id())).unwrap().unwrap();
    assert_eq!(written.first(), Some(&2), "t1 moved on to format 2");
    assert_eq!(store.get(t1.id()).await.unwrap(), Some(t1.clone()));
    assert_eq!(event_seqs(&store, t1.id(), 0, 10).await, [1, 2, 3]);
    store.crash();
    let store = reopen(dir.path()).await;
    assert_consistent(&store, "format 1, then t1 completed").await;
    assert!(active_task_ids(&store).await.is_empty());
}

/// A damaged compressed snapshot is a codec error naming what is wrong, never a panic
/// or an allocation of what its length claims.
#[tokio::test]
async fn a_damaged_compressed_snapshot_is_an_error() {
    use crate::layout::{WORDS_END, task_key};
    let store = SledStore::temporary(Durability::Sync).unwrap();
    let r = record("t1", "c", TaskState::Working, 1_000, "u");
    store.commit(&r, 0, &[created(&r)]).await.unwrap();
    let id = r.id().clone();
    let good = store.db.get(task_key(&id)).unwrap().unwrap().to_vec();
    // After the header's words: the length the block decompresses to (LE).
    let length_at = WORDS_END;
    let claimed = |len: u32| {
        let mut bytes = good.clone();
        bytes[length_at..length_at + 4].copy_from_slice(&len.to_le_bytes());
        bytes
    };
    let real = u32::from_le_bytes(good[length_at..length_at + 4].try_into().unwrap());
    let mut scrambled = good.clone();
    for byte in &mut scrambled[length_at + 4..] {
        *byte = byte.wrapping_mul(31).wrapping_add(7);
    }
    let damaged = [
        ("claims 4 GiB", claimed(u32::MAX), Some("more than its")),
        ("claims one byte more", claimed(real + 1), None),
        ("claims one byte less", claimed(real - 1), None),
        ("cut short", good[..good.len() - 10].to_vec(), None),
        ("no length", good[..length_at + 2].to_vec(), None),
        ("scrambled", scrambled, None),
    ];
    for (what, bytes, says) in damaged {
        store.db.insert(task_key(&id), bytes).unwrap();
        let error = store.get(&id).await.err();
        let Some(StoreError::Codec { what: message, .. }) = &error else {
            panic!("{what}: {error:?}");
        };
        if let Some(says) = says {
            assert!(message.contains(says), "{what}: {message}");
        }
        let events = store.events(&id, 0, 10).await;
        assert!(
            matches!(events, Err(StoreError::Codec { .. })),
            "{what}: {events:?}"
        );
    }
}

/// A commit value cut short at any length, or claiming a checkpoint longer than itself,
/// is a codec error when decoded, never a panic.
#[test]
fn a_damaged_commit_value_is_an_error() {
    use crate::layout::{Commit, decode_events, encode_commit, encode_events};
    let r = record("t1", "c", TaskState::Working, 1_000, "u");
    let events = encode_events(&[created(&r)]).unwrap();
    let value = encode_commit(2, 1, Some(br#"{"step":1}"#), &events).unwrap();
    let whole = Commit::decode(&value).unwrap();
    assert_eq!((whole.version, whole.last_seq), (2, 1));
    assert_eq!(whole.checkpoint, Some(serde_json::json!({ "step": 1 })));
    assert_eq!(decode_events(&value).unwrap().len(), 1);
    for len in 1..value.len() {
        let cut = &value[..len];
        assert!(
            matches!(Commit::decode(cut), Err(StoreError::Codec { .. })),
            "cut at {len}"
        );
        assert!(decode_events(cut).is_err(), "cut at {len}");
    }
    let mut too_long = value.clone();
    too_long[17..21].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(
        Commit::decode(&too_long),
        Err(StoreError::Codec { .. })
    ));
}

/// A commit whose write fails after its commit point (its events are in, its new
/// snapshot is not) reports the failure, and yet is in: the task's next commit follows
/// it, from the position sled holds rather than the one the store remembered.
#[tokio::test]
async fn a_commit_failing_after_its_commit_point_is_in_and_the_next_follows_it() {
    use crate::store::SNAPSHOT_EVERY;
    use std::sync::atomic::Ordering;
    let store = SledStore::temporary(Durability::Sync).unwrap();
    let r = record("t1", "c", TaskState::Working, 1_000, "u");
    store.commit(&r, 0, &[created(&r)]).await.unwrap();
    for n in 1..SNAPSHOT_EVERY {
        progress(&store, "t1", &format!("step {n}")).await;
    }
    // The next commit writes a snapshot: the events its old snapshot carried move out
    // (one write), its own go to their slot (the commit point), then the snapshot, which
    // fails.
    store.writes_left.store(2, Ordering::Release);
    let mut next = store.get(r.id()).await.unwrap().unwrap();
    next.version += 1;
    next.last_seq += 1;
    next.task.status.timestamp = Utc.timestamp_millis_opt(5_000).unwrap();
    let event = TaskEvent {
        seq: next.last_seq,
        task_id: next.task.id.clone(),
        context_id: next.task.context_id.clone(),
        kind: TaskEventKind::Status(next.task.status.clone()),
    };
    let failed = store.commit(&next, next.version - 1, &[event]).await;
    assert!(failed.is_err(), "{failed:?}");
    store.writes_left.store(usize::MAX, Ordering::Release);
    assert_eq!(store.get(r.id()).await.unwrap().as_ref(), Some(&next));

    let after = progress(&store, "t1", "after").await;
    assert_eq!(after.version, SNAPSHOT_EVERY + 2);
    assert_eq!(store.get(r.id()).await.unwrap(), Some(after));
    let seqs = event_seqs(&store, r.id(), 0, 100).await;
    assert_eq!(seqs, (1..=SNAPSHOT_EVERY + 2).collect::<Vec<_>>());
}
