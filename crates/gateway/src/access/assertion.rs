//! Identity assertions: the proof of the person behind an agent that asks for access.
//! A JWT signed by a listed identity provider (its keys from its JWKS, or from its
//! OpenID discovery document), for this server (`aud` its public URL), current (`exp`,
//! `iat`), naming a subject (`sub`) and carrying an id (`jti`) that the store accepts
//! once. Both the identity-assertion grant's `typ` (`oauth-id-jag+jwt`) and an OpenID
//! Connect ID token (`JWT`, or no `typ`) are accepted.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, Validation, decode, decode_header};
use serde::Deserialize;
use tokio::sync::OnceCell;

use super::config::{FriendsConfig, IssuerConfig};
use super::error::AccessError;
use crate::auth::jwks::{Jwks, KeyError};

/// The `typ` of an identity assertion authorization grant.
pub(crate) const ID_JAG_TYPE: &str = "oauth-id-jag+jwt";
/// How far clocks may disagree.
const LEEWAY_SECS: u64 = 60;
/// The algorithms accepted (never a symmetric one: the provider's key is public).
const ALGORITHMS: [Algorithm; 7] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// What a valid assertion says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Vouched {
    /// The configured name of the provider.
    pub(crate) provider: String,
    pub(crate) issuer: String,
    pub(crate) subject: String,
    pub(crate) jti: String,
}

/// The listed providers, each with its keys (fetched on first use).
pub(crate) struct AssertionVerifier {
    audiences: Vec<String>,
    providers: BTreeMap<String, Provider>,
    client: reqwest::Client,
}

struct Provider {
    name: String,
    config: IssuerConfig,
    jwks: OnceCell<Arc<Jwks>>,
}

#[derive(Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    jti: Option<String>,
    #[serde(default)]
    iat: Option<i64>,
}

