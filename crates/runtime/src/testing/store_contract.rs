//! The contract every `TaskStore` keeps, as cases any implementation can run (feature
//! `test-util`): `check_task_store("mine", || async { Arc::new(MyStore::new()) as _ })`
//! runs each case on a fresh, empty store and panics, naming the store and the case,
//! at the first broken promise; `push_configs_are_kept_per_task` is the `PushStore`'s.
//! The memory and sled stores run them; a new backend runs the same cases.

use std::future::Future;
use std::sync::Arc;

use chrono::{TimeZone, Utc};

use crate::access::TaskOwner;
use crate::model::{
    ContextId, Message, Part, Task, TaskEvent, TaskEventKind, TaskId, TaskState, TaskStatus,
};
use crate::store::{
    ListPage, ListQuery, PushConfig, PushCursor, PushFormat, PushStore, StoreError, TaskRecord,
    TaskStore, UnfinishedTask,
};

/// Runs every case of the contract, each on a store `fresh` makes (empty).
pub async fn check_task_store<F, Fut>(name: &str, fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn TaskStore>>,
{
    versions_are_checked(name, &*fresh().await).await;
    events_read_back_in_order(name, &*fresh().await).await;
    listing_filters_orders_and_pages(name, &*fresh().await).await;
    active_lists_only_unfinished(name, &*fresh().await).await;
    several_events_commit_together(name, &*fresh().await).await;
    run_inputs_and_checkpoints_read_back(name, &*fresh().await).await;
    first_messages_are_found_by_their_owner(name, &*fresh().await).await;
    super::first_writes::a_first_message_creates_one_task_within_the_window(name, &*fresh().await)
        .await;
    ended_tasks_are_removed_oldest_first_and_whole(name, &*fresh().await).await;
    super::stored_content::pages_end_at_their_byte_bound(name, &*fresh().await).await;
    super::stored_content::awkward_text_reads_back_whole(name, &*fresh().await).await;
    super::long_tasks::a_long_running_task_reads_back_at_every_commit(name, &*fresh().await).await;
}

/// `remove_ended_before` removes terminal tasks last updated before the cutoff, oldest
/// first and at most `limit` at a time, each whole (record, events, listing and counts,
/// first message, push configs); an unfinished or newer task stays.
pub async fn ended_tasks_are_removed_oldest_first_and_whole(name: &str, store: &dyn TaskStore) {
    for (id, ts) in [
        ("old1", 1_000),
        ("old2", 2_000),
        ("new", 5_000),
        ("open", 500),
    ] {
        let r = record(id, "c1", TaskState::Working, ts, "u");
        store.commit(&r, 0, &[created(&r)]).await.unwrap();
        if id != "open" {
            advance(store, id, TaskState::Completed, ts).await;
        }
    }
    let old = store.get(&TaskId::from("old1")).await.unwrap().unwrap();
    let old_first = old.task.history[0].message_id.clone();
    let cutoff = Utc.timestamp_millis_opt(3_000).unwrap();
    assert_eq!(
        store.remove_ended_before(cutoff, 1).await.unwrap(),
        1,
        "{name}"
    );
    assert!(
        store.get(&TaskId::from("old1")).await.unwrap().is_none(),
        "{name}: oldest first"
    );
    assert!(
        store.get(&TaskId::from("old2")).await.unwrap().is_some(),
        "{name}: at most 1"
    );
    assert_eq!(
        store.remove_ended_before(cutoff, 10).await.unwrap(),
        1,
        "{name}"
    );
    assert_eq!(
        store.remove_ended_before(cutoff, 10).await.unwrap(),
        0,
        "{name}: none left"
    );
    for gone in ["old1", "old2"] {
        let id = TaskId::from(gone);
        assert!(store.get(&id).await.unwrap().is_none(), "{name}: {gone}");
        assert!(
            store.events(&id, 0, 100).await.unwrap().is_empty(),
            "{name}: {gone}"
        );
    }
    let found = store.created_by(Some("u"), &old_first).await.unwrap();
    assert_eq!(found, None, "{name}: the first message's entry goes too");
    for kept in ["new", "open"] {
        assert!(
            store.get(&TaskId::from(kept)).await.unwrap().is_some(),
            "{name}: {kept}"
        );
    }
    let all = list_all(store, &ListQuery::default(), name).await;
    assert_eq!(all.len(), 2, "{name}: {all:?}");
}

/// A new task's first message is found by its owner and id (and by nobody else's), with
/// the task's creation time; later commits leave it be.
pub async fn first_messages_are_found_by_their_owner(name: &str, store: &dyn TaskStore) {
    let r = record("t1", "c1", TaskState::Submitted, 1_000, "ann");
    let first = r.task.history[0].message_id.clone();
    assert_eq!(
        store.created_by(Some("ann"), &first).await.unwrap(),
        None,
        "{name}"
    );
    store.commit(&r, 0, &[created(&r)]).await.unwrap();
    advance(store, "t1", TaskState::Working, 2_000).await;
    let found = store.created_by(Some("ann"), &first).await.unwrap();
    let at = Utc.timestamp_millis_opt(1_000).unwrap();
    assert_eq!(found, Some((TaskId::from("t1"), at)), "{name}");
    for (owner, id) in [
        (Some("bob"), first.as_str()),
        (None, &first),
        (Some("ann"), "other"),
    ] {
        let found = store.created_by(owner, id).await.unwrap();
        assert_eq!(found, None, "{name}: {owner:?} {id}");
    }
}

/// A record's run inputs (the message its run started from, the messages queued for
/// it) and its checkpoint read back as written, commit after commit: a store that
/// rebuilds records from their events (`RunInputs::replay`) gets them right too, a
/// checkpoint removed included.
pub async fn run_inputs_and_checkpoints_read_back(name: &str, store: &dyn TaskStore) {
    let r = record("t1", "c1", TaskState::Working, 1_000, "u");
    store.commit(&r, 0, &[created(&r)]).await.unwrap();
    let text = |t: &str| Message::user(vec![Part::text(t)]);
    let steps: Vec<(Vec<TaskEventKind>, Option<Option<serde_json::Value>>)> = vec![
        (vec![], Some(Some(serde_json::json!({"step": 1})))),
        (vec![TaskEventKind::Queued(text("a"))], None),
        (
            vec![
                TaskEventKind::Queued(text("b")),
                TaskEventKind::Queued(text("c")),
            ],
            None,
        ),
        (
            vec![TaskEventKind::MessageTaken { starts_run: false }],
            None,
        ),
        (
            vec![TaskEventKind::MessageTaken { starts_run: true }],
            Some(None),
        ),
        (vec![TaskEventKind::Message(text("interrupt"))], None),
    ];
    for (i, (kinds, checkpoint)) in steps.into_iter().enumerate() {
        let stored = store.get(&TaskId::from("t1")).await.unwrap().unwrap();
        let (next, events) = next_commit(&stored, kinds, checkpoint);
        store
            .commit(&next, next.version - 1, &events)
            .await
            .unwrap();
        let stored = store.get(&TaskId::from("t1")).await.unwrap().unwrap();
        assert_eq!(stored, next, "{name}: after commit {i}");
    }
    let stored = store.get(&TaskId::from("t1")).await.unwrap().unwrap();
    // History: hi, a, b, c, interrupt; c is still queued, the run started from the
    // interrupting message, the checkpoint is gone.
    let queued: Vec<String> = stored
        .inputs
        .queued_messages(&stored.task)
        .map(Message::text)
        .collect();
    assert_eq!(queued, ["c"], "{name}");
    let run = stored.inputs.run_message(&stored.task).map(Message::text);
    assert_eq!(run.as_deref(), Some("interrupt"), "{name}");
    assert_eq!(stored.checkpoint, None, "{name}");
}

/// Writes name the version they read: creating a task twice, or writing from a stale
/// version, is a `Conflict`, and the stored task is the last good write.
pub async fn versions_are_checked(name: &str, store: &dyn TaskStore) {
    let r = record("t1", "c1", TaskState::Submitted, 1_000, "u");
    store.commit(&r, 0, &[created(&r)]).await.unwrap();
    // Creating again, or writing from a stale version, is a conflict.
    let again = store.commit(&r, 0, &[created(&r)]).await;
    assert!(
        matches!(
            again,
            Err(StoreError::Conflict {
                expected: 0,
                found: 1,
                ..
            })
        ),
        "{name}: {again:?}"
    );
    advance(store, "t1", TaskState::Working, 2_000).await;
    let mut stale = r.clone();
    stale.version = 2;
    let err = store.commit(&stale, 1, &[]).await;
    assert!(
        matches!(
            err,
            Err(StoreError::Conflict {
                expected: 1,
                found: 2,
                ..
            })
        ),
        "{name}: {err:?}"
    );
    let stored = store.get(&TaskId::from("t1")).await.unwrap().unwrap();
    assert_eq!(stored.state(), TaskState::Working, "{name}");
    assert_eq!(stored.version, 2, "{name}");
}

/// Events read back in order from any point and with any limit; a task whose id is a
/// prefix of another's sees only its own.
pub async fn events_read_back_in_order(name: &str, store: &dyn TaskStore) {
    let r = record("t1", "c1", TaskState::Submitted, 1_000, "u");
    store.commit(&r, 0, &[created(&r)]).await.unwrap();
    for (i, state) in [TaskState::Working, TaskState::Working, TaskState::Completed]
        .into_iter()
        .enumerate()
    {
        advance(store, "t1", state, 2_000 + i as i64).await;
    }
    let id = TaskId::from("t1");
    let all = store.events(&id, 0, 100).await.unwrap();
    let seqs: Vec<u64> = all.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4], "{name}");
    assert!(all[3].is_terminal(), "{name}");
    assert_eq!(event_seqs(store, &id, 2, 1).await, [3], "{name}");
    assert!(
        store
            .events(&TaskId::from("nope"), 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // A task whose id is a prefix of another's does not see the other's events.
    let r2 = record("t", "c1", TaskState::Submitted, 1_000, "u");
    store.commit(&r2, 0, &[created(&r2)]).await.unwrap();
    assert_eq!(
        store
            .events(&TaskId::from("t"), 0, 100)
            .await
            .unwrap()
            .len(),
        1,
        "{name}"
    );
}

/// Listing filters (context, owner, state, time), orders newest update first, and
/// pages without a gap or a repeat, with the total on every page.
pub async fn listing_filters_orders_and_pages(name: &str, store: &dyn TaskStore) {
    // 7 tasks: contexts a/b, owners x/y, distinct times, two sharing a timestamp.
    let specs = [
        ("t1", "a", 1_000, "x"),
        ("t2", "b", 2_000, "x"),
        ("t3", "a", 3_000, "y"),
        ("t4", "a", 4_000, "x"),
        ("t5", "b", 5_000, "x"),
        ("t6", "a", 5_000, "x"),
        ("t7", "a", 7_000, "x"),
    ];
    for (id, ctx, ts, owner) in specs {
        let mut r = record(id, ctx, TaskState::Submitted, ts, owner);
        if id == "t3" {
            r.skill = "audit".into();
        }
        store.commit(&r, 0, &[created(&r)]).await.unwrap();
    }
    // t1 moves to the front by being updated last.
    advance(store, "t1", TaskState::Completed, 9_000).await;

    let ids = |page: &ListPage| -> Vec<String> {
        page.records.iter().map(|r| r.task.id.to_string()).collect()
    };
    let all = store
        .list(&ListQuery {
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        ids(&all),
        ["t1", "t7", "t6", "t5", "t4", "t3", "t2"],
        "{name}"
    );
    assert_eq!(all.total, 7);
    assert!(all.next.is_none(), "{name}: last page has no cursor");

    let ctx_a = ListQuery {
        context_id: Some(ContextId::from("a")),
        owner: TaskOwner::user("x"),
        limit: 100,
        ..Default::default()
    };
    assert_eq!(
        ids(&store.list(&ctx_a).await.unwrap()),
        ["t1", "t7", "t6", "t4"],
        "{name}"
    );

    let by_skill = |skill: &str, owner: Option<&str>| ListQuery {
        skill: Some(skill.into()),
        owner: owner.map_or(TaskOwner::Any, TaskOwner::user),
        limit: 100,
        ..Default::default()
    };
    let audits = store.list(&by_skill("audit", None)).await.unwrap();
    assert_eq!(
        (ids(&audits), audits.total),
        (vec!["t3".to_owned()], 1),
        "{name}"
    );
    let echoes = store.list(&by_skill("echo", Some("x"))).await.unwrap();
    assert_eq!(ids(&echoes), ["t1", "t7", "t6", "t5", "t4", "t2"], "{name}");
    assert_eq!(echoes.total, 6, "{name}");
    assert!(
        store
            .list(&by_skill("chaos-run", None))
            .await
            .unwrap()
            .records
            .is_empty()
    );

    let done = ListQuery {
        state: Some(TaskState::Completed),
        limit: 100,
        ..Default::default()
    };
    assert_eq!(ids(&store.list(&done).await.unwrap()), ["t1"], "{name}");

    let recent = ListQuery {
        updated_after: Some(Utc.timestamp_millis_opt(5_000).unwrap()),
        limit: 100,
        ..Default::default()
    };
    let recent = store.list(&recent).await.unwrap();
    assert_eq!(ids(&recent), ["t1", "t7", "t6", "t5"], "{name}");
    assert_eq!(recent.total, 4);

    // Pages of 2 visit every task once, in order, with the total on every page.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .list(&ListQuery {
                limit: 2,
                cursor,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(page.total, 7, "{name}");
        seen.extend(ids(&page));
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ids(&all), "{name}");
}

/// `active` returns exactly the tasks that are not terminal, and `unfinished` the same
/// tasks as recovery decides them (those waiting for input too), in the same order.
pub async fn active_lists_only_unfinished(name: &str, store: &dyn TaskStore) {
    for id in ["t1", "t2", "t3", "t4"] {
        let r = record(id, "c", TaskState::Submitted, 1_000, "u");
        store.commit(&r, 0, &[created(&r)]).await.unwrap();
    }
    advance(store, "t2", TaskState::Failed, 2_000).await;
    advance(store, "t3", TaskState::Working, 2_000).await;
    advance(store, "t4", TaskState::Working, 2_000).await;
    advance(store, "t4", TaskState::InputRequired, 3_000).await;
    let records = store.active().await.unwrap();
    let mut active: Vec<String> = records.iter().map(|r| r.task.id.to_string()).collect();
    active.sort();
    assert_eq!(active, ["t1", "t3", "t4"], "{name}");
    let decided: Vec<UnfinishedTask> = records.iter().map(UnfinishedTask::of).collect();
    assert_eq!(store.unfinished_tasks().await.unwrap(), decided, "{name}");
    let states: Vec<TaskState> = decided.iter().map(|t| t.state).collect();
    assert!(
        states.contains(&TaskState::InputRequired),
        "{name}: {states:?}"
    );
}

/// A commit's events are written together or not at all, and read back from inside
/// the commit too.
pub async fn several_events_commit_together(name: &str, store: &dyn TaskStore) {
    let r = record("multi", "c", TaskState::Working, 1_000, "u");
    store.commit(&r, 0, &[created(&r)]).await.unwrap();
    let mut next = r.clone();
    next.version = 2;
    next.last_seq = 3;
    next.task.status.state = TaskState::Completed;
    let event = |seq: u64, state: TaskState| TaskEvent {
        seq,
        task_id: r.task.id.clone(),
        context_id: r.task.context_id.clone(),
        kind: TaskEventKind::Status(TaskStatus {
            state,
            message: None,
            timestamp: Utc::now(),
        }),
    };
    let pair = [event(2, TaskState::Working), event(3, TaskState::Completed)];
    // A stale version writes neither event.
    assert!(store.commit(&next, 7, &pair).await.is_err(), "{name}");
    assert_eq!(
        store.events(r.id(), 0, 10).await.unwrap().len(),
        1,
        "{name}"
    );
    store.commit(&next, 1, &pair).await.unwrap();
    let seqs = event_seqs(store, r.id(), 0, 10).await;
    assert_eq!(seqs, [1, 2, 3], "{name}");
    // Read from inside the commit, and cut short inside it.
    let from_middle = event_seqs(store, r.id(), 2, 10).await;
    assert_eq!(from_middle, [3], "{name}");
    assert_eq!(event_seqs(store, r.id(), 1, 1).await, [2], "{name}");
    assert_eq!(event_seqs(store, r.id(), 0, 2).await, [1, 2], "{name}");
}

/// Push configs are kept per task (a task whose id is a prefix of another's sees only
/// its own), with cursors that survive the config's replacement but not its deletion;
/// `unfinished` lists the deliveries not finished.
pub async fn push_configs_are_kept_per_task(name: &str, store: &dyn PushStore) {
    store
        .put_config(&push_config("t1", "a", "https://x/1"), 0)
        .await
        .unwrap();
    store
        .put_config(&push_config("t1", "b", "https://x/2"), 5)
        .await
        .unwrap();
    store
        .put_config(&push_config("t10", "a", "https://x/3"), 0)
        .await
        .unwrap();
    let t1 = TaskId::from("t1");
    let ids: Vec<String> = store
        .configs(&t1)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, ["a", "b"], "{name}: t10's config is not t1's");
    assert_eq!(
        store.cursor(&t1, "b").await.unwrap().unwrap().delivered_seq,
        5,
        "{name}"
    );

    let moved = PushCursor {
        delivered_seq: 3,
        ..PushCursor::default()
    };
    store.set_cursor(&t1, "a", &moved).await.unwrap();
    // Replacing the config keeps where delivery stands.
    store
        .put_config(&push_config("t1", "a", "https://x/new"), 0)
        .await
        .unwrap();
    assert_eq!(
        store.cursor(&t1, "a").await.unwrap().unwrap().delivered_seq,
        3,
        "{name}"
    );
    assert_eq!(
        store.config(&t1, "a").await.unwrap().unwrap().url,
        "https://x/new"
    );

    let finished = PushCursor {
        delivered_seq: 9,
        finished: true,
        ..PushCursor::default()
    };
    store.set_cursor(&t1, "b", &finished).await.unwrap();
    let mut open: Vec<(String, String)> = store
        .unfinished()
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.config.task_id.to_string(), e.config.id))
        .collect();
    open.sort();
    assert_eq!(
        open,
        [("t1".into(), "a".into()), ("t10".into(), "a".into())],
        "{name}"
    );

    assert!(store.delete_config(&t1, "a").await.unwrap(), "{name}");
    assert!(
        !store.delete_config(&t1, "a").await.unwrap(),
        "{name}: idempotent"
    );
    // A cursor move after the delete does not bring the config back.
    store.set_cursor(&t1, "a", &moved).await.unwrap();
    assert!(store.config(&t1, "a").await.unwrap().is_none(), "{name}");
    assert!(store.cursor(&t1, "a").await.unwrap().is_none(), "{name}");
    assert_eq!(store.unfinished().await.unwrap().len(), 1, "{name}");
}

