//! How commits are written: appended events read back whole, a task coming to rest snapshotted, a lost race taken back, a failure after the commit point, a task too large for the log.

use super::*;

/// A long-running task's progress commits write their events alone, one value each,
/// after its snapshot; a new snapshot is written every `SNAPSHOT_EVERY` commits (moving
/// out the events the first one carried). The task reads back as written after every
/// commit (its snapshot with the commits since replayed, checkpoint and version
/// included), and from any point and with any limit, the log reads back whole and in
/// order, across a reopen too.
#[tokio::test]
async fn progress_commits_write_their_events_alone_and_read_back_whole() {
    use crate::commit::SNAPSHOT_EVERY;
    use crate::layout::{Header, event_prefix, task_key};
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
    let large = "x".repeat(crate::commit::INLINE_EVENTS_LIMIT);
    let mut writes = 0;
    let slot = taken.clone();
    *store.tasks.crash.before_each_write.lock().unwrap() = Some(Box::new(move |db: &sled::Db| {
        writes += 1;
        if writes == 2 {
            db.insert(&slot, theirs_value.as_slice()).unwrap();
        }
    }));
    let lost = try_advance_saying(&store, "t1", TaskState::Completed, 2_000, 1, Some(&large)).await;
    store.tasks.crash.before_each_write.lock().unwrap().take();
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

/// A commit whose write fails after its commit point (its events are in, its new
/// snapshot is not) reports the failure, and yet is in: the task's next commit follows
/// it, from the position sled holds rather than the one the store remembered.
#[tokio::test]
async fn a_commit_failing_after_its_commit_point_is_in_and_the_next_follows_it() {
    use crate::commit::SNAPSHOT_EVERY;
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
    store.tasks.crash.writes_left.store(2, Ordering::Release);
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
    store
        .tasks
        .crash
        .writes_left
        .store(usize::MAX, Ordering::Release);
    assert_eq!(store.get(r.id()).await.unwrap().as_ref(), Some(&next));

    let after = progress(&store, "t1", "after").await;
    assert_eq!(after.version, SNAPSHOT_EVERY + 2);
    assert_eq!(store.get(r.id()).await.unwrap(), Some(after));
    let seqs = event_seqs(&store, r.id(), 0, 100).await;
    assert_eq!(seqs, (1..=SNAPSHOT_EVERY + 2).collect::<Vec<_>>());
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

/// A commit that brings a task to rest (waiting for input) writes its snapshot, though
/// the progress before it was appended: opening the store and waking the task read the
/// snapshot alone, with no tail to replay.
#[tokio::test]
async fn a_task_coming_to_rest_is_snapshotted() {
    use crate::layout::{Header, task_key};
    let dir = tempfile::tempdir().unwrap();
    let sled = reopen(dir.path()).await;
    let r = record("asks", "c", TaskState::Working, 1_000, "u");
    sled.commit(&r, 0, &[created(&r)]).await.unwrap();
    let id = TaskId::from("asks");
    let header = |sled: &SledStore| {
        let bytes = sled.db.get(task_key(&id)).unwrap().unwrap();
        Header::read(&bytes).unwrap().version
    };
    progress(&sled, "asks", "step").await;
    assert_eq!(header(&sled), 1, "a progress note is appended");
    let waiting = advance(&sled, "asks", TaskState::InputRequired, 2_000).await;
    assert_eq!(header(&sled), waiting.version);
    assert!(!crate::read::has_tail(&sled.db, &id, waiting.last_seq).unwrap());
    assert_eq!(sled.get(&id).await.unwrap(), Some(waiting));
}
