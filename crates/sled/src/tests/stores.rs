//! Both in-process stores keep the task and push store contracts; sled keeps everything across a reopen and shares flushes among concurrent writers.

use super::*;

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