/// A push config of `task`, delivering stream responses to `url`.
pub fn push_config(task: &str, id: &str, url: &str) -> PushConfig {
    PushConfig {
        task_id: TaskId::from(task),
        id: id.into(),
        url: url.into(),
        token: Some("tok".into()),
        authentication: None,
        format: PushFormat::StreamResponse,
        created_at: Utc::now(),
    }
}

/// A task record as first stored (version 1, its created event only).
pub fn record(id: &str, context: &str, state: TaskState, ts_ms: i64, owner: &str) -> TaskRecord {
    TaskRecord {
        task: Task {
            id: TaskId::from(id),
            context_id: ContextId::from(context),
            status: TaskStatus {
                state,
                message: None,
                timestamp: Utc.timestamp_millis_opt(ts_ms).unwrap(),
            },
            artifacts: Vec::new(),
            history: vec![Message::user(vec![Part::text("hi")])],
            metadata: None,
        },
        version: 1,
        last_seq: 1,
        skill: "echo".into(),
        owner: Some(owner.into()),
        checkpoint: None,
        trace: None,
        inputs: crate::store::RunInputs::default(),
        idle_until: None,
    }
}

/// The created event of `record`.
pub fn created(record: &TaskRecord) -> TaskEvent {
    TaskEvent {
        seq: 1,
        task_id: record.task.id.clone(),
        context_id: record.task.context_id.clone(),
        kind: TaskEventKind::Created(record.task.clone()),
    }
}

