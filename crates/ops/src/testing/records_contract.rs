//! The contracts of the operations records every backend keeps beside its tasks: issues
//! (merged by fingerprint, one heal at a time), grants (found by id and by their token's
//! digest only), the audit log (in order), the chaos log (in order, per task) and the
//! peers added at run time (whole, by name). Each
//! check takes an empty store; `name` labels failures.

use chrono::Utc;
use serde_json::json;

use crate::audit::{AuditEntry, AuditLog};
use crate::chaos::{ChaosEvent, ChaosLog};
use crate::grants::{Grant, GrantStore, token_digest};
use crate::issues::{HealClaim, IssueStatus, IssueStore, NewIssue, fingerprint};
use crate::peers::{PeerStore, StoredPeer};
use fundi_runtime::model::TaskId;

/// An a11y finding of `rule` at `place`.
pub fn finding(rule: &str, place: &str) -> NewIssue {
    NewIssue {
        fingerprint: fingerprint(&["a11y-audit", rule, place]),
        source: "a11y-audit".into(),
        rule: rule.into(),
        severity: "critical".into(),
        title: "Images must have alternative text".into(),
        location: "https://site.test/".into(),
        target: Some(place.into()),
        evidence: "<img src=x>".into(),
        remediation: "Add alt".into(),
        tags: vec!["wcag111".into()],
        task_id: TaskId::from("t1"),
    }
}

/// A finding seen again updates its issue instead of adding one, and reopens it when it
/// was resolved; one heal task holds an issue until it lets go or is taken over.
pub async fn check_issue_store(name: &str, store: &dyn IssueStore) {
    let (first, new) = store.record(finding("image-alt", "#logo")).await.unwrap();
    assert!(new, "{name}");
    let (again, new) = store.record(finding("image-alt", "#logo")).await.unwrap();
    assert!(!new, "{name}");
    assert_eq!(again.occurrences, 2, "{name}");
    assert_eq!(again.first_seen, first.first_seen, "{name}");
    store.record(finding("image-alt", "#hero")).await.unwrap();
    let a11y = store.issues(Some("a11y-audit")).await.unwrap();
    assert_eq!(a11y.len(), 2, "{name}");
    let scans = store.issues(Some("security-scan")).await.unwrap();
    assert!(scans.is_empty(), "{name}");
    let resolved = store.set_status(first.id(), IssueStatus::Resolved).await;
    assert!(resolved.unwrap(), "{name}");
    let (reopened, _) = store.record(finding("image-alt", "#logo")).await.unwrap();
    assert_eq!(
        reopened.status,
        IssueStatus::Open,
        "{name}: seen again, open again"
    );
    let unknown = store.set_status("nope", IssueStatus::Resolved).await;
    assert!(!unknown.unwrap(), "{name}");
    check_heal_claims(name, store).await;
}

async fn check_heal_claims(name: &str, store: &dyn IssueStore) {
    let (first, second) = (TaskId::from("heal-1"), TaskId::from("heal-2"));
    let (issue, _) = store.record(finding("image-alt", "#logo")).await.unwrap();
    let id = issue.id().to_owned();
    let keep = |_: &TaskId| false;
    let claim = store.claim_heal(&id, &first, &keep).await.unwrap();
    assert!(matches!(claim, HealClaim::Claimed(_)), "{name}");
    let again = store.claim_heal(&id, &first, &keep).await.unwrap();
    assert!(
        matches!(again, HealClaim::Claimed(_)),
        "{name}: held already"
    );
    let refused = store.claim_heal(&id, &second, &keep).await.unwrap();
    assert_eq!(refused, HealClaim::HeldBy(first.clone()), "{name}");
    let ended = |holder: &TaskId| holder == &TaskId::from("heal-1");
    let taken = store.claim_heal(&id, &second, &ended).await.unwrap();
    assert!(matches!(taken, HealClaim::Claimed(_)), "{name}: taken over");
    // The first task no longer holds it: its release changes nothing.
    store
        .release_heal(&id, &first, IssueStatus::Open)
        .await
        .unwrap();
    let held = store.issue(&id).await.unwrap().unwrap();
    assert_eq!(held.heal.unwrap().task_id, second, "{name}");
    store
        .release_heal(&id, &second, IssueStatus::Open)
        .await
        .unwrap();
    assert_eq!(
        store.issue(&id).await.unwrap().unwrap().heal,
        None,
        "{name}"
    );
    let none = store.claim_heal("nope", &first, &keep).await.unwrap();
    assert_eq!(none, HealClaim::NoSuchIssue, "{name}");
    // A proposed fix keeps its status when the issue is seen again.
    store
        .set_status(&id, IssueStatus::FixProposed)
        .await
        .unwrap();
    let (seen, _) = store.record(finding("image-alt", "#logo")).await.unwrap();
    assert_eq!(seen.status, IssueStatus::FixProposed, "{name}");
}

