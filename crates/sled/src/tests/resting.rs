//! Tasks at rest, indexed so that an open reads no snapshot of theirs (`resting`): the
//! index never names anything but a task's last commit, whatever a crash cuts.

use super::*;
use crate::layout::{FORMAT_KEY, rest_key, task_key};

/// Overwrites the task's snapshot with bytes no build can read: an open that read it
/// would set the task aside.
fn spoil_snapshot(store: &SledStore, id: &str) {
    let garbage = b"\x02garbage".as_slice();
    store
        .db
        .insert(task_key(&TaskId::from(id)), garbage)
        .unwrap();
}

fn indexed(store: &SledStore, id: &str) -> bool {
    store.db.contains_key(rest_key(&TaskId::from(id))).unwrap()
}

/// The tasks listed in `state`.
async fn listing(store: &SledStore, state: TaskState) -> ListPage {
    let query = ListQuery {
        limit: 10,
        state: Some(state),
        ..Default::default()
    };
    store.list(&query).await.unwrap()
}

/// The ids of the tasks listed in `state`.
async fn listed_in(store: &SledStore, state: TaskState) -> Vec<String> {
    let page = listing(store, state).await;
    page.records.iter().map(|r| r.id().to_string()).collect()
}

/// Stores `t1` (working), and brings it to rest waiting for input when `rested`.
async fn stored(dir: &std::path::Path, rested: bool) -> SledStore {
    let store = SledStore::open(dir, Durability::Sync).unwrap();
    let other = record("t2", "c", TaskState::Working, 500, "u");
    store.commit(&other, 0, &[created(&other)]).await.unwrap();
    let t1 = record("t1", "c", TaskState::Working, 1_000, "u");
    store.commit(&t1, 0, &[created(&t1)]).await.unwrap();
    if rested {
        try_advance(&store, "t1", TaskState::InputRequired, 2_000, 1)
            .await
            .unwrap();
    }
    store
}

/// A crash can cut any commit that brings a task to rest or moves it on from rest:
/// reopened, the task is its last whole commit, listed as that, and goes on; the index
/// names a task only while its snapshot is its last commit.
#[tokio::test]
async fn a_commit_to_or_from_rest_cut_by_a_crash_is_whole_or_absent() {
    use std::sync::atomic::Ordering;
    // The commit cut: 0 brings t1 to rest; from rest, 1 moves it on to working (its
    // events alone, after the snapshot), 2 completes it, 3 asks for input again (rest to
    // rest: a new snapshot, indexed again), 4 leaves it submitted (queued), 5 does so
    // from rest.
    let moves = [
        (TaskState::InputRequired, false),
        (TaskState::Working, true),
        (TaskState::Completed, true),
        (TaskState::InputRequired, true),
        (TaskState::Submitted, false),
        (TaskState::Submitted, true),
    ];
    for (stage, (state, from_rest)) in moves.into_iter().enumerate() {
        for writes in 0.. {
            let context = format!("stage {stage}, crash after {writes} writes");
            let dir = tempfile::tempdir().unwrap();
            let store = stored(dir.path(), from_rest).await;
            let before = 1 + u64::from(from_rest);
            assert_eq!(indexed(&store, "t1"), from_rest, "{context}: before");
            store
                .tasks
                .crash
                .writes_left
                .store(writes, Ordering::Release);
            let finished = try_advance(&store, "t1", state, 3_000, 1).await.is_ok();
            store.crash();

            let store = reopen(dir.path()).await;
            assert_consistent(&store, &context).await;
            let t1 = store.get(&TaskId::from("t1")).await.unwrap().unwrap();
            if finished {
                assert_eq!(t1.version, before + 1, "{context}");
                assert_eq!(t1.state(), state, "{context}");
            }
            assert!(
                t1.version == before || t1.version == before + 1,
                "{context}"
            );
            // Listed as it is stored, now that it was read from the index or its
            // snapshot (`assert_consistent` lists every state).
            let listed = listed_in(&store, t1.state()).await;
            assert!(
                listed.iter().any(|id| id == "t1"),
                "{context}: t1 not listed as {:?}",
                t1.state()
            );
            if !t1.state().is_terminal() {
                try_advance(&store, "t1", TaskState::Completed, 9_000, 1)
                    .await
                    .unwrap();
            }
            assert_consistent(&store, &format!("{context}, then one more commit")).await;
            assert!(!indexed(&store, "t1"), "{context}: a terminal task indexed");
            if finished {
                break;
            }
        }
    }
}

