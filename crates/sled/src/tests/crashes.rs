//! A crash cuts a commit anywhere: after a reopen it is whole or absent, and only a store not closed cleanly is repaired.

use super::*;

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
    let large = "x".repeat(crate::commit::INLINE_EVENTS_LIMIT);
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
            store
                .tasks
                .crash
                .writes_left
                .store(writes, Ordering::Release);
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