/// A grant of `client` "ci" for `fundi:audit`, made by "ops", with the digest of `token`.
pub fn grant(id: &str, token: &str) -> Grant {
    Grant {
        id: id.into(),
        client: "ci".into(),
        scopes: vec!["fundi:audit".into()],
        created_by: "ops".into(),
        created_at: Utc::now(),
        expires_at: None,
        revoked_at: None,
        acts_as: None,
        token_digest: token_digest(token),
    }
}

/// Grants are found by id and by their token's digest only; a revocation reads back.
pub async fn check_grant_store(name: &str, store: &dyn GrantStore) {
    let mut first = grant("gr-1", "fundi_grant_one");
    store.put(&first).await.unwrap();
    store.put(&grant("gr-2", "fundi_grant_two")).await.unwrap();
    let found = store
        .by_digest(&token_digest("fundi_grant_one"))
        .await
        .unwrap();
    assert_eq!(found.as_ref(), Some(&first), "{name}");
    let unknown = store.by_digest(&token_digest("fundi_grant_x")).await;
    assert_eq!(unknown.unwrap(), None, "{name}");
    first.revoked_at = Some(Utc::now());
    store.put(&first).await.unwrap();
    let found = store.by_digest(&first.token_digest).await.unwrap().unwrap();
    assert!(
        found.refusal(Utc::now()).unwrap().contains("revoked"),
        "{name}"
    );
    assert_eq!(store.get("gr-2").await.unwrap().unwrap().id, "gr-2");
    // A token issued later: the grant is found by the new digest, never by the old.
    let mut second = grant("gr-2", "fundi_grant_unheld");
    second.acts_as = Some("idp:alice".into());
    second.token_digest = token_digest("fundi_grant_issued");
    store.put(&second).await.unwrap();
    let found = store.by_digest(&second.token_digest).await.unwrap();
    assert_eq!(found.as_ref(), Some(&second), "{name}");
    let old = store.by_digest(&token_digest("fundi_grant_two")).await;
    assert_eq!(old.unwrap(), None, "{name}: the old digest finds nothing");
    let ids: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.id)
        .collect();
    assert_eq!(ids, ["gr-1", "gr-2"], "{name}");
}

/// An audit entry of `action` by "ops" through the console.
pub fn audit_entry(action: &str) -> AuditEntry {
    AuditEntry {
        user: "ops".into(),
        client: "console".into(),
        action: action.into(),
        target: "gr-1".into(),
        detail: json!({"scopes": ["fundi:audit"]}),
    }
}