/// An open finds a task indexed at rest from its index entry alone: its snapshot is not
/// read (here, one replaced by bytes no build can read stays unnoticed until the task is
/// read), after a clean close and after a crash.
#[tokio::test]
async fn an_open_reads_no_snapshot_of_a_task_indexed_at_rest() {
    for crash in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let store = stored(dir.path(), true).await;
        assert!(indexed(&store, "t1"));
        assert!(!indexed(&store, "t2"), "a working task is not at rest");
        spoil_snapshot(&store, "t1");
        match crash {
            true => store.crash(),
            false => drop(store),
        }
        let store = reopen(dir.path()).await;
        assert!(
            store.quarantined().await.unwrap().is_empty(),
            "crash: {crash}"
        );
        // Counted (a listing's page leaves out a task it cannot read).
        let waiting = listing(&store, TaskState::InputRequired).await;
        assert_eq!(waiting.total, 1, "crash: {crash}");
        let unfinished = store.unfinished_tasks().await.unwrap();
        assert_eq!(unfinished.len(), 2, "crash: {crash}");
        assert!(store.get(&TaskId::from("t1")).await.is_err());
    }
}

/// A store written before the index (format 4) indexes its tasks at rest at its first
/// open, and not the others; their next open reads them from the index.
#[tokio::test]
async fn the_first_open_of_a_store_before_the_index_indexes_its_tasks_at_rest() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = stored(dir.path(), true).await;
        // As a build before format 5 left it.
        store.db.remove(rest_key(&TaskId::from("t1"))).unwrap();
        store.db.insert(FORMAT_KEY, &4u64.to_be_bytes()).unwrap();
    }
    let store = reopen(dir.path()).await;
    assert!(indexed(&store, "t1"), "waiting for input: indexed");
    assert!(!indexed(&store, "t2"), "working: not indexed");
    let format = store.db.get(FORMAT_KEY).unwrap().unwrap();
    assert_eq!(format.as_ref(), crate::layout::STORE_FORMAT.to_be_bytes());
    assert_consistent(&store, "after the first open").await;
    // Indexed: its next commit takes it out first.
    try_advance(&store, "t1", TaskState::Working, 4_000, 1)
        .await
        .unwrap();
    assert!(!indexed(&store, "t1"));
    store.crash();
    let store = reopen(dir.path()).await;
    assert_consistent(&store, "moved on, after a crash").await;
    let t1 = store.get(&TaskId::from("t1")).await.unwrap().unwrap();
    assert_eq!(t1.state(), TaskState::Working);
}

/// An index entry of a task outside the active set (none is written so; a damaged
/// store) is removed at open, not listed; so is one that cannot be read, and its task
/// is read from its snapshot.
#[tokio::test]
async fn an_index_entry_that_is_stray_or_unreadable_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = stored(dir.path(), true).await;
        let (t1, t2) = (TaskId::from("t1"), TaskId::from("t2"));
        let at_rest = store.db.get(rest_key(&t1)).unwrap().unwrap();
        try_advance(&store, "t1", TaskState::Completed, 4_000, 1)
            .await
            .unwrap();
        store.db.insert(rest_key(&t1), at_rest).unwrap();
        try_advance(&store, "t2", TaskState::InputRequired, 2_000, 1)
            .await
            .unwrap();
        let mut cut = store.db.get(rest_key(&t2)).unwrap().unwrap().to_vec();
        cut.pop();
        store.db.insert(rest_key(&t2), cut).unwrap();
    }
    let store = reopen(dir.path()).await;
    assert!(!indexed(&store, "t1"), "terminal: its entry removed");
    assert!(!indexed(&store, "t2"), "unreadable: its entry removed");
    assert_consistent(&store, "after the open").await;
    let waiting = listed_in(&store, TaskState::InputRequired).await;
    assert_eq!(waiting, ["t2"], "t2 waits, as its snapshot says");
}

/// The first open of a store before the index reads a submitted task whole to learn
/// whether it waits for an approver: one that cannot be read stays unindexed, the open
/// goes on, and recovery sets it aside as before.
#[tokio::test]
async fn the_first_open_leaves_an_unreadable_submitted_task_to_be_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
        // Written whole (serde_json writes any depth), unreadable after.
        let mut deep = serde_json::json!(0);
        for _ in 0..200 {
            deep = serde_json::json!([deep]);
        }
        let mut unreadable = record("t3", "c", TaskState::Submitted, 1_000, "u");
        unreadable.checkpoint = Some(deep);
        store
            .commit(&unreadable, 0, &[created(&unreadable)])
            .await
            .unwrap();
        // As a build before format 5 left it.
        store.db.remove(rest_key(&TaskId::from("t3"))).unwrap();
        store.db.insert(FORMAT_KEY, &4u64.to_be_bytes()).unwrap();
    }
    let store = reopen(dir.path()).await;
    assert!(!indexed(&store, "t3"));
    assert!(store.unfinished_tasks().await.unwrap().is_empty());
    let quarantined = store.quarantined().await.unwrap();
    assert_eq!(quarantined.len(), 1);
    assert_eq!(quarantined[0].task_id.as_str(), "t3");
}

