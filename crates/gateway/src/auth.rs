//! The auth gate of `/a2a`: two credentials on every call, the client application's
//! bearer token and the end user's token. The user's subject owns the tasks it creates;
//! the client's scopes (narrowed by the user token's, when it carries any) decide which
//! skills may run.

mod config;
mod error;
pub(crate) mod jwks;
mod jwt;
mod scopes_now;
mod static_tokens;

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderName, header};
use fundi_ops::grants::{GRANT_TOKEN_PREFIX, GrantStore, token_digest};
use fundi_runtime::Grants;

pub use config::{
    AuthConfig, AuthMode, DEFAULT_USER_HEADER, JwtConfig, StaticClient, StaticTokens,
};
pub use error::AuthError;
pub use scopes_now::ConfiguredScopes;
pub(crate) use scopes_now::grant_client;

use jwt::{JwksPool, JwtVerifier, Refusal};

use crate::setup::SetupError;
use static_tokens::StaticTable;

/// Who is calling, once both credentials check out.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    /// The end user's subject: owner of the tasks this caller creates.
    pub user: fundi_runtime::UserId,
    /// The client application (static client name or JWT subject).
    pub client: String,
    /// The scopes that decide which skills may run.
    pub grants: Grants,
    /// The grant whose token the client presented (`None`: a static token or a JWT).
    pub grant: Option<String>,
}

/// Checks the credentials of a request.
pub struct Authenticator {
    /// Grants vended by operators, checked beside the configured credentials.
    grants: Option<Arc<dyn GrantStore>>,
    user_header: HeaderName,
    /// The header's name as configured (HeaderName is lowercase), for messages and the card.
    user_header_spelling: String,
    kind: Kind,
}

enum Kind {
    Static(StaticTable),
    Jwt(Box<JwtPair>),
}

struct JwtPair {
    machine: JwtVerifier,
    user: JwtVerifier,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mode = match self.kind {
            Kind::Static(_) => "static",
            Kind::Jwt(_) => "jwt",
        };
        f.debug_struct("Authenticator")
            .field("mode", &mode)
            .field("user_header", &self.user_header)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// An authenticator for `config`; the error names the offending field.
    pub fn from_config(config: &AuthConfig) -> Result<Authenticator, SetupError> {
        config.validate()?;
        let user_header = HeaderName::from_bytes(config.user_header.as_bytes())
            .map_err(|e| SetupError::Invalid(format!("auth.user-header: {e}")))?;
        let kind = match config.mode {
            AuthMode::Static => Kind::Static(StaticTable::new(&config.static_tokens)),
            AuthMode::Jwt => {
                let mut pool = JwksPool::default();
                Kind::Jwt(Box::new(JwtPair {
                    machine: JwtVerifier::new(&config.machine, "auth.machine", &mut pool)?,
                    user: JwtVerifier::new(&config.user, "auth.user", &mut pool)?,
                }))
            }
        };
        Ok(Authenticator {
            grants: None,
            user_header,
            user_header_spelling: config.user_header.clone(),
            kind,
        })
    }

    /// The same authenticator, admitting also clients presenting a grant token of
    /// `grants` (each request looks its grant up, so a revocation holds at once).
    pub fn with_grants(mut self, grants: Arc<dyn GrantStore>) -> Authenticator {
        self.grants = Some(grants);
        self
    }

    /// The client a grant token stands for: `None` if `bearer` is not a grant token (or
    /// no grants are kept); an error if it is one that admits nothing.
    async fn granted(&self, bearer: &str, credential: &str) -> Result<Option<Granted>, AuthError> {
        let Some(store) = &self.grants else {
            return Ok(None);
        };
        if !bearer.starts_with(GRANT_TOKEN_PREFIX) {
            return Ok(None);
        }
        let invalid = |reason: String| AuthError::Invalid {
            credential: credential.to_owned(),
            reason,
        };
        let grant = store
            .by_digest(&token_digest(bearer))
            .await
            .map_err(|e| AuthError::GrantsUnavailable(e.to_string()))?
            .ok_or_else(|| {
                invalid(
                    "not a known grant token (a grant's token is shown once, when it is vended \
                     or collected; `fundi grants list` shows the grants that exist)"
                        .into(),
                )
            })?;
        if let Some(refusal) = grant.refusal(chrono::Utc::now()) {
            return Err(invalid(refusal));
        }
        Ok(Some(Granted {
            client: grant.client,
            scopes: grant.scopes,
            grant: Some(grant.id),
            acts_as: grant.acts_as,
        }))
    }

