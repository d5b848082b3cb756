//! What a client holds now, for a firing of a schedule it created (there is no request
//! to read credentials from): static clients as the config lists them; a grant as the
//! grant store has it (revoked or expired: gone); JWT clients cannot be asked (their
//! scopes come with each token), so the scopes recorded when the schedule was created
//! stand.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use fundi_ops::grants::GrantStore;
use fundi_ops::schedules::{ScopeAuthority, ScopesNow};
use fundi_runtime::Grants;

use super::config::{AuthConfig, AuthMode};

/// How a caller that presented a grant is named as a schedule's client.
pub(crate) fn grant_client(grant_id: &str) -> String {
    format!("grant:{grant_id}")
}

/// The clients' scopes as `[auth]` configures them, and the grants.
#[derive(Clone)]
pub struct ConfiguredScopes {
    /// Static clients by name (`None`: JWT mode).
    clients: Option<BTreeMap<String, Vec<String>>>,
    grants: Option<Arc<dyn GrantStore>>,
}

impl std::fmt::Debug for ConfiguredScopes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfiguredScopes")
            .field("clients", &self.clients)
            .finish_non_exhaustive()
    }
}

impl ConfiguredScopes {
    /// The scopes `config` gives its clients.
    pub fn from_config(config: &AuthConfig) -> ConfiguredScopes {
        let clients = (config.mode == AuthMode::Static).then(|| {
            let clients = &config.static_tokens.clients;
            clients
                .iter()
                .map(|(name, client)| (name.clone(), client.scopes.clone()))
                .collect()
        });
        ConfiguredScopes {
            clients,
            grants: None,
        }
    }

    /// The same, answering for grants (`grant:{id}`) from `grants`.
    pub fn with_grants(mut self, grants: Arc<dyn GrantStore>) -> ConfiguredScopes {
        self.grants = Some(grants);
        self
    }
}

#[async_trait]
impl ScopeAuthority for ConfiguredScopes {
    async fn scopes_now(&self, client: &str) -> ScopesNow {
        if let (Some(id), Some(store)) = (client.strip_prefix("grant:"), &self.grants) {
            return match store.get(id).await {
                Ok(Some(grant)) if grant.refusal(chrono::Utc::now()).is_none() => {
                    ScopesNow::Held(Grants::scopes(grant.scopes))
                }
                Ok(_) => ScopesNow::Gone,
                Err(error) => {
                    // Refused this time rather than run with scopes no one can vouch for.
                    tracing::error!(%error, "reading a grant for a scheduled firing");
                    ScopesNow::Held(Grants::scopes::<[&str; 0], &str>([]))
                }
            };
        }
        match &self.clients {
            None => ScopesNow::Unknown,
            Some(clients) => match clients.get(client) {
                Some(scopes) => ScopesNow::Held(Grants::scopes(scopes.iter().cloned())),
                None => ScopesNow::Gone,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use fundi_ops::grants::{Grant, MemoryGrantStore};

    use super::*;
    use crate::auth::StaticClient;

    #[tokio::test]
    async fn static_clients_and_grants_are_read_now_and_jwt_clients_are_unknown() {
        let mut config = AuthConfig::default();
        config.static_tokens.clients.insert(
            "ci".into(),
            StaticClient {
                token: "t".repeat(16),
                scopes: vec!["fundi:audit".into()],
            },
        );
        let grants = Arc::new(MemoryGrantStore::new());
        let mut grant = Grant {
            id: "gr-1".into(),
            client: "bot".into(),
            scopes: vec!["fundi:security".into()],
            created_by: "ops".into(),
            created_at: Utc::now(),
            expires_at: None,
            revoked_at: None,
            acts_as: None,
            token_digest: "d".into(),
        };
        grants.put(&grant).await.unwrap();
        let scopes = ConfiguredScopes::from_config(&config).with_grants(grants.clone());
        assert_eq!(
            scopes.scopes_now("ci").await,
            ScopesNow::Held(Grants::scopes(["fundi:audit"]))
        );
        assert_eq!(scopes.scopes_now("gone").await, ScopesNow::Gone);
        assert_eq!(
            scopes.scopes_now(&grant_client("gr-1")).await,
            ScopesNow::Held(Grants::scopes(["fundi:security"]))
        );
        grant.revoked_at = Some(Utc::now());
        grants.put(&grant).await.unwrap();
        assert_eq!(scopes.scopes_now("grant:gr-1").await, ScopesNow::Gone);
        config.mode = AuthMode::Jwt;
        let scopes = ConfiguredScopes::from_config(&config);
        assert_eq!(scopes.scopes_now("ci").await, ScopesNow::Unknown);
    }
}
