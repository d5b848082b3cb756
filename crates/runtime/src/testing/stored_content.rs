//! The store contract's cases about what stores hold: listing pages end at their byte
//! bound, trimmed as asked, and still visit every task once; awkward text reads back whole.

use crate::model::{Artifact, Message, Part, TaskId, TaskState};
use crate::store::{ListQuery, TaskStore};

use super::store_contract::{created, record};

/// Bytes of text in each task's history and in its artifact.
const BIG: usize = 10_000;

/// Pages that a byte bound ends early carry a cursor to the rest, and pages visit every
/// task once in order; the first task of a page is always there, however large;
/// `history_length` and `without_artifacts` trim before the bound is measured.
pub async fn pages_end_at_their_byte_bound(name: &str, store: &dyn TaskStore) {
    for (i, id) in ["b1", "b2", "b3", "b4", "b5"].into_iter().enumerate() {
        let mut r = record(id, "c", TaskState::Completed, 1_000 + i as i64, "u");
        r.task.history = vec![
            Message::user(vec![Part::text("a".repeat(BIG))]),
            Message::user(vec![Part::text("b".repeat(BIG))]),
        ];
        r.task.artifacts = vec![Artifact {
            artifact_id: format!("{id}-a"),
            name: None,
            description: None,
            parts: vec![Part::text("c".repeat(BIG))],
            metadata: None,
            extensions: Vec::new(),
        }];
        store.commit(&r, 0, &[created(&r)]).await.unwrap();
    }
    let newest_first = ["b5", "b4", "b3", "b2", "b1"];

    // Each task is over 30 KB whole: a 50 KB bound holds one of them a page.
    let whole = ListQuery {
        limit: 100,
        max_bytes: Some(50_000),
        ..Default::default()
    };
    let (pages, seen) = walk(store, whole).await;
    assert_eq!(seen, newest_first, "{name}: every task once, in order");
    assert_eq!(pages, 5, "{name}: one task a page");

    // A bound below one task still gives one task a page.
    let tiny = ListQuery {
        limit: 100,
        max_bytes: Some(10),
        ..Default::default()
    };
    assert_eq!(walk(store, tiny).await, (5, seen.clone()), "{name}");

    // Trimmed to no history and no artifacts, all five fit in one page.
    let trimmed = ListQuery {
        limit: 100,
        max_bytes: Some(50_000),
        history_length: Some(0),
        without_artifacts: true,
        ..Default::default()
    };
    let page = store.list(&trimmed).await.unwrap();
    assert_eq!(page.records.len(), 5, "{name}: trimmed tasks are small");
    assert!(page.next.is_none(), "{name}");
    for r in &page.records {
        assert!(r.task.history.is_empty(), "{name}: historyLength 0");
        assert!(r.task.artifacts.is_empty(), "{name}: no artifacts");
    }

    // The most recent history message only, artifacts kept.
    let last_only = ListQuery {
        limit: 2,
        history_length: Some(1),
        ..Default::default()
    };
    let page = store.list(&last_only).await.unwrap();
    assert_eq!(page.records[0].task.history.len(), 1, "{name}");
    assert_eq!(page.records[0].task.history[0].text(), "b".repeat(BIG));
    assert_eq!(page.records[0].task.artifacts.len(), 1, "{name}");
    assert_eq!(page.total, 5, "{name}");
    // The stored task is whole.
    let stored = store.get(&TaskId::from("b5")).await.unwrap().unwrap();
    assert_eq!(stored.task.history.len(), 2, "{name}");
}

/// Follows the pages of `query` to the end: how many, and the ids seen.
async fn walk(store: &dyn TaskStore, mut query: ListQuery) -> (usize, Vec<String>) {
    let (mut pages, mut seen) = (0, Vec::new());
    loop {
        let page = store.list(&query).await.unwrap();
        pages += 1;
        seen.extend(page.records.iter().map(|r| r.task.id.to_string()));
        match page.next {
            Some(next) => query.cursor = Some(next),
            None => return (pages, seen),
        }
        assert!(pages < 100, "the listing does not end");
    }
}

/// Text with every control character but NUL (which the runtime refuses before any
/// store sees it), characters outside the BMP, and numbers at the ends of their
/// ranges, in text, data keys and values and metadata: stored, read back and listed
/// whole, so that what the runtime accepts every store keeps.
pub async fn awkward_text_reads_back_whole(name: &str, store: &dyn TaskStore) {
    let awkward: String = (1u8..32)
        .map(char::from)
        .chain(['\u{7f}', '𝄞', '\u{200f}'])
        .collect();
    let data = serde_json::json!({
        "s": awkward, awkward.clone(): [u64::MAX, i64::MIN, 0.1, 1e300],
    });
    let mut r = record("odd", "c", TaskState::Working, 1_000, "u");
    let mut message = Message::user(vec![Part::text(awkward.clone()), Part::data(data)]);
    let mut metadata = serde_json::Map::new();
    metadata.insert(awkward.clone(), serde_json::json!(awkward));
    message.metadata = Some(metadata);
    assert_eq!(message.validate(), Ok(()), "{name}: the runtime accepts it");
    r.task.history = vec![message];
    store.commit(&r, 0, &[created(&r)]).await.unwrap();
    let got = store.get(&TaskId::from("odd")).await.unwrap().unwrap();
    assert_eq!(got.task, r.task, "{name}: read back whole");
    let listed = store
        .list(&ListQuery {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.records[0].task, r.task, "{name}: listed whole");
    let events = store.events(&TaskId::from("odd"), 0, 10).await.unwrap();
    assert_eq!(events, vec![created(&r)], "{name}: its event whole");
}