    /// The header that carries the end user's token, spelled as configured.
    pub fn user_header(&self) -> &str {
        &self.user_header_spelling
    }

    /// Checks both credentials of a request (a grant that acts for a person stands for
    /// both: its holder sends no user token).
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, AuthError> {
        let machine_name = "the bearer token (Authorization: Bearer)".to_owned();
        let user_name = format!("the user token ({})", self.user_header_spelling);
        let bearer =
            bearer_token(headers).ok_or_else(|| AuthError::Missing(machine_name.clone()))?;
        let granted = self.granted(bearer, &machine_name).await?;
        if let Some(Granted {
            client,
            scopes,
            grant,
            acts_as: Some(user),
        }) = granted
        {
            return Ok(Caller {
                user: user.into(),
                client,
                grants: Grants::scopes(scopes),
                grant,
            });
        }
        let user_token = headers
            .get(&self.user_header)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| AuthError::Missing(user_name.clone()))?;
        match &self.kind {
            Kind::Static(table) => {
                let granted = match granted {
                    Some(granted) => granted,
                    None => {
                        let (client, scopes) = table.client(bearer).ok_or(AuthError::Invalid {
                            credential: machine_name,
                            reason: UNKNOWN_STATIC.into(),
                        })?;
                        Granted {
                            client,
                            scopes,
                            grant: None,
                            acts_as: None,
                        }
                    }
                };
                let user = table.user(user_token).ok_or(AuthError::Invalid {
                    credential: user_name,
                    reason: UNKNOWN_STATIC.into(),
                })?;
                Ok(Caller {
                    user: user.into(),
                    client: granted.client,
                    grants: Grants::scopes(granted.scopes),
                    grant: granted.grant,
                })
            }
            Kind::Jwt(pair) => {
                let JwtPair { machine, user } = pair.as_ref();
                let granted = match granted {
                    Some(granted) => granted,
                    None => {
                        let client = machine
                            .verify(bearer)
                            .await
                            .map_err(|r| refusal(machine_name, r))?;
                        Granted {
                            client: client.subject,
                            scopes: client.scopes.unwrap_or_default(),
                            grant: None,
                            acts_as: None,
                        }
                    }
                };
                let person = user
                    .verify(user_token)
                    .await
                    .map_err(|r| refusal(user_name, r))?;
                let mut scopes = granted.scopes;
                // A user token that carries scopes narrows what the client may do for it.
                if let Some(user_scopes) = &person.scopes {
                    scopes.retain(|s| user_scopes.contains(s));
                }
                Ok(Caller {
                    user: person.subject.into(),
                    client: granted.client,
                    grants: Grants::scopes(scopes),
                    grant: granted.grant,
                })
            }
        }
    }
}

/// Why a static token is refused, and where the right one is.
const UNKNOWN_STATIC: &str = "not a known token: static tokens are the server's \
    auth.static settings (clients and users, also FUNDI__AUTH__STATIC__...), or the pair \
    `fundi serve` wrote at its first start to <data dir>/credentials.json, which the CLI \
    reads (FUNDI_CREDENTIALS names another file)";

/// The client a bearer token stands for, and what it holds.
struct Granted {
    client: String,
    scopes: Vec<String>,
    grant: Option<String>,
    /// The person the grant acts for, when it stands for one.
    acts_as: Option<String>,
}

fn refusal(credential: String, refusal: Refusal) -> AuthError {
    match refusal {
        Refusal::Invalid(reason) => AuthError::Invalid { credential, reason },
        Refusal::Unavailable(reason) => AuthError::KeysUnavailable(reason),
    }
}

/// The token of `Authorization: Bearer <token>` (scheme name case-insensitive).
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}
