//! A person's decision on a request for access, and the requester's collection of its
//! token. Each is one change of the stored request, made only from the version read
//! (so two approvers, or two collections, cannot both win, on any node).

use chrono::Utc;
use fundi_ops::access::{AccessRequest, Decision, Standing};
use fundi_ops::grants::{GRANT_TOKEN_PREFIX, Grant, random_token, token_digest};
use fundi_runtime::approval::APPROVE_SCOPE;
use fundi_runtime::{ADMIN_SCOPE, Grants};

use super::AccessDesk;
use crate::access::error::AccessError;

/// What an approval vended.
pub struct Approved {
    /// The request, approved.
    pub request: AccessRequest,
    /// The grant it vended.
    pub grant: Grant,
    /// Scopes asked for that the grant does not hold (narrowed away, or beyond what the
    /// approver may give).
    pub withheld: Vec<String>,
}

/// What a collection handed out.
pub(crate) struct Collected {
    pub(crate) grant: Grant,
    pub(crate) token: String,
}

/// Scopes no request for access is ever granted: operating, approving and answering the
/// inbox are for people and local agents; delegating would pass the requester on to
/// fundi's peers, and a grant is not transitive.
fn never_granted(scope: &str) -> bool {
    scope == ADMIN_SCOPE
        || scope.starts_with(APPROVE_SCOPE)
        || scope == fundi_ops::inbox::INBOX_SCOPE
        || scope == fundi_peers::DELEGATE_SCOPE
}

impl AccessDesk {
    /// Approves `id` for `by` (holding `held`): a grant of the scopes asked for, narrowed
    /// to `narrowing` when given and to what `held` may give, lasting `lasts`.
    pub(crate) async fn approve(
        &self,
        id: &str,
        by: &str,
        held: &Grants,
        narrowing: Option<Vec<String>>,
        lasts: Option<chrono::DateTime<Utc>>,
    ) -> Result<Approved, AccessError> {
        let request = self.pending(id).await?;
        if let Some(narrowing) = &narrowing
            && let Some(wider) = narrowing.iter().find(|s| !request.scopes.contains(s))
        {
            return Err(AccessError::Malformed(format!(
                "{wider:?} was not asked for: an approval can only narrow (asked: {:?})",
                request.scopes
            )));
        }
        let (given, withheld): (Vec<String>, Vec<String>) =
            request.scopes.iter().cloned().partition(|scope| {
                narrowing.as_ref().is_none_or(|n| n.contains(scope))
                    && held.allows(Some(scope))
                    && !never_granted(scope)
            });
        if given.is_empty() {
            return Err(AccessError::Forbidden(format!(
                "nothing is left to grant of {:?}: {by} may not give these scopes, or the \
                 narrowing removed them all (fundi:admin, fundi:approve, fundi:inbox and \
                 fundi:delegate are never granted to a requester); reject the request instead",
                request.scopes
            )));
        }
        let now = Utc::now();
        let grant = Grant {
            id: format!("gr-{}", uuid::Uuid::now_v7()),
            client: request.id.clone(),
            scopes: given.clone(),
            created_by: by.to_owned(),
            created_at: now,
            expires_at: lasts,
            revoked_at: None,
            acts_as: Some(request.requester.user()),
            // A token nobody holds, until the requester collects its own.
            token_digest: token_digest(&random_token()),
        };
        self.grants.store.put(&grant).await?;
        let mut next = request.clone();
        next.version += 1;
        next.expires_at = now + self.lifetime;
        next.decision = Some(Decision {
            approved: true,
            by: by.to_owned(),
            at: now,
            scopes: given,
            grant: Some(grant.id.clone()),
            reason: None,
        });
        if !self.store.replace(&request, &next).await? {
            // Someone else decided meanwhile: the grant vended here must admit nothing.
            self.grants.revoke(&grant.id).await?;
            return Err(decided_meanwhile(id));
        }
        Ok(Approved {
            request: next,
            grant,
            withheld,
        })
    }

    /// Rejects `id` for `by`, saying `reason` to the requester when given.
    pub(crate) async fn reject(
        &self,
        id: &str,
        by: &str,
        reason: Option<String>,
    ) -> Result<AccessRequest, AccessError> {
        let request = self.pending(id).await?;
        let mut next = request.clone();
        next.version += 1;
        next.decision = Some(Decision {
            approved: false,
            by: by.to_owned(),
            at: Utc::now(),
            scopes: Vec::new(),
            grant: None,
            reason,
        });
        if !self.store.replace(&request, &next).await? {
            return Err(decided_meanwhile(id));
        }
        Ok(next)
    }

