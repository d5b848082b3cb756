//! JWT checks: signature (a configured key or a JWKS), algorithm, issuer, audience,
//! expiry and not-before with a leeway, and a subject.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde::Deserialize;

use super::config::{JwtConfig, parse_algorithm};
use super::jwks::{Jwks, KeyError};
use crate::setup::SetupError;

/// What a valid token says about its bearer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Verified {
    pub(crate) subject: String,
    /// From `scope` (space-separated) and `scp` (a list or a string); `None` when the
    /// token has neither.
    pub(crate) scopes: Option<Vec<String>>,
}

/// Why a token was refused (`Unavailable`: not the token's fault).
#[derive(Debug)]
pub(crate) enum Refusal {
    Invalid(String),
    Unavailable(String),
}

pub(crate) struct JwtVerifier {
    issuer: String,
    audience: String,
    algorithms: Vec<Algorithm>,
    leeway: u64,
    keys: Keys,
}

enum Keys {
    Fixed(DecodingKey),
    Jwks(Arc<Jwks>),
}

/// JWKS caches by URL: machine and user tokens from one identity provider share one.
#[derive(Default)]
pub(crate) struct JwksPool {
    client: Option<reqwest::Client>,
    caches: HashMap<String, Arc<Jwks>>,
}

impl JwksPool {
    fn get(&mut self, config: &JwtConfig, url: &str) -> Result<Arc<Jwks>, String> {
        if let Some(jwks) = self.caches.get(url) {
            return Ok(jwks.clone());
        }
        let client = match &self.client {
            Some(client) => client.clone(),
            None => {
                let client = reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| format!("auth: HTTP client: {e}"))?;
                self.client = Some(client.clone());
                client
            }
        };
        let jwks = Arc::new(Jwks::new(
            url.to_owned(),
            client,
            Duration::from_secs(config.jwks_max_age_secs),
            Duration::from_millis(config.jwks_min_refresh_ms),
        ));
        self.caches.insert(url.to_owned(), jwks.clone());
        Ok(jwks)
    }
}

impl JwtVerifier {
    /// A verifier for `config` (already validated); reads the key file if one is set.
    pub(crate) fn new(
        config: &JwtConfig,
        section: &str,
        pool: &mut JwksPool,
    ) -> Result<JwtVerifier, SetupError> {
        let keys = match (&config.jwks_url, &config.public_key_file) {
            (Some(url), _) => Keys::Jwks(pool.get(config, url)?),
            (None, Some(path)) => {
                let pem = std::fs::read(path).map_err(|source| SetupError::Unreadable {
                    setting: format!("{section}.public-key-file"),
                    path: path.clone(),
                    source,
                })?;
                Keys::Fixed(pem_key(&pem).ok_or_else(|| {
                    format!(
                        "{section}.public-key-file {}: not a PEM RSA, EC or Ed25519 public key",
                        path.display()
                    )
                })?)
            }
            (None, None) => {
                return Err(SetupError::Invalid(format!(
                    "{section}: no jwks-url or public-key-file"
                )));
            }
        };
        let algorithms = config
            .algorithms
            .iter()
            .map(|name| parse_algorithm(name))
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{section}.algorithms: {e}"))?;
        Ok(JwtVerifier {
            issuer: config.issuer.clone().unwrap_or_default(),
            audience: config.audience.clone().unwrap_or_default(),
            algorithms,
            leeway: config.leeway_secs,
            keys,
        })
    }

    /// Checks `token`; the refusal says why in words fit for the client.
    pub(crate) async fn verify(&self, token: &str) -> Result<Verified, Refusal> {
        let header =
            decode_header(token).map_err(|_| Refusal::Invalid("not a well-formed JWT".into()))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(Refusal::Invalid(format!(
                "algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let key = match &self.keys {
            Keys::Fixed(key) => key.clone(),
            Keys::Jwks(jwks) => {
                let found = jwks.key(header.kid.as_deref()).await.map_err(|e| match e {
                    KeyError::Unknown(why) => Refusal::Invalid(why),
                    KeyError::Unavailable(why) => Refusal::Unavailable(why),
                })?;
                if found.alg.is_some_and(|alg| alg != header.alg) {
                    return Err(Refusal::Invalid(format!(
                        "algorithm {:?} does not match the key's",
                        header.alg
                    )));
                }
                found.key
            }
        };
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "sub", "iss", "aud"]);
        let data = decode::<Claims>(token, &key, &validation)
            .map_err(|e| Refusal::Invalid(describe(e.kind())))?;
        let claims = data.claims;
        if claims.sub.trim().is_empty() {
            return Err(Refusal::Invalid("the sub claim is empty".into()));
        }
        let scopes = claims.scopes();
        Ok(Verified {
            subject: claims.sub,
            scopes,
        })
    }
}

#[derive(Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<ScopeList>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScopeList {
    One(String),
    Many(Vec<String>),
}

impl Claims {
    fn scopes(&self) -> Option<Vec<String>> {
        if self.scope.is_none() && self.scp.is_none() {
            return None;
        }
        let mut scopes: Vec<String> = Vec::new();
        if let Some(scope) = &self.scope {
            scopes.extend(scope.split_whitespace().map(str::to_owned));
        }
        match &self.scp {
            Some(ScopeList::One(s)) => scopes.extend(s.split_whitespace().map(str::to_owned)),
            Some(ScopeList::Many(list)) => scopes.extend(list.iter().cloned()),
            None => {}
        }
        Some(scopes)
    }
}

fn describe(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired".into(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".into(),
        ErrorKind::InvalidIssuer => "the token's issuer (iss) is not the accepted one".into(),
        ErrorKind::InvalidAudience => "the token's audience (aud) is not this agent".into(),
        ErrorKind::InvalidSignature => "the signature does not verify".into(),
        ErrorKind::InvalidAlgorithm => "the algorithm does not fit the key".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the {claim} claim is missing"),
        _ => "the token could not be decoded".into(),
    }
}

fn pem_key(pem: &[u8]) -> Option<DecodingKey> {
    DecodingKey::from_rsa_pem(pem)
        .or_else(|_| DecodingKey::from_ec_pem(pem))
        .or_else(|_| DecodingKey::from_ed_pem(pem))
        .ok()
}
