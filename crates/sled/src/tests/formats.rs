//! Stores in older layouts open and move on, a newer one is refused untouched, and damaged bytes are errors, never panics.

use super::*;

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
        owner: fundi_runtime::TaskOwner::user("u"),
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