    /// The request `id`, still pending.
    async fn pending(&self, id: &str) -> Result<AccessRequest, AccessError> {
        let request = self.find(id).await?;
        match request.standing(Utc::now()) {
            Standing::Pending => Ok(request),
            other => Err(AccessError::Conflict(format!(
                "request {id} is {}, not pending: it was decided or lapsed",
                other.as_str()
            ))),
        }
    }

    /// Hands `request`'s token to its requester: once, and only once it is approved.
    /// `Ok(None)`: still pending.
    pub(crate) async fn collect(
        &self,
        request: AccessRequest,
    ) -> Result<Option<Collected>, AccessError> {
        let now = Utc::now();
        let id = &request.id;
        match request.standing(now) {
            Standing::Pending => return Ok(None),
            Standing::Approved => {}
            Standing::Collected => {
                return Err(AccessError::Gone(format!(
                    "the token of request {id} was collected at {}: it is handed out once \
                     (ask for access again if it was lost)",
                    request.collected_at.unwrap_or(now).to_rfc3339()
                )));
            }
            Standing::Rejected => {
                let decision = request.decision.as_ref();
                let why = decision
                    .and_then(|d| d.reason.as_deref())
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                return Err(AccessError::Gone(format!(
                    "request {id} was rejected by a person{why}"
                )));
            }
            Standing::Expired => {
                return Err(AccessError::Gone(format!(
                    "request {id} lapsed at {} without being {}",
                    request.expires_at.to_rfc3339(),
                    match request.decision {
                        Some(_) => "collected",
                        None => "decided",
                    }
                )));
            }
        }
        let grant_id = request
            .decision
            .as_ref()
            .and_then(|d| d.grant.clone())
            .unwrap_or_default();
        let mut next = request.clone();
        next.version += 1;
        next.collected_at = Some(now);
        if !self.store.replace(&request, &next).await? {
            return Err(AccessError::Gone(format!(
                "the token of request {id} was collected meanwhile: it is handed out once"
            )));
        }
        let _changing = self.grants.changing.lock().await;
        let mut grant = self.grants.store.get(&grant_id).await?.ok_or_else(|| {
            AccessError::Gone(format!("the grant of request {id} no longer exists"))
        })?;
        if let Some(refusal) = grant.refusal(now) {
            return Err(AccessError::Gone(refusal));
        }
        let token = format!("{GRANT_TOKEN_PREFIX}{}", random_token());
        grant.token_digest = token_digest(&token);
        if let Err(error) = self.grants.store.put(&grant).await {
            // The token was never kept: undo the collection, so that the requester can
            // collect again rather than hold a request marked collected and no token.
            let mut undone = next.clone();
            undone.version += 1;
            undone.collected_at = None;
            if let Err(also) = self.store.replace(&next, &undone).await {
                tracing::error!(%also, request = %id, "undoing a collection");
            }
            return Err(error.into());
        }
        Ok(Some(Collected { grant, token }))
    }
}