impl AssertionVerifier {
    /// The providers of `config`, accepting assertions for `public_url`.
    pub(crate) fn new(config: &FriendsConfig, public_url: &str) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| format!("friends: no HTTP client: {e}"))?;
        let bare = public_url.trim_end_matches('/').to_owned();
        let providers = config
            .issuers
            .iter()
            .map(|(name, issuer)| {
                let provider = Provider {
                    name: name.clone(),
                    config: issuer.clone(),
                    jwks: OnceCell::new(),
                };
                (issuer.issuer.clone(), provider)
            })
            .collect();
        Ok(AssertionVerifier {
            audiences: vec![format!("{bare}/"), bare],
            providers,
            client,
        })
    }

    /// Checks `assertion`; the refusal says why, in words fit for the requester.
    pub(crate) async fn verify(&self, assertion: &str) -> Result<Vouched, AccessError> {
        let refused = |why: &str| AccessError::Assertion(why.to_owned());
        let header =
            decode_header(assertion).map_err(|_| refused("it is not a well-formed JWT"))?;
        match header
            .typ
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            None | Some("jwt") | Some(ID_JAG_TYPE) => {}
            Some(other) => {
                return Err(AccessError::Assertion(format!(
                    "its typ is {other:?}; an identity assertion is {ID_JAG_TYPE:?} (or an \
                     OpenID Connect ID token)"
                )));
            }
        }
        if !ALGORITHMS.contains(&header.alg) {
            return Err(AccessError::Assertion(format!(
                "algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let issuer =
            unverified_issuer(assertion).ok_or_else(|| refused("it names no issuer (iss)"))?;
        let provider = self.providers.get(&issuer).ok_or_else(|| {
            AccessError::Assertion(format!(
                "issuer {issuer:?} is not one this server accepts (friends.issuers)"
            ))
        })?;
        let jwks = provider.jwks(&self.client).await?;
        let key = jwks.key(header.kid.as_deref()).await.map_err(|e| match e {
            KeyError::Unknown(why) => AccessError::Assertion(why),
            KeyError::Unavailable(why) => AccessError::Unavailable(format!(
                "the keys of identity provider {} cannot be read: {why}",
                provider.name
            )),
        })?;
        if key.alg.is_some_and(|alg| alg != header.alg) {
            return Err(refused("its algorithm does not match the key's"));
        }
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        validation.set_issuer(&[&issuer]);
        validation.set_audience(&self.audiences);
        validation.set_required_spec_claims(&["exp", "iat", "sub", "iss", "aud"]);
        let claims = decode::<Claims>(assertion, &key.key, &validation)
            .map_err(|e| AccessError::Assertion(describe(e.kind(), &self.audiences[1])))?
            .claims;
        let now = chrono::Utc::now().timestamp();
        if claims.iat.is_some_and(|iat| iat > now + LEEWAY_SECS as i64) {
            return Err(refused("it was issued in the future (iat)"));
        }
        let jti = claims
            .jti
            .filter(|jti| !jti.trim().is_empty() && jti.len() <= 256)
            .ok_or_else(|| refused("it carries no id (jti), so it could be replayed"))?;
        if claims.sub.trim().is_empty() || claims.sub.len() > 256 {
            return Err(refused("its subject (sub) is empty or too long"));
        }
        Ok(Vouched {
            provider: provider.name.clone(),
            issuer,
            subject: claims.sub,
            jti,
        })
    }
}

impl Provider {
    /// The provider's key set: `jwks-url`, or the `jwks_uri` of its discovery document
    /// (read once; a failed read is tried again by the next request).
    async fn jwks(&self, client: &reqwest::Client) -> Result<Arc<Jwks>, AccessError> {
        self.jwks
            .get_or_try_init(|| async {
                let url = match &self.config.jwks_url {
                    Some(url) => url.clone(),
                    None => self.discover(client).await?,
                };
                Ok(Arc::new(Jwks::new(
                    url,
                    client.clone(),
                    Duration::from_secs(300),
                    Duration::from_secs(10),
                )))
            })
            .await
            .cloned()
    }

    async fn discover(&self, client: &reqwest::Client) -> Result<String, AccessError> {
        let url = self.config.discovery_url.clone().unwrap_or_else(|| {
            format!(
                "{}/.well-known/openid-configuration",
                self.config.issuer.trim_end_matches('/')
            )
        });
        let unavailable = |why: String| {
            AccessError::Unavailable(format!(
                "the discovery document of identity provider {} ({url}): {why}",
                self.name
            ))
        };
        let response = client
            .get(&url)
            .send()
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        if !response.status().is_success() {
            return Err(unavailable(format!("HTTP {}", response.status())));
        }
        let document: serde_json::Value = response
            .json()
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        if document["issuer"].as_str() != Some(self.config.issuer.as_str()) {
            return Err(unavailable(format!(
                "it names issuer {}, not {}",
                document["issuer"], self.config.issuer
            )));
        }
        document["jwks_uri"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| unavailable("it has no jwks_uri".into()))
    }
}

/// The `iss` of a JWT's payload, read before its signature is checked (only to pick
/// the provider whose keys check it).
fn unverified_issuer(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims["iss"].as_str().map(str::to_owned)
}

fn describe(kind: &jsonwebtoken::errors::ErrorKind, audience: &str) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match kind {
        ErrorKind::ExpiredSignature => "it has expired (exp)".into(),
        ErrorKind::ImmatureSignature => "it is not valid yet (nbf)".into(),
        ErrorKind::InvalidIssuer => "its issuer (iss) does not match".into(),
        ErrorKind::InvalidAudience => {
            format!("its audience (aud) is not this server ({audience})")
        }
        ErrorKind::InvalidSignature => "its signature does not verify".into(),
        ErrorKind::InvalidAlgorithm => "its algorithm does not fit the key".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("it has no {claim} claim"),
        _ => "it could not be decoded".into(),
    }
}
