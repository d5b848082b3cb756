//! The store contract's case about a new task's first write (`TaskStore::create_task`):
//! refused, with nothing written, when its first message created a task within the
//! window; written otherwise, its first message then naming it.

use std::time::Duration;

use chrono::{TimeZone, Utc};

use crate::model::{TaskId, TaskState};
use crate::store::{Creation, TaskRecord, TaskStore};

use super::store_contract::{created, record};

/// A minute, the window of the case.
const WINDOW: Duration = Duration::from_secs(60);

/// `first` again (its owner and first message), as task `id` created at `at_ms`.
fn sent_again(first: &TaskRecord, id: &str, at_ms: i64) -> TaskRecord {
    let mut again = record(id, "c-again", TaskState::Submitted, at_ms, "ann");
    again.task.history = first.task.history.clone();
    again.owner = first.owner.clone();
    again
}

/// Writes `r` as a new task, as the runtime does.
async fn create(store: &dyn TaskStore, r: &TaskRecord, window: Option<Duration>) -> Creation {
    store
        .create_task(r, &[created(r)], None, window)
        .await
        .unwrap()
}

/// A first message sent again within the window creates nothing and names the task it
/// created; sent again with no window, or after it, it creates a task that its first
/// message then names; another owner's message of the same id is its own.
pub async fn a_first_message_creates_one_task_within_the_window(name: &str, store: &dyn TaskStore) {
    let first = record("t1", "c1", TaskState::Submitted, 1_000, "ann");
    let message = first.task.history[0].message_id.clone();
    assert_eq!(
        create(store, &first, Some(WINDOW)).await,
        Creation::Written(None),
        "{name}"
    );
    let at = |ms| Utc.timestamp_millis_opt(ms).unwrap();

    let again = sent_again(&first, "t2", 31_000);
    let refused = create(store, &again, Some(WINDOW)).await;
    assert_eq!(
        refused,
        Creation::Taken(TaskId::from("t1"), at(1_000)),
        "{name}"
    );
    assert!(
        store.get(&TaskId::from("t2")).await.unwrap().is_none(),
        "{name}: nothing written"
    );
    let found = store.created_by(Some("ann"), &message).await.unwrap();
    assert_eq!(found, Some((TaskId::from("t1"), at(1_000))), "{name}");

    let unchecked = sent_again(&first, "t3", 32_000);
    assert_eq!(
        create(store, &unchecked, None).await,
        Creation::Written(None),
        "{name}"
    );
    let found = store.created_by(Some("ann"), &message).await.unwrap();
    assert_eq!(
        found,
        Some((TaskId::from("t3"), at(32_000))),
        "{name}: the newer task"
    );

    let later = sent_again(&first, "t4", 93_000);
    assert_eq!(
        create(store, &later, Some(WINDOW)).await,
        Creation::Written(None),
        "{name}: a minute after the task it created"
    );
    let found = store.created_by(Some("ann"), &message).await.unwrap();
    assert_eq!(found, Some((TaskId::from("t4"), at(93_000))), "{name}");
    let stored = store.get(&TaskId::from("t4")).await.unwrap();
    assert_eq!(stored.map(|t| t.version), Some(1), "{name}");

    let mut bobs = sent_again(&first, "t5", 94_000);
    bobs.owner = Some("bob".into());
    assert_eq!(
        create(store, &bobs, Some(WINDOW)).await,
        Creation::Written(None),
        "{name}: another owner's"
    );
    let found = store.created_by(Some("bob"), &message).await.unwrap();
    assert_eq!(found, Some((TaskId::from("t5"), at(94_000))), "{name}");
}
