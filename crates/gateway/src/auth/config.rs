//! `[auth]` settings: how callers prove who they are.

use std::collections::BTreeMap;
use std::path::PathBuf;

use jsonwebtoken::Algorithm;
use serde::{Deserialize, Serialize};

/// The header that carries the end user's token by default.
pub const DEFAULT_USER_HEADER: &str = "X-Fundi-User-Token";

/// How `/a2a` authenticates. Two credentials are required on every call: the calling
/// application's bearer token (`Authorization: Bearer …`) and the end user's token in
/// `user-header`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct AuthConfig {
    /// `static` (tokens listed here, for local use) or `jwt` (signed tokens checked
    /// against a JWKS or a public key). Default: static.
    pub mode: AuthMode,
    /// The header carrying the end user's token. Default: `X-Fundi-User-Token`.
    pub user_header: String,
    /// Tokens for `mode = "static"`.
    #[serde(rename = "static")]
    pub static_tokens: StaticTokens,
    /// How machine (client application) JWTs are checked, for `mode = "jwt"`.
    pub machine: JwtConfig,
    /// How end-user JWTs are checked, for `mode = "jwt"`.
    pub user: JwtConfig,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            mode: AuthMode::Static,
            user_header: DEFAULT_USER_HEADER.into(),
            static_tokens: StaticTokens::default(),
            machine: JwtConfig::default(),
            user: JwtConfig::default(),
        }
    }
}

/// Which kind of credentials `/a2a` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthMode {
    /// Opaque tokens listed in the config (local use; loopback only).
    Static,
    /// JWTs: signature, issuer, audience, expiry.
    Jwt,
}

/// Static tokens: each client application has a token and scopes; each user a token.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct StaticTokens {
    /// Client applications by name.
    pub clients: BTreeMap<String, StaticClient>,
    /// End users: subject → token. The subject owns the tasks the user creates.
    pub users: BTreeMap<String, String>,
}

/// One client application with a static token.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct StaticClient {
    /// Its bearer token.
    pub token: String,
    /// Scopes it holds (e.g. `fundi:audit`; `fundi:admin` grants every skill).
    pub scopes: Vec<String>,
}

/// How one kind of JWT is checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct JwtConfig {
    /// Where the signing keys are published (a JWKS document). Either this or
    /// `public-key-file`.
    pub jwks_url: Option<String>,
    /// A PEM public key (RSA, EC P-256/P-384 or Ed25519) instead of a JWKS.
    pub public_key_file: Option<PathBuf>,
    /// The required `iss` claim.
    pub issuer: Option<String>,
    /// The required `aud` claim (one of the token's audiences).
    pub audience: Option<String>,
    /// Accepted signature algorithms. Default: RS256, ES256, EdDSA.
    pub algorithms: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`, in seconds. Default: 30.
    pub leeway_secs: u64,
    /// The JWKS is fetched again after this long, in seconds. Default: 3600. (Machine
    /// and user settings naming the same JWKS URL share one cache, with the machine's
    /// timings.)
    pub jwks_max_age_secs: u64,
    /// A token with an unknown `kid` triggers a refetch at most this often, in ms (so
    /// forged key ids cannot hammer the key server). Default: 30000.
    pub jwks_min_refresh_ms: u64,
}

impl Default for JwtConfig {
    fn default() -> Self {
        JwtConfig {
            jwks_url: None,
            public_key_file: None,
            issuer: None,
            audience: None,
            algorithms: vec!["RS256".into(), "ES256".into(), "EdDSA".into()],
            leeway_secs: 30,
            jwks_max_age_secs: 3600,
            jwks_min_refresh_ms: 30_000,
        }
    }
}

impl AuthConfig {
    /// Whether the credentials are real (signed, expiring) rather than static tokens:
    /// the condition for listening beyond loopback.
    pub fn is_production_grade(&self) -> bool {
        self.mode == AuthMode::Jwt
    }

    /// Whether static mode has no tokens at all (the binary then makes a local pair).
    pub fn has_no_static_tokens(&self) -> bool {
        self.static_tokens.clients.is_empty() && self.static_tokens.users.is_empty()
    }

    /// Checks values that serde cannot; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.user_header.trim().is_empty()
            || axum::http::HeaderName::from_bytes(self.user_header.as_bytes()).is_err()
        {
            return Err(format!(
                "auth.user-header must be a valid HTTP header name, got {:?}",
                self.user_header
            ));
        }
        if self.user_header.eq_ignore_ascii_case("authorization") {
            return Err("auth.user-header must differ from Authorization".into());
        }
        match self.mode {
            AuthMode::Static => {
                for (name, client) in &self.static_tokens.clients {
                    if client.token.len() < 16 {
                        return Err(format!(
                            "auth.static.clients.{name}.token must be at least 16 characters"
                        ));
                    }
                }
                for (subject, token) in &self.static_tokens.users {
                    if token.len() < 16 {
                        return Err(format!(
                            "auth.static.users.{subject} must be a token of at least 16 characters"
                        ));
                    }
                }
                Ok(())
            }
            AuthMode::Jwt => {
                self.machine.validate("auth.machine")?;
                self.user.validate("auth.user")
            }
        }
    }
}

impl JwtConfig {
    fn validate(&self, section: &str) -> Result<(), String> {
        match (&self.jwks_url, &self.public_key_file) {
            (None, None) => {
                return Err(format!(
                    "{section}: set jwks-url or public-key-file (auth.mode is \"jwt\")"
                ));
            }
            (Some(_), Some(_)) => {
                return Err(format!(
                    "{section}: set jwks-url or public-key-file, not both"
                ));
            }
            (Some(url), None) if !(url.starts_with("https://") || url.starts_with("http://")) => {
                return Err(format!(
                    "{section}.jwks-url must be an http(s) URL, got {url:?}"
                ));
            }
            _ => {}
        }
        if self.issuer.as_deref().is_none_or(str::is_empty) {
            return Err(format!(
                "{section}.issuer is required (auth.mode is \"jwt\")"
            ));
        }
        if self.audience.as_deref().is_none_or(str::is_empty) {
            return Err(format!(
                "{section}.audience is required (auth.mode is \"jwt\")"
            ));
        }
        if self.algorithms.is_empty() {
            return Err(format!("{section}.algorithms must not be empty"));
        }
        for name in &self.algorithms {
            parse_algorithm(name).map_err(|e| format!("{section}.algorithms: {e}"))?;
        }
        Ok(())
    }
}

/// An algorithm name as in a JWT header; symmetric ones are refused (a public key must
/// never double as an HMAC secret).
pub(crate) fn parse_algorithm(name: &str) -> Result<Algorithm, String> {
    let alg: Algorithm = name
        .parse()
        .map_err(|_| format!("unknown algorithm {name:?}"))?;
    if matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
        return Err(format!(
            "{name} is symmetric; only public-key algorithms are accepted"
        ));
    }
    Ok(alg)
}