/// `record`'s next commit, as the task actor would make it: the task moved to `status`,
/// with its status event (an idle wait it parked in over).
pub fn with_status(record: &TaskRecord, status: TaskStatus) -> (TaskRecord, Vec<TaskEvent>) {
    let mut next = record.clone();
    next.version += 1;
    next.last_seq += 1;
    next.task.status = status;
    next.idle_until = None;
    let event = TaskEvent {
        seq: next.last_seq,
        task_id: next.task.id.clone(),
        context_id: next.task.context_id.clone(),
        kind: TaskEventKind::Status(next.task.status.clone()),
    };
    (next, vec![event])
}

/// `task`'s next commit with the events of `kinds`, applied as the task actor applies
/// them (the history, the run's inputs), and the checkpoint set when `checkpoint` says
/// one (`Some(None)`: removed); an idle wait the task parked in is over.
pub fn next_commit(
    task: &TaskRecord,
    kinds: Vec<TaskEventKind>,
    checkpoint: Option<Option<serde_json::Value>>,
) -> (TaskRecord, Vec<TaskEvent>) {
    let mut next = task.clone();
    let mut events = Vec::new();
    for kind in kinds {
        crate::transition::apply(&mut next.task, &kind).unwrap();
        next.inputs.replay(&next.task, &kind);
        next.last_seq += 1;
        events.push(TaskEvent {
            seq: next.last_seq,
            task_id: next.task.id.clone(),
            context_id: next.task.context_id.clone(),
            kind,
        });
    }
    if let Some(checkpoint) = checkpoint {
        next.checkpoint = checkpoint;
    }
    next.version += 1;
    next.idle_until = None;
    (next, events)
}

