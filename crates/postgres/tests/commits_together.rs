//! Commits of several tasks sent in one statement, on a real PostgreSQL server: each
//! is written, read back and deduplicated as if sent alone; one refused (a conflict, a
//! fence) refuses only itself; new tasks taking run slots each get one of their own; a
//! statement PostgreSQL refuses whole is sent again commit by commit, so that each gets
//! its own answer.
//!
//! A test's setup writes one commit at a time; its commits sent at once are all queued
//! before the store's sender runs (a test runs on one thread), so they share a
//! statement, which `most_commits_sent_at_once` confirms.

use std::time::Duration;

use futures::future::join_all;

use fundi_postgres::testing::{drop_schemas, fresh_schema, test_config, test_url};
use fundi_postgres::{LeaseConfig, PostgresConfig, PostgresStore};
use fundi_runtime::store::{StoreError, TaskRecord, TaskStore};
use fundi_runtime::testing::store_contract::{created, event_seqs, record, with_status};
use fundi_runtime::{TaskEvent, TaskState};

async fn open(config: &PostgresConfig) -> PostgresStore {
    PostgresStore::open(config)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()))
}

/// The store on `schema` as node-a of several (leases of 10 s).
async fn open_as_node_a(schema: &str) -> PostgresStore {
    let mut config = test_config(schema);
    config.lease = Some(LeaseConfig::new("node-a", Duration::from_secs(10)));
    open(&config).await
}

/// New working tasks `t0`, `t1`, ..., each with its created event.
fn new_tasks(count: usize) -> Vec<(TaskRecord, Vec<TaskEvent>)> {
    (0..count)
        .map(|n| {
            let task = record(&format!("t{n}"), "ctx", TaskState::Working, 1, "ann");
            let events = vec![created(&task)];
            (task, events)
        })
        .collect()
}

/// Each of `tasks`' first commit, creating it.
fn all_created(tasks: &[(TaskRecord, Vec<TaskEvent>)]) -> Vec<(TaskRecord, u64, Vec<TaskEvent>)> {
    let created = tasks
        .iter()
        .map(|(task, events)| (task.clone(), 0, events.clone()));
    created.collect()
}

/// `record`'s next commit: completed, with its status event.
fn completed(record: &TaskRecord) -> (TaskRecord, Vec<TaskEvent>) {
    let mut status = record.task.status.clone();
    status.state = TaskState::Completed;
    with_status(record, status)
}

/// Each of `tasks`' next commit, from version 1: completed.
fn all_completed(tasks: &[(TaskRecord, Vec<TaskEvent>)]) -> Vec<(TaskRecord, u64, Vec<TaskEvent>)> {
    let completed = tasks.iter().map(|(task, _)| {
        let (next, events) = completed(task);
        (next, 1, events)
    });
    completed.collect()
}

/// Task `id` leased to node-b now, one epoch up, as a takeover leaves it.
async fn taken_over_by_node_b(store: &PostgresStore, schema: &str, id: &str) {
    let taken = format!(
        "UPDATE {schema}.tasks SET lease_node = 'node-b', lease_epoch = lease_epoch + 1 \
         WHERE id = $1"
    );
    let client = store.testing_client().await;
    client.execute(&taken, &[&id]).await.unwrap();
}

/// Writes each of `tasks` new, one at a time.
async fn create_one_by_one(store: &PostgresStore, tasks: &[(TaskRecord, Vec<TaskEvent>)]) {
    for (task, events) in tasks {
        store.write(task, 0, events).await.unwrap();
    }
}

/// Sends every commit at once: `(record, expected version, events)`; each one's answer.
async fn write_at_once(
    store: &PostgresStore,
    commits: &[(TaskRecord, u64, Vec<TaskEvent>)],
) -> Vec<Result<(), StoreError>> {
    let writes = commits
        .iter()
        .map(|(record, expected, events)| store.write(record, *expected, events));
    join_all(writes).await
}

