//! Signing in through the operator's OpenID Connect identity provider
//! (`gateway.console-oidc`): `GET /console/sign-in/provider` sends the browser to the
//! provider with a PKCE challenge, a state and a nonce; the provider sends it back to
//! `GET /console/sign-in/callback` with a code, which is exchanged (with the PKCE
//! verifier) for an ID token, whose signature, issuer, audience, expiry and nonce are
//! checked. The session acts as the token's subject, with the fundi scopes the token
//! carries in `scope` or `scp` (none: the person sees their own tasks only).

use std::time::{Duration, Instant};

use base64::Engine as _;
use fundi_ops::sessions::PendingSignIn;
use fundi_runtime::Grants;
use openidconnect::core::{CoreClient, CoreProviderMetadata, CoreResponseType};
use openidconnect::{
    AuthenticationFlow, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet,
    EndpointNotSet, EndpointSet, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, Scope, TokenResponse,
};
use serde_json::Value;

use crate::sessions::{Person, Sessions};
use fundi_gateway::ConsoleOidc;
use fundi_runtime::error_chain;

/// How long the provider's discovery document (with its keys) is used before it is
/// read again.
const DISCOVERY_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// The client name a provider's sessions act through (for the record).
const CLIENT: &str = "console";

/// The provider's client as discovery makes it: an authorization endpoint, perhaps a
/// token and a user-info endpoint.
type Client = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// The identity provider. Sign-ins under way are kept with the sessions (so that the
/// browser may come back to any node of a cluster).
pub(crate) struct Provider {
    settings: ConsoleOidc,
    redirect: RedirectUrl,
    http: openidconnect::reqwest::Client,
    discovered: tokio::sync::Mutex<Option<(CoreProviderMetadata, Instant)>>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("issuer", &self.settings.issuer)
            .finish_non_exhaustive()
    }
}

/// Why a sign-in through the provider failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProviderError {
    #[error("the identity provider's discovery document could not be read: {0}")]
    Discovery(String),
    #[error("the identity provider did not exchange the code: {0}")]
    Exchange(String),
    #[error("the identity provider sent no ID token")]
    NoIdToken,
    #[error("the ID token was refused: {0}")]
    IdToken(String),
    #[error("{0}")]
    Settings(String),
    #[error("the sign-in could not be kept or read: {0}")]
    Store(String),
}

impl Provider {
    /// The provider of `settings`, which sends people back to `public_url`'s callback.
    pub(crate) fn new(settings: ConsoleOidc, public_url: &str) -> Result<Provider, String> {
        let callback = format!(
            "{}/console/sign-in/callback",
            public_url.trim_end_matches('/')
        );
        let redirect = RedirectUrl::new(callback)
            .map_err(|e| format!("gateway.public-url makes no callback address: {e}"))?;
        let http = openidconnect::reqwest::Client::builder()
            // Following redirects would let the provider's answers point fundi anywhere.
            .redirect(openidconnect::reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("no HTTP client for the identity provider: {e}"))?;
        Ok(Provider {
            settings,
            redirect,
            http,
            discovered: tokio::sync::Mutex::new(None),
        })
    }

    /// The provider's metadata and keys, read at most every [`DISCOVERY_LIFETIME`].
    async fn metadata(&self) -> Result<CoreProviderMetadata, ProviderError> {
        let mut discovered = self.discovered.lock().await;
        if let Some((metadata, at)) = discovered.as_ref()
            && at.elapsed() < DISCOVERY_LIFETIME
        {
            return Ok(metadata.clone());
        }
        let issuer = IssuerUrl::new(self.settings.issuer.clone())
            .map_err(|e| ProviderError::Settings(format!("gateway.console-oidc.issuer: {e}")))?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &self.http)
            .await
            .map_err(|e| ProviderError::Discovery(error_chain(&e)))?;
        *discovered = Some((metadata.clone(), Instant::now()));
        Ok(metadata)
    }

    /// This console as the provider's client.
    fn client(&self, metadata: CoreProviderMetadata) -> Client {
        CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.settings.client_id.clone()),
            self.settings.client_secret.clone().map(ClientSecret::new),
        )
        .set_redirect_uri(self.redirect.clone())
    }

    /// Where to send the browser to sign in.
    pub(super) async fn start(&self, sessions: &Sessions) -> Result<String, ProviderError> {
        let metadata = self.metadata().await?;
        let client = self.client(metadata);
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client
            .authorize_url(
                AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .set_pkce_challenge(challenge);
        for scope in &self.settings.request_scopes {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.url();
        let pending = PendingSignIn {
            verifier: verifier.secret().clone(),
            nonce: nonce.secret().clone(),
        };
        sessions
            .begin_sign_in(state.secret(), &pending)
            .await
            .map_err(|e| ProviderError::Store(e.to_string()))?;
        Ok(url.to_string())
    }

    /// The person the provider signed in, from the callback's code and state; `None`
    /// when the state is not one this server sent (or it is spent, or too old).
    pub(super) async fn finish(
        &self,
        sessions: &Sessions,
        code: String,
        state: &str,
    ) -> Result<Option<Person>, ProviderError> {
        let found = sessions
            .finish_sign_in(state)
            .await
            .map_err(|e| ProviderError::Store(e.to_string()))?;
        let Some(under_way) = found else {
            return Ok(None);
        };
        let metadata = self.metadata().await?;
        let client = self.client(metadata);
        let tokens = client
            .exchange_code(AuthorizationCode::new(code))
            .map_err(|e| ProviderError::Exchange(error_chain(&e)))?
            .set_pkce_verifier(PkceCodeVerifier::new(under_way.verifier))
            .request_async(&self.http)
            .await
            .map_err(|e| ProviderError::Exchange(error_chain(&e)))?;
        let id_token = tokens.id_token().ok_or(ProviderError::NoIdToken)?;
        let claims = id_token
            .claims(&client.id_token_verifier(), &Nonce::new(under_way.nonce))
            .map_err(|e| ProviderError::IdToken(error_chain(&e)))?;
        Ok(Some(Person {
            user: claims.subject().as_str().to_owned(),
            client: CLIENT.to_owned(),
            grants: Grants::scopes(scopes_in(&id_token.to_string())),
        }))
    }
}

/// The fundi scopes a verified JWT carries: `scope` (space-separated) and `scp` (a list
/// or a string), as for users' API tokens.
fn scopes_in(jwt: &str) -> Vec<String> {
    let payload = jwt.split('.').nth(1).unwrap_or_default();
    let claims: Value = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let mut scopes: Vec<String> = Vec::new();
    if let Some(scope) = claims.get("scope").and_then(Value::as_str) {
        scopes.extend(scope.split_whitespace().map(str::to_owned));
    }
    match claims.get("scp") {
        Some(Value::String(s)) => scopes.extend(s.split_whitespace().map(str::to_owned)),
        Some(Value::Array(list)) => {
            scopes.extend(list.iter().filter_map(Value::as_str).map(str::to_owned))
        }
        _ => {}
    }
    scopes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_come_from_scope_and_scp() {
        let payload = |claims: Value| {
            let body = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string());
            format!("e30.{body}.sig")
        };
        let both = payload(
            serde_json::json!({"scope": "fundi:approve fundi:audit", "scp": ["fundi:admin"]}),
        );
        assert_eq!(
            scopes_in(&both),
            ["fundi:approve", "fundi:audit", "fundi:admin"]
        );
        assert!(scopes_in(&payload(serde_json::json!({"sub": "x"}))).is_empty());
        assert!(scopes_in("not a jwt").is_empty());
    }
}