fn decided_meanwhile(id: &str) -> AccessError {
    AccessError::Conflict(format!(
        "request {id} was decided by someone else meanwhile; read it again"
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use fundi_ops::access::{AccessRequestStore, MemoryAccessRequestStore};
    use fundi_ops::grants::{GrantStore, MemoryGrantStore};
    use fundi_ops::testing::access_contract::request;

    use super::*;
    use crate::access::config::{FriendsConfig, IssuerConfig};
    use crate::admin::grant_desk::GrantDesk;

    /// Grants in memory whose writes fail while `failing` is set.
    #[derive(Default)]
    struct Flaky {
        grants: MemoryGrantStore,
        failing: std::sync::atomic::AtomicBool,
    }

    #[async_trait::async_trait]
    impl GrantStore for Flaky {
        async fn put(&self, grant: &Grant) -> Result<(), fundi_runtime::StoreError> {
            if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
                let refused = std::io::Error::other("the disk is full");
                return Err(fundi_runtime::StoreError::Engine(Box::new(refused)));
            }
            self.grants.put(grant).await
        }
        async fn get(&self, id: &str) -> Result<Option<Grant>, fundi_runtime::StoreError> {
            self.grants.get(id).await
        }
        async fn by_digest(&self, d: &str) -> Result<Option<Grant>, fundi_runtime::StoreError> {
            self.grants.by_digest(d).await
        }
        async fn list(&self) -> Result<Vec<Grant>, fundi_runtime::StoreError> {
            self.grants.list().await
        }
    }

    #[tokio::test]
    async fn a_collection_whose_token_cannot_be_kept_can_be_made_again() {
        let grants = Arc::new(Flaky::default());
        let desk = desk_over(&["fundi:audit"], grants.clone()).await;
        let approver = Grants::scopes(["fundi:admin"]);
        assert!(
            desk.approve("ar-1", "ann", &approver, None, None)
                .await
                .is_ok()
        );
        grants
            .failing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let request = desk.find("ar-1").await.unwrap();
        assert!(matches!(
            desk.collect(request).await,
            Err(AccessError::Store(_))
        ));
        let request = desk.find("ar-1").await.unwrap();
        assert_eq!(
            request.standing(Utc::now()),
            Standing::Approved,
            "not marked collected"
        );
        grants
            .failing
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let collected = desk.collect(request).await.unwrap().expect("collected");
        let admitted = grants
            .by_digest(&token_digest(&collected.token))
            .await
            .unwrap();
        assert_eq!(admitted.map(|g| g.id), Some(collected.grant.id));
    }

    async fn desk_with(scopes: &[&str]) -> AccessDesk {
        desk_over(scopes, Arc::new(MemoryGrantStore::new())).await
    }

    async fn desk_over(scopes: &[&str], grant_store: Arc<dyn GrantStore>) -> AccessDesk {
        let store = Arc::new(MemoryAccessRequestStore::new());
        let mut asked = request("ar-1", "j-1");
        asked.scopes = scopes.iter().map(|s| (*s).to_owned()).collect();
        store.insert(&asked).await.unwrap();
        let friends = FriendsConfig {
            issuers: BTreeMap::from([(
                "idp".to_owned(),
                IssuerConfig {
                    issuer: "https://idp.test".into(),
                    ..IssuerConfig::default()
                },
            )]),
            ..FriendsConfig::default()
        };
        let grants = Arc::new(GrantDesk::new(grant_store));
        AccessDesk::new(&friends, "https://fundi.test", store, grants).unwrap()
    }

    #[tokio::test]
    async fn an_approval_gives_no_more_than_asked_nor_than_the_approver_holds() {
        let desk = desk_with(&[
            "fundi:audit",
            "fundi:security",
            "fundi:admin",
            "fundi:delegate",
        ])
        .await;
        let approver = Grants::scopes(["fundi:approve", "fundi:audit", "fundi:admin"]);
        let wider = desk
            .approve(
                "ar-1",
                "ann",
                &approver,
                Some(vec!["fundi:chaos".into()]),
                None,
            )
            .await;
        assert!(
            matches!(wider, Err(AccessError::Malformed(_))),
            "a narrowing that widens"
        );
        // An admin may give any scope but the never-granted ones.
        let approved = desk.approve("ar-1", "ann", &approver, None, None).await;
        let approved = approved.unwrap_or_else(|_| panic!("approved"));
        assert_eq!(approved.grant.scopes, ["fundi:audit", "fundi:security"]);
        assert_eq!(approved.withheld, ["fundi:admin", "fundi:delegate"]);
        assert_eq!(approved.grant.acts_as.as_deref(), Some("idp:alice"));
        let stored = desk.grants.store.get(&approved.grant.id).await.unwrap();
        assert!(stored.is_some(), "the grant is vended by the approval");
        let again = desk.approve("ar-1", "bob", &approver, None, None).await;
        assert!(
            matches!(again, Err(AccessError::Conflict(_))),
            "decided once"
        );
    }

    #[tokio::test]
    async fn an_approver_gives_only_the_scopes_they_hold() {
        let desk = desk_with(&["fundi:audit", "fundi:security"]).await;
        let approver = Grants::scopes(["fundi:approve", "fundi:audit"]);
        let approved = desk.approve("ar-1", "ann", &approver, None, None).await;
        let approved = approved.unwrap_or_else(|_| panic!("approved"));
        assert_eq!(approved.grant.scopes, ["fundi:audit"]);
        assert_eq!(approved.withheld, ["fundi:security"]);

        let desk = desk_with(&["fundi:security"]).await;
        let nothing = desk.approve("ar-1", "ann", &approver, None, None).await;
        assert!(
            matches!(nothing, Err(AccessError::Forbidden(_))),
            "nothing left to give"
        );
        let still = desk.find("ar-1").await.unwrap();
        assert_eq!(
            still.standing(Utc::now()),
            Standing::Pending,
            "a refusal changes nothing"
        );
    }
}
