//! The other stores on a real PostgreSQL server (issues, schedules, grants, the audit
//! and chaos-event logs, peers): they keep fundi-ops's contracts, concurrent writers all
//! count, and retention takes a task's chaos events with it.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use fundi_ops::chaos::ChaosLog;
use fundi_ops::issues::{HealClaim, IssueStatus, IssueStore, NewIssue, fingerprint};
use fundi_ops::schedules::{Schedule, ScheduleStore};
use fundi_ops::testing::records_contract::{
    chaos_event, check_audit_log, check_chaos_log, check_grant_store, check_issue_store,
    check_peer_store,
};
use fundi_postgres::PostgresStore;
use fundi_postgres::testing::{drop_schemas, fresh_schema, test_config, test_url};
use fundi_runtime::store::TaskStore;
use fundi_runtime::testing::store_contract::{advance, created, record};
use fundi_runtime::{TaskId, TaskState};

struct Fresh {
    store: PostgresStore,
    schema: String,
}

impl Fresh {
    async fn new() -> Fresh {
        let schema = fresh_schema();
        let mut config = test_config(&schema);
        config.pool_size = 8;
        let store = PostgresStore::open(&config)
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()));
        Fresh { store, schema }
    }

    async fn drop(self) {
        drop_schemas(&[self.schema]).await;
    }
}

fn finding(place: &str) -> NewIssue {
    NewIssue {
        fingerprint: fingerprint(&["a11y-audit", "image-alt", place]),
        source: "a11y-audit".into(),
        rule: "image-alt".into(),
        severity: "critical".into(),
        title: "Images must have alternative text".into(),
        location: "https://site.test/".into(),
        target: Some(place.into()),
        evidence: "<img src=x>".into(),
        remediation: "Add alt".into(),
        tags: vec![],
        task_id: TaskId::from("audit"),
    }
}

#[tokio::test]
async fn issues_merge_count_every_concurrent_sighting_and_hold_one_heal() {
    let fresh = Fresh::new().await;
    let store = Arc::new(fresh.store.clone());
    let (first, new) = store.record(finding("#logo")).await.unwrap();
    assert!(new);
    let writers: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.record(finding("#logo")).await.unwrap() })
        })
        .collect();
    for writer in writers {
        assert!(!writer.await.unwrap().1, "seen before");
    }
    let again = store.issue(first.id()).await.unwrap().unwrap();
    assert_eq!(again.occurrences, 9, "every sighting counts");
    store.record(finding("#hero")).await.unwrap();
    assert_eq!(store.issues(Some("a11y-audit")).await.unwrap().len(), 2);
    assert!(
        store
            .issues(Some("security-scan"))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.issues(None).await.unwrap().len(), 2);
    let keep = |_: &TaskId| false;
    let heal = TaskId::from("heal-1");
    let claim = store.claim_heal(first.id(), &heal, &keep).await.unwrap();
    assert!(matches!(claim, HealClaim::Claimed(_)));
    let other = store
        .claim_heal(first.id(), &TaskId::from("heal-2"), &keep)
        .await
        .unwrap();
    assert_eq!(other, HealClaim::HeldBy(heal.clone()));
    assert!(
        store
            .set_status(first.id(), IssueStatus::Fixed)
            .await
            .unwrap()
    );
    assert!(!store.set_status("nope", IssueStatus::Fixed).await.unwrap());
    assert_eq!(store.issue("nope").await.unwrap(), None);
    fresh.drop().await;
}

#[tokio::test]
async fn schedules_read_back_changed_and_deleted() {
    let fresh = Fresh::new().await;
    let store = &fresh.store;
    let schedule = fundi_ops::testing::schedule("sch-1", Utc::now());
    ScheduleStore::put(store, &schedule).await.unwrap();
    let paused = Schedule {
        paused: true,
        ..schedule.clone()
    };
    ScheduleStore::put(store, &paused).await.unwrap();
    assert_eq!(
        ScheduleStore::get(store, "sch-1").await.unwrap(),
        Some(paused)
    );
    assert_eq!(ScheduleStore::list(store).await.unwrap().len(), 1);
    assert!(ScheduleStore::delete(store, "sch-1").await.unwrap());
    assert!(!ScheduleStore::delete(store, "sch-1").await.unwrap());

    fresh.drop().await;
}

