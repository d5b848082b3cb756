//! The operations records kept in a sled store (issues, grants, the audit and chaos
//! logs, peers, requests for access) keep their contracts, and what they hold survives a reopen.

use std::sync::Arc;

use fundi_ops::audit::AuditLog;
use fundi_ops::chaos::ChaosLog;
use fundi_ops::testing::records_contract::{
    audit_entry, chaos_event, check_audit_log, check_chaos_log, check_grant_store,
    check_issue_store, check_peer_store, stored_peer,
};
use fundi_runtime::model::TaskId;
use fundi_store_sled::testing::open_sled;
use fundi_store_sled::{
    Durability, SledAuditLog, SledChaosLog, SledGrantStore, SledIssueStore, SledPeerStore,
    SledStore,
};

#[tokio::test]
async fn issues_and_grants_keep_their_contracts() {
    let sled = Arc::new(SledStore::temporary(Durability::Sync).unwrap());
    check_issue_store("sled", &SledIssueStore::new(sled.clone())).await;
    check_grant_store("sled", &SledGrantStore::new(sled)).await;
}

#[tokio::test]
async fn the_audit_log_keeps_its_contract_and_its_records_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let sled = Arc::new(open_sled(dir.path()).await);
    check_audit_log("sled", &SledAuditLog::new(sled.clone())).await;
    drop(sled);
    let log = SledAuditLog::new(Arc::new(open_sled(dir.path()).await));
    let after = log.append(audit_entry("schedule.create")).await.unwrap();
    let all = log.read(0, 10).await.unwrap();
    assert_eq!(all.len(), 4, "kept across a reopen");
    assert_eq!(
        all.last().unwrap(),
        &after,
        "and numbered after what was there"
    );
}

#[tokio::test]
async fn the_chaos_log_keeps_its_contract_and_its_records_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let sled = Arc::new(open_sled(dir.path()).await);
    check_chaos_log("sled", &SledChaosLog::new(sled.clone())).await;
    drop(sled);
    let log = SledChaosLog::new(Arc::new(open_sled(dir.path()).await));
    let one = TaskId::from("t-1");
    assert_eq!(log.read(&one, 0, 10).await.unwrap().len(), 3, "kept");
    assert_eq!(
        log.append(&one, vec![chaos_event("latency", 4)])
            .await
            .unwrap(),
        4,
        "numbered after what was there"
    );
}

#[tokio::test]
async fn peers_keep_their_contract_and_survive_a_reopen() {
    use fundi_ops::peers::PeerStore;
    let dir = tempfile::tempdir().unwrap();
    let sled = Arc::new(open_sled(dir.path()).await);
    check_peer_store("sled", &SledPeerStore::new(sled.clone())).await;
    SledPeerStore::new(sled.clone())
        .put(&stored_peer("b", "https://b.test"))
        .await
        .unwrap();
    drop(sled);
    let reopened = SledPeerStore::new(Arc::new(open_sled(dir.path()).await));
    let names: Vec<String> = reopened
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["b", "zeta"], "kept across a reopen");
}

#[tokio::test]
async fn requests_for_access_keep_their_contract_and_survive_a_reopen() {
    use fundi_ops::access::AccessRequestStore;
    use fundi_ops::testing::access_contract::{check_access_request_store, request};
    use fundi_store_sled::SledAccessRequestStore;
    let dir = tempfile::tempdir().unwrap();
    let sled = Arc::new(open_sled(dir.path()).await);
    check_access_request_store("sled", &SledAccessRequestStore::new(sled.clone()).unwrap()).await;
    drop(sled);
    let store = SledAccessRequestStore::new(Arc::new(open_sled(dir.path()).await)).unwrap();
    assert_eq!(store.list().await.unwrap().len(), 2, "kept across a reopen");
    assert!(
        !store.insert(&request("ar-4", "j-1")).await.unwrap(),
        "an assertion used before a reopen is refused after it"
    );
}
