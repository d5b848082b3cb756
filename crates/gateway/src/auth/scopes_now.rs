//! What a client holds now, for a firing of a schedule it created (there is no request
//! to read credentials from): static clients as the config lists them; JWT clients
//! cannot be asked (their scopes come with each token), so the scopes recorded when the
//! schedule was created stand.

use std::collections::BTreeMap;

use fundi_runtime::Grants;
use fundi_runtime::schedules::{ScopeAuthority, ScopesNow};

use super::config::{AuthConfig, AuthMode};

/// The clients' scopes as `[auth]` configures them.
#[derive(Debug, Clone)]
pub struct ConfiguredScopes {
    /// Static clients by name (`None`: JWT mode).
    clients: Option<BTreeMap<String, Vec<String>>>,
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
        ConfiguredScopes { clients }
    }
}

impl ScopeAuthority for ConfiguredScopes {
    fn scopes_now(&self, client: &str) -> ScopesNow {
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
    use super::*;
    use crate::auth::StaticClient;

    #[test]
    fn static_clients_are_read_from_the_config_and_jwt_clients_are_unknown() {
        let mut config = AuthConfig::default();
        config.static_tokens.clients.insert(
            "ci".into(),
            StaticClient {
                token: "t".repeat(16),
                scopes: vec!["fundi:audit".into()],
            },
        );
        let scopes = ConfiguredScopes::from_config(&config);
        assert_eq!(
            scopes.scopes_now("ci"),
            ScopesNow::Held(Grants::scopes(["fundi:audit"]))
        );
        assert_eq!(scopes.scopes_now("gone"), ScopesNow::Gone);
        config.mode = AuthMode::Jwt;
        let scopes = ConfiguredScopes::from_config(&config);
        assert_eq!(scopes.scopes_now("ci"), ScopesNow::Unknown);
    }
}
