//! A stored task whose data cannot be decoded never stops the PostgreSQL store from
//! serving: reading it is an error (never a panic), recovery sets it aside, ends it
//! `failed` with the reason and serves every other task, and `quarantined` lists it.

use chrono::Utc;
use fundi_postgres::PostgresStore;
use fundi_postgres::testing::{drop_schemas, fresh_schema, test_config, test_url};
use fundi_runtime::store::{ListQuery, TaskRecord, TaskStore};
use fundi_runtime::testing::store_contract::{created, record, with_status};
use fundi_runtime::{TaskId, TaskState};
use serde_json::{Value, json};

/// A value nested deeper than serde_json reads back (it writes it all the same).
fn too_deep() -> Value {
    (0..200).fold(json!(1), |inner, _| json!([inner]))
}

fn ann(id: &str, state: TaskState, checkpoint: Option<Value>) -> TaskRecord {
    let mut record = record(id, "ctx", state, Utc::now().timestamp_millis(), "ann");
    record.checkpoint = checkpoint;
    record
}

#[tokio::test]
async fn an_unreadable_task_is_an_error_set_aside_and_failed_and_the_rest_is_served() {
    let schema = fresh_schema();
    let config = test_config(&schema);
    let store = PostgresStore::open(&config)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()));
    let fine = ann("fine", TaskState::Working, None);
    store.commit(&fine, 0, &[created(&fine)]).await.unwrap();
    let broken = ann("broken", TaskState::Working, Some(too_deep()));
    store.commit(&broken, 0, &[created(&broken)]).await.unwrap();
    let done = ann("done-broken", TaskState::Completed, Some(too_deep()));
    store.commit(&done, 0, &[created(&done)]).await.unwrap();

    let error = store.get(broken.id()).await.unwrap_err();
    assert!(error.to_string().contains("recursion limit"), "{error}");
    let owned = ListQuery {
        owner: fundi_runtime::TaskOwner::user("ann"),
        limit: 10,
        ..ListQuery::default()
    };
    // Listings leave out what cannot be read, and paging goes on past it.
    let page = store.list(&owned).await.unwrap();
    let listed: Vec<&str> = page.records.iter().map(|r| r.id().as_str()).collect();
    assert_eq!(listed, ["fine"]);
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let one = ListQuery {
            limit: 1,
            cursor,
            ..owned.clone()
        };
        let page = store.list(&one).await.unwrap();
        seen.extend(page.records.iter().map(|r| r.id().to_string()));
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ["fine"], "one page at a time, each row visited once");

    // Recovery: the readable task, and the unreadable one set aside and failed.
    let active = store.active().await.unwrap();
    let ids: Vec<&str> = active.iter().map(|r| r.id().as_str()).collect();
    assert_eq!(ids, ["fine"]);
    let quarantined = store.quarantined().await.unwrap();
    assert_eq!(quarantined.len(), 1, "{quarantined:?}");
    assert_eq!(quarantined[0].task_id.as_str(), "broken");
    assert!(quarantined[0].failed);
    assert!(
        quarantined[0].reason.contains("recursion limit"),
        "{:?}",
        quarantined[0]
    );
    let failed = store.get(&TaskId::from("broken")).await.unwrap().unwrap();
    assert_eq!(failed.state(), TaskState::Failed);
    assert_eq!(
        (
            failed.owner.as_deref(),
            failed.skill.as_str(),
            failed.version
        ),
        (Some("ann"), "echo", broken.version + 1)
    );
    let text = failed.task.status.message.as_ref().unwrap().text();
    assert!(text.contains("set aside"), "{text}");
    let events = store.events(failed.id(), 0, 10).await.unwrap();
    assert_eq!(
        events.len(),
        1,
        "the log holds the failure; the rest is kept aside"
    );
    assert_eq!(events[0].seq, failed.last_seq);
    assert!(failed.last_seq > broken.last_seq);

    // Nothing more to set aside at the next start, and nothing forgotten.
    assert_eq!(store.active().await.unwrap().len(), 1);
    assert_eq!(store.quarantined().await.unwrap().len(), 1);
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn a_task_whose_tail_cannot_be_read_is_set_aside_too() {
    let schema = fresh_schema();
    let store = PostgresStore::open(&test_config(&schema))
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()));
    let task = ann("tailed", TaskState::Working, None);
    store.commit(&task, 0, &[created(&task)]).await.unwrap();
    // A commit after the record, kept as its event alone; then that event damaged.
    let (next, events) = with_status(&task, task.task.status.clone());
    store.commit(&next, 1, &events).await.unwrap();
    let client = store.testing_client().await;
    let damaged = client
        .execute(
            &format!("UPDATE {schema}.events SET event = $1 WHERE task_id = 'tailed' AND seq = 2"),
            &[&too_deep()],
        )
        .await
        .unwrap();
    assert_eq!(damaged, 1);

    let error = store.get(task.id()).await.unwrap_err();
    assert!(
        matches!(error, fundi_runtime::StoreError::Codec { .. }),
        "{error:?}"
    );
    assert!(store.active().await.unwrap().is_empty());
    let quarantined = store.quarantined().await.unwrap();
    assert_eq!(quarantined.len(), 1, "{quarantined:?}");
    let failed = store.get(task.id()).await.unwrap().unwrap();
    assert_eq!(failed.state(), TaskState::Failed);
    assert_eq!(failed.version, next.version + 1);
    drop_schemas(&[schema]).await;
}