/// Records read back in the order they were written, paged after a sequence number.
pub async fn check_audit_log(name: &str, log: &dyn AuditLog) {
    let mut seqs = Vec::new();
    for action in ["grant.create", "grant.narrow", "grant.revoke"] {
        seqs.push(log.append(audit_entry(action)).await.unwrap().seq);
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{name}: {seqs:?}");
    let all = log.read(0, 10).await.unwrap();
    let actions: Vec<&str> = all.iter().map(|r| r.entry.action.as_str()).collect();
    assert_eq!(
        actions,
        ["grant.create", "grant.narrow", "grant.revoke"],
        "{name}"
    );
    let rest = log.read(seqs[0], 1).await.unwrap();
    assert_eq!(rest.len(), 1, "{name}");
    assert_eq!(rest[0].seq, seqs[1], "{name}: paged after a seq");
}

/// A chaos run's `fault` on connection `connection`.
pub fn chaos_event(fault: &str, connection: u64) -> ChaosEvent {
    ChaosEvent {
        at: Utc::now(),
        phase: "fault".into(),
        connection: Some(connection),
        fault: fault.into(),
        direction: Some("downstream".into()),
        detail: json!({"delayMs": 120}),
    }
}

/// Records are kept per task, numbered in order, paged after a sequence number, and
/// removed with their task. Leaves three records of task `t-1`.
pub async fn check_chaos_log(name: &str, log: &dyn ChaosLog) {
    let (one, two) = (TaskId::from("t-1"), TaskId::from("t-10"));
    let batch = vec![chaos_event("latency", 1), chaos_event("reset_peer", 2)];
    assert_eq!(log.append(&one, batch).await.unwrap(), 2, "{name}");
    let other = log.append(&two, vec![chaos_event("down", 1)]).await;
    assert_eq!(other.unwrap(), 1, "{name}");
    let third = log.append(&one, vec![chaos_event("slicer", 3)]).await;
    assert_eq!(third.unwrap(), 3, "{name}");
    let all = log.read(&one, 0, 10).await.unwrap();
    let faults: Vec<&str> = all.iter().map(|r| r.event.fault.as_str()).collect();
    assert_eq!(faults, ["latency", "reset_peer", "slicer"], "{name}");
    assert_eq!(
        all.iter().map(|r| r.seq).collect::<Vec<_>>(),
        [1, 2, 3],
        "{name}"
    );
    assert!(
        all.iter().all(|r| r.task_id == one),
        "{name}: t-10 kept apart"
    );
    let page = log.read(&one, 1, 1).await.unwrap();
    assert_eq!(page[0].seq, 2, "{name}: paged after a seq");
    log.remove(&two).await.unwrap();
    assert!(log.read(&two, 0, 10).await.unwrap().is_empty(), "{name}");
    assert_eq!(log.read(&one, 0, 10).await.unwrap().len(), 3, "{name}");
}

/// A peer named `name` with these settings.
pub fn stored_peer(name: &str, url: &str) -> StoredPeer {
    StoredPeer {
        name: name.into(),
        settings: json!({"url": url, "token": "peer-token", "interface-hosts": ["a.test"]}),
        added_by: "ops".into(),
        added_at: Utc::now(),
    }
}

/// Peers are kept whole (their settings as given), listed by name, replaced by name and
/// removed once.
pub async fn check_peer_store(name: &str, store: &dyn PeerStore) {
    assert!(store.list().await.unwrap().is_empty(), "{name}");
    store
        .put(&stored_peer("zeta", "https://z.test"))
        .await
        .unwrap();
    let b = stored_peer("b", "https://b.test");
    store.put(&b).await.unwrap();
    let listed = store.list().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["b", "zeta"], "{name}");
    assert_eq!(listed[0].settings, b.settings, "{name}");
    assert_eq!(listed[0].added_by, "ops", "{name}");
    let moved = stored_peer("b", "https://b2.test");
    store.put(&moved).await.unwrap();
    let listed = store.list().await.unwrap();
    assert_eq!(listed.len(), 2, "{name}: replaced, not added");
    assert_eq!(listed[0].settings["url"], "https://b2.test", "{name}");
    assert!(store.remove("b").await.unwrap(), "{name}");
    assert!(!store.remove("b").await.unwrap(), "{name}: removed once");
    let names: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["zeta"], "{name}");
}