#[tokio::test]
async fn commits_sent_at_once_share_a_statement_and_each_is_stored_as_if_alone() {
    let schema = fresh_schema();
    let store = open(&test_config(&schema)).await;
    let tasks = new_tasks(40);
    for answer in write_at_once(&store, &all_created(&tasks)).await {
        answer.unwrap();
    }
    assert!(store.most_commits_sent_at_once() > 1);

    // Their next commits, at once too; one of them a checkpoint alone (no event).
    let mut commits: Vec<_> = tasks
        .iter()
        .map(|(task, _)| {
            let (next, events) = completed(task);
            (next, 1, events)
        })
        .collect();
    let (quiet, _, _) = &mut commits[7];
    (quiet.task.status.state, quiet.last_seq) = (TaskState::Working, 1);
    quiet.checkpoint = Some(serde_json::json!({"step": 3}));
    commits[7].2.clear();
    for answer in write_at_once(&store, &commits).await {
        answer.unwrap();
    }

    for (n, (task, _)) in tasks.iter().enumerate() {
        let stored = store.get(task.id()).await.unwrap().unwrap();
        assert_eq!(stored, commits[n].0, "{} as written", task.id());
        let seqs = event_seqs(&store, task.id(), 0, 10).await;
        match n {
            7 => assert_eq!(seqs, [1]),
            _ => assert_eq!(seqs, [1, 2]),
        }
        let message_id = &task.task.history[0].message_id;
        let (first, _) = store
            .created_by(Some("ann"), message_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&first, task.id(), "its first message, for deduplication");
    }
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn no_more_statements_of_commits_are_under_way_than_the_store_allows() {
    // (pool size, statements at once asked for, most allowed)
    for (pool, asked, at_once) in [(8, 1, 1), (8, 3, 3), (2, 5, 2)] {
        let schema = fresh_schema();
        let mut config = test_config(&schema);
        config.pool_size = pool;
        config.statements_at_once = asked;
        let store = open(&config).await;
        let tasks = new_tasks(60);
        for answer in write_at_once(&store, &all_created(&tasks)).await {
            answer.unwrap();
        }
        for answer in write_at_once(&store, &all_completed(&tasks)).await {
            answer.unwrap();
        }
        let under_way = store.most_commit_statements_under_way();
        assert!(
            (1..=at_once).contains(&under_way),
            "{under_way} statements under way with {at_once} allowed ({asked} asked for)"
        );
        assert!(store.most_commits_sent_at_once() > 1, "{at_once}");
        drop_schemas(&[schema]).await;
    }
}

#[tokio::test]
async fn a_commit_refused_among_others_is_refused_alone() {
    let schema = fresh_schema();
    let store = open(&test_config(&schema)).await;
    let tasks = new_tasks(8);
    create_one_by_one(&store, &tasks).await;
    assert_eq!(store.most_commits_sent_at_once(), 1);

    // Task t3's writer read a version the task never had; t5's is new again.
    let commits: Vec<_> = tasks
        .iter()
        .enumerate()
        .map(|(n, (task, events))| match n {
            3 => {
                let (next, events) = completed(task);
                (next, 4, events)
            }
            5 => (task.clone(), 0, events.clone()),
            _ => {
                let (next, events) = completed(task);
                (next, 1, events)
            }
        })
        .collect();
    let answers = write_at_once(&store, &commits).await;
    assert!(store.most_commits_sent_at_once() > 1);
    for (n, answer) in answers.into_iter().enumerate() {
        let version = store.get(tasks[n].0.id()).await.unwrap().unwrap().version;
        match n {
            3 => {
                assert!(
                    matches!(
                        answer,
                        Err(StoreError::Conflict {
                            expected: 4,
                            found: 1,
                            ..
                        })
                    ),
                    "{answer:?}"
                );
                assert_eq!(version, 1);
            }
            5 => {
                assert!(
                    matches!(
                        answer,
                        Err(StoreError::Conflict {
                            expected: 0,
                            found: 1,
                            ..
                        })
                    ),
                    "{answer:?}"
                );
                assert_eq!(version, 1);
            }
            _ => {
                answer.unwrap();
                assert_eq!(version, 2);
                assert_eq!(event_seqs(&store, tasks[n].0.id(), 0, 10).await, [1, 2]);
            }
        }
    }
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn a_statement_refused_whole_is_sent_again_commit_by_commit() {
    let schema = fresh_schema();
    let store = open(&test_config(&schema)).await;
    let tasks = new_tasks(6);
    create_one_by_one(&store, &tasks).await;
    // An event t2's next commit is to write is there already (as a store damaged by
    // hand would have it): its insert breaks the events' key, and PostgreSQL refuses
    // the whole statement.
    store
        .testing_client()
        .await
        .execute(
            &format!("INSERT INTO {schema}.events (task_id, seq, event) VALUES ('t2', 2, '{{}}')"),
            &[],
        )
        .await
        .unwrap();

    let commits = all_completed(&tasks);
    let answers = write_at_once(&store, &commits).await;
    assert!(store.most_commits_sent_at_once() > 1);
    for (n, answer) in answers.into_iter().enumerate() {
        let stored = store.get(tasks[n].0.id()).await.unwrap().unwrap();
        match n {
            2 => {
                let error = answer.unwrap_err();
                assert!(
                    matches!(error, StoreError::Database { .. }),
                    "the server's refusal, alone: {error:?}"
                );
                assert_eq!(stored.version, 1, "nothing of it stored");
            }
            _ => {
                answer.unwrap();
                assert_eq!(stored.state(), TaskState::Completed);
            }
        }
    }
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn with_leases_each_commit_among_others_is_fenced_on_its_own() {
    let schema = fresh_schema();
    let store = open_as_node_a(&schema).await;
    let tasks = new_tasks(6);
    create_one_by_one(&store, &tasks).await;
    // Another node took t4 over.
    taken_over_by_node_b(&store, &schema, "t4").await;

    let commits = all_completed(&tasks);
    let answers = write_at_once(&store, &commits).await;
    assert!(store.most_commits_sent_at_once() > 1);
    let client = store.testing_client().await;
    for (n, answer) in answers.into_iter().enumerate() {
        let id = tasks[n].0.id().as_str();
        let row = client
            .query_one(
                &format!("SELECT version, lease_node FROM {schema}.tasks WHERE id = $1"),
                &[&id],
            )
            .await
            .unwrap();
        let (version, holder): (i64, Option<String>) = (row.get(0), row.get(1));
        match n {
            4 => {
                assert!(
                    matches!(&answer, Err(StoreError::Fenced { holder, .. }) if holder == "node-b"),
                    "{answer:?}"
                );
                assert_eq!((version, holder.as_deref()), (1, Some("node-b")));
            }
            _ => {
                answer.unwrap();
                // Ended: written, and no longer leased.
                assert_eq!((version, holder), (2, None));
            }
        }
    }
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn commits_that_give_back_run_slots_share_a_statement_and_give_each_back_if_written() {
    let schema = fresh_schema();
    let store = open_as_node_a(&schema).await;
    let tasks = new_tasks(4);
    let mut slots = Vec::new();
    for (task, events) in &tasks {
        let slot = store.create_with_run_slot(task, events, 4).await.unwrap();
        slots.push(slot.expect("a free slot"));
    }
    let client = store.testing_client().await;
    // Another node took t1 over; its run here ends, and its commit is fenced.
    taken_over_by_node_b(&store, &schema, "t1").await;

    let store = &store;
    let ends = tasks
        .iter()
        .zip(&slots)
        .map(|((task, _), slot)| async move {
            let (next, events) = completed(task);
            store
                .write_giving_back_run_slot(&next, 1, &events, *slot)
                .await
        });
    let answers = join_all(ends).await;
    assert!(store.most_commits_sent_at_once() > 1);
    for (n, answer) in answers.iter().enumerate() {
        let row = client
            .query_one(
                &format!("SELECT node FROM {schema}.run_slots WHERE skill = 'echo' AND slot = $1"),
                &[&(slots[n] as i32)],
            )
            .await
            .unwrap();
        let holder: Option<String> = row.get(0);
        match n {
            1 => {
                assert!(
                    matches!(answer, Err(StoreError::Fenced { .. })),
                    "{answer:?}"
                );
                assert_eq!(holder.as_deref(), Some("node-a"), "kept: not written");
            }
            _ => {
                assert!(answer.is_ok(), "{answer:?}");
                assert_eq!(holder, None, "given back with its commit");
            }
        }
    }
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn new_tasks_taking_run_slots_share_a_statement_and_each_gets_a_slot_of_its_own() {
    let schema = fresh_schema();
    let store = open_as_node_a(&schema).await;
    // Six new tasks of a skill with four slots, at once.
    let tasks = new_tasks(6);
    let store = &store;
    let creates = tasks
        .iter()
        .map(|(task, events)| store.create_with_run_slot(task, events, 4));
    let answers = join_all(creates).await;
    assert!(store.most_commits_sent_at_once() > 1);

    let client = store.testing_client().await;
    let mut taken = Vec::new();
    for ((task, _), answer) in tasks.iter().zip(answers) {
        let stored = store.get(task.id()).await.unwrap();
        match answer.unwrap() {
            Some(slot) => {
                taken.push(slot);
                assert_eq!(stored.as_ref(), Some(task), "written with its slot");
                let row = client
                    .query_one(
                        &format!(
                            "SELECT node FROM {schema}.run_slots WHERE skill = 'echo' AND slot = $1"
                        ),
                        &[&(slot as i32)],
                    )
                    .await
                    .unwrap();
                assert_eq!(row.get::<_, Option<String>>(0).as_deref(), Some("node-a"));
            }
            None => assert_eq!(stored, None, "{}: no slot free, so not written", task.id()),
        }
    }
    taken.sort_unstable();
    assert_eq!(taken, [0, 1, 2, 3], "each slot taken once");
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn first_message_lookups_made_at_once_share_a_statement_and_each_finds_its_own() {
    let schema = fresh_schema();
    let store = open(&test_config(&schema)).await;
    let tasks = new_tasks(6);
    create_one_by_one(&store, &tasks).await;
    let message_ids: Vec<String> = tasks
        .iter()
        .map(|(task, _)| task.task.history[0].message_id.clone())
        .collect();
    // Each task's first message as its owner sent it, as another owner, and one never sent.
    let mut asked: Vec<(Option<&str>, &str)> = Vec::new();
    for id in &message_ids {
        asked.push((Some("ann"), id));
        asked.push((Some("bob"), id));
    }
    asked.push((Some("ann"), "never-sent"));
    let lookups = asked.iter().map(|(owner, id)| store.created_by(*owner, id));
    let found = join_all(lookups).await;
    assert!(store.most_lookups_sent_at_once() > 1);
    for (n, ((owner, _), found)) in asked.iter().zip(found).enumerate() {
        let found = found.unwrap().map(|(id, _)| id);
        match (owner, n / 2) {
            (Some("ann"), task) if task < tasks.len() => {
                assert_eq!(found.as_ref(), Some(tasks[task].0.id()))
            }
            _ => assert_eq!(found, None, "lookup {n}"),
        }
    }
    drop_schemas(&[schema]).await;
}