#[tokio::test]
async fn the_operations_records_keep_their_contracts() {
    let fresh = Fresh::new().await;
    let store = &fresh.store;
    check_issue_store("postgres", store).await;
    check_grant_store("postgres", store).await;
    check_audit_log("postgres", store).await;
    check_chaos_log("postgres", store).await;
    check_peer_store("postgres", store).await;
    fundi_ops::testing::access_contract::check_access_request_store("postgres", store).await;
    fresh.drop().await;
}

#[tokio::test]
async fn chaos_events_leave_with_their_task() {
    let fresh = Fresh::new().await;
    let store = &fresh.store;
    let task = TaskId::from("run");
    assert_eq!(
        ChaosLog::append(
            store,
            &task,
            vec![chaos_event("latency", 1), chaos_event("latency", 2)]
        )
        .await
        .unwrap(),
        2
    );
    assert_eq!(
        ChaosLog::append(store, &task, vec![chaos_event("reset_peer", 3)])
            .await
            .unwrap(),
        3
    );
    let other = TaskId::from("other");
    ChaosLog::append(store, &other, vec![chaos_event("latency", 1)])
        .await
        .unwrap();
    let read = ChaosLog::read(store, &task, 1, 10).await.unwrap();
    let seqs: Vec<u64> = read.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [2, 3]);
    assert_eq!(read[1].event.fault, "reset_peer");

    // Retention takes the task's chaos events with it.
    let ended = record("run", "c1", TaskState::Working, 1_000, "u");
    store.commit(&ended, 0, &[created(&ended)]).await.unwrap();
    advance(store, "run", TaskState::Failed, 1_000).await;
    let cutoff = Utc.timestamp_millis_opt(3_000).unwrap();
    assert_eq!(store.remove_ended_before(cutoff, 10).await.unwrap(), 1);
    assert!(
        ChaosLog::read(store, &task, 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(ChaosLog::read(store, &other, 0, 10).await.unwrap().len(), 1);
    ChaosLog::remove(store, &other).await.unwrap();
    assert!(
        ChaosLog::read(store, &other, 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    fresh.drop().await;
}

#[tokio::test]
async fn an_inspection_reads_who_holds_what_and_changes_nothing() {
    let fresh = Fresh::new().await;
    let task = record("t", "ctx", TaskState::Working, 1, "ann");
    fresh
        .store
        .commit(&task, 0, &[created(&task)])
        .await
        .unwrap();
    let config = test_config(&fresh.schema);
    let inspected = PostgresStore::inspect(&config).await.unwrap();
    let holders = inspected.node_leases().await.unwrap();
    assert_eq!(holders.len(), 1);
    assert_eq!((holders[0].node.as_deref(), holders[0].tasks), (None, 1));

    // A schema an older fundi wrote is not migrated by a look at it, nor is one from a
    // newer fundi read.
    let client = fresh.store.testing_client().await;
    let migrations = format!("{}.fundi_migrations", fresh.schema);
    let latest: i64 = client
        .query_one(&format!("SELECT max(version) FROM {migrations}"), &[])
        .await
        .unwrap()
        .get(0);
    client
        .execute(
            &format!("DELETE FROM {migrations} WHERE version = $1"),
            &[&latest],
        )
        .await
        .unwrap();
    let older = PostgresStore::inspect(&config)
        .await
        .unwrap_err()
        .to_string();
    assert!(older.contains("start a node of this version"), "{older}");
    client
        .execute(
            &format!("INSERT INTO {migrations} (version) VALUES ($1), ($2)"),
            &[&latest, &(latest + 1)],
        )
        .await
        .unwrap();
    let newer = PostgresStore::inspect(&config).await.unwrap_err();
    assert!(
        matches!(newer, fundi_runtime::StoreError::NewerFormat { .. }),
        "{newer}"
    );
    drop(client);
    fresh.drop().await;
}