/// A task stored submitted with no approver to wait for (queued for a slot) is indexed
/// at rest as queued: an open reads no snapshot of it, and recovery finds it submitted
/// and not waiting for an approver, to run again in turn; one waiting for an approver
/// stays one. Its next commit takes it out of the index.
#[tokio::test]
async fn a_queued_task_is_indexed_and_recovered_as_queued_unread() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
        let queued = record("t1", "c", TaskState::Submitted, 1_000, "u");
        store.commit(&queued, 0, &[created(&queued)]).await.unwrap();
        let mut gated = record("t2", "c", TaskState::Submitted, 1_000, "u");
        gated.task.status.message = Some(approval_pending());
        assert!(fundi_runtime::approval::awaits_approval(&gated.task.status));
        store.commit(&gated, 0, &[created(&gated)]).await.unwrap();
        assert!(indexed(&store, "t1") && indexed(&store, "t2"));
        assert_consistent(&store, "queued and gated").await;
        spoil_snapshot(&store, "t1");
        store.crash();
    }
    let store = reopen(dir.path()).await;
    assert!(store.quarantined().await.unwrap().is_empty());
    let unfinished = store.unfinished_tasks().await.unwrap();
    let found: Vec<_> = unfinished
        .iter()
        .map(|t| (t.id.as_str(), t.state, t.awaits_approval))
        .collect();
    assert_eq!(
        found,
        [
            ("t1", TaskState::Submitted, false),
            ("t2", TaskState::Submitted, true)
        ]
    );
    // Asked to, the store sets the unreadable one aside, as a start would have.
    let error = store.get(&TaskId::from("t1")).await.unwrap_err();
    store.set_aside(&TaskId::from("t1"), &error).await.unwrap();
    assert_eq!(store.quarantined().await.unwrap().len(), 1);
    assert!(!indexed(&store, "t1"));
    // The gated one, approved, runs: no longer at rest.
    try_advance(&store, "t2", TaskState::Working, 2_000, 1)
        .await
        .unwrap();
    assert!(!indexed(&store, "t2"));
    assert_consistent(&store, "after the approval").await;
}

/// Stores `t1` working, then parked while its run waits idle until `until`.
async fn parked_idle(dir: &std::path::Path, until: chrono::DateTime<chrono::Utc>) -> SledStore {
    let store = SledStore::open(dir, Durability::Sync).unwrap();
    let working = record("t1", "c", TaskState::Working, 1_000, "u");
    store
        .commit(&working, 0, &[created(&working)])
        .await
        .unwrap();
    let mut parked = working.clone();
    parked.version += 1;
    parked.idle_until = Some(until);
    store.commit(&parked, 1, &[]).await.unwrap();
    store
}

/// A task parked while its run waits idle is indexed at rest with its wait's end: an
/// open reads no snapshot of it, and recovery finds it idle until then. Its next commit
/// takes it out of the index, and the task reads back as no longer parked.
#[tokio::test]
async fn an_idle_parked_task_is_indexed_with_its_wait_s_end_and_recovered_unread() {
    use chrono::TimeZone;
    let dir = tempfile::tempdir().unwrap();
    let until = chrono::Utc.timestamp_millis_opt(4_000_000_000_000).unwrap();
    {
        let store = parked_idle(dir.path(), until).await;
        assert!(indexed(&store, "t1"));
        assert_consistent(&store, "parked idle").await;
        spoil_snapshot(&store, "t1");
        store.crash();
    }
    let store = reopen(dir.path()).await;
    let unfinished = store.unfinished_tasks().await.unwrap();
    assert_eq!(
        unfinished,
        [UnfinishedTask::idle(
            "t1".into(),
            "echo".into(),
            TaskState::Working,
            until
        )]
    );
    assert!(store.quarantined().await.unwrap().is_empty());
    drop(store);

    // Again, with its snapshot whole: woken, it runs on, and is indexed no more.
    let dir = tempfile::tempdir().unwrap();
    let store = parked_idle(dir.path(), until).await;
    let woken = progress(&store, "t1", "looked again").await;
    assert_eq!(woken.idle_until, None);
    assert!(!indexed(&store, "t1"));
    assert_eq!(store.get(&TaskId::from("t1")).await.unwrap(), Some(woken));
    assert_consistent(&store, "woken").await;
    store.crash();
    let store = reopen(dir.path()).await;
    let unfinished = store.unfinished_tasks().await.unwrap();
    assert_eq!(unfinished.len(), 1);
    assert_eq!(unfinished[0].idle_until, None);
}

/// A gated task's status message: its approval pending.
fn approval_pending() -> fundi_runtime::model::Message {
    let request = fundi_runtime::approval::ApprovalRequest {
        requested_by: None,
        client: None,
        skill: "echo".into(),
        target: None,
        reason: None,
        expires_at: chrono::Utc::now() + chrono::Duration::hours(1),
    };
    let mut recorded = serde_json::to_value(&request).unwrap();
    recorded["state"] = serde_json::json!("pending");
    let mut message = fundi_runtime::model::Message::agent(vec![fundi_runtime::model::Part::text(
        "waits for an approver",
    )]);
    message.metadata = Some(serde_json::Map::from_iter([(
        "approval".to_owned(),
        recorded,
    )]));
    message
}
