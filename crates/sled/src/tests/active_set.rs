//! The active set (what recovery looks at): joined lazily, a crash loses no task, sweeps racing commits leave nothing out and nothing behind.

use super::*;

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
    assert!(!store.tasks.active.is_unmarked(&TaskId::from(early)));
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
            keys.contains(id) || store.tasks.active.is_unmarked(&TaskId::from(id.as_str())),
            "{id} is in no active set"
        );
    }
    store.sweep();
    assert_eq!(active_keys(&store.db), unfinished);
}