/// The sequence numbers of `id`'s events after `after`, at most `limit` of them.
pub async fn event_seqs(store: &dyn TaskStore, id: &TaskId, after: u64, limit: usize) -> Vec<u64> {
    let events = store.events(id, after, limit).await.unwrap();
    events.iter().map(|e| e.seq).collect()
}

/// Moves a stored record to a new state and time, as the task actor would.
pub async fn advance(store: &dyn TaskStore, id: &str, state: TaskState, ts_ms: i64) -> TaskRecord {
    try_advance(store, id, state, ts_ms, 1).await.unwrap()
}

/// Moves a stored task to `state` at `ts_ms` with `events` status events in one commit;
/// returns the record written.
pub async fn try_advance(
    store: &dyn TaskStore,
    id: &str,
    state: TaskState,
    ts_ms: i64,
    events: u64,
) -> Result<TaskRecord, StoreError> {
    try_advance_saying(store, id, state, ts_ms, events, None).await
}

/// `try_advance`, each status carrying an agent message saying `text`.
pub async fn try_advance_saying(
    store: &dyn TaskStore,
    id: &str,
    state: TaskState,
    ts_ms: i64,
    events: u64,
    text: Option<&str>,
) -> Result<TaskRecord, StoreError> {
    let mut r = store.get(&TaskId::from(id)).await?.unwrap();
    let status = TaskStatus {
        state,
        message: text.map(|text| Message::agent(vec![Part::text(text)])),
        timestamp: Utc.timestamp_millis_opt(ts_ms).unwrap(),
    };
    r.task.status = status.clone();
    r.version += 1;
    let events: Vec<TaskEvent> = (1..=events)
        .map(|n| TaskEvent {
            seq: r.last_seq + n,
            task_id: r.task.id.clone(),
            context_id: r.task.context_id.clone(),
            kind: TaskEventKind::Status(status.clone()),
        })
        .collect();
    r.last_seq += events.len() as u64;
    store.commit(&r, r.version - 1, &events).await?;
    Ok(r)
}

/// Every page of `query` in turn (pages of 7); checks the total on each.
pub async fn list_all(store: &dyn TaskStore, query: &ListQuery, context: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let mut query = ListQuery {
        limit: 7,
        ..query.clone()
    };
    let mut total = None;
    loop {
        let page = store.list(&query).await.unwrap();
        assert_eq!(*total.get_or_insert(page.total), page.total, "{context}");
        seen.extend(page.records.iter().map(|r| r.task.id.to_string()));
        match page.next {
            Some(next) => query.cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(total.unwrap_or(0), seen.len(), "{context}: total");
    seen
}
