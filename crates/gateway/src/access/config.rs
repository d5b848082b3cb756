//! `[friends]` settings: which identity providers vouch for the people behind agents
//! that ask for access, and the bounds on their requests.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Requests for access (`POST /access-requests`): served when at least one issuer is
/// listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct FriendsConfig {
    /// The identity providers whose assertions are accepted, by name; the name prefixes
    /// the user a vended grant acts as (`<name>:<sub>`). Default: none (requests for
    /// access are not served).
    pub issuers: BTreeMap<String, IssuerConfig>,
    /// Requests one requester (issuer and subject) may have pending at once. Default: 3.
    pub pending_per_requester: usize,
    /// Requests one requester may make per hour, pending or not. Default: 10.
    pub requests_per_hour: u32,
    /// Requests the endpoint takes per minute from everyone together (a proof is
    /// checked for each). Default: 60.
    pub requests_per_minute: u32,
    /// How long a request waits for a decision, and an approved one for its
    /// collection ("7d", "12h"). Default: 7d.
    pub expires: String,
    /// Read requesters' cards, and call their callbacks, on loopback and private
    /// addresses too (tests, a lab). Default: false.
    pub allow_private_networks: bool,
}

impl Default for FriendsConfig {
    fn default() -> Self {
        FriendsConfig {
            issuers: BTreeMap::new(),
            pending_per_requester: 3,
            requests_per_hour: 10,
            requests_per_minute: 60,
            expires: "7d".into(),
            allow_private_networks: false,
        }
    }
}

/// One identity provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct IssuerConfig {
    /// Its `iss`, exactly as its assertions carry it.
    pub issuer: String,
    /// Where its signing keys are published (a JWK Set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jwks_url: Option<String>,
    /// Its OpenID Connect discovery document, whose `jwks_uri` is read (when `jwks-url`
    /// is not set). Default: `<issuer>/.well-known/openid-configuration`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery_url: Option<String>,
}

impl FriendsConfig {
    /// Whether requests for access are served.
    pub fn enabled(&self) -> bool {
        !self.issuers.is_empty()
    }

    /// How long a request lasts.
    pub fn lifetime(&self) -> Result<std::time::Duration, String> {
        humantime::parse_duration(&self.expires)
            .ok()
            .filter(|d| !d.is_zero() && d.as_secs() <= 366 * 86_400)
            .ok_or_else(|| {
                format!(
                    "friends.expires must be a duration from a second to a year, such as \
                     \"7d\" or \"12h\", got {:?}",
                    self.expires
                )
            })
    }

    /// Checks the settings; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if !self.enabled() {
            return Ok(());
        }
        self.lifetime()?;
        if self.pending_per_requester == 0 {
            return Err("friends.pending-per-requester must be at least 1".into());
        }
        if self.requests_per_hour == 0 || self.requests_per_minute == 0 {
            return Err(
                "friends.requests-per-hour and requests-per-minute must be at least 1".into(),
            );
        }
        for (name, issuer) in &self.issuers {
            let fine = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
            if !fine {
                return Err(format!(
                    "friends.issuers.{name}: a name is letters, digits, -, _ and ."
                ));
            }
            let http = |url: &str| url.starts_with("https://") || url.starts_with("http://");
            if !http(&issuer.issuer) {
                return Err(format!(
                    "friends.issuers.{name}.issuer must be the provider's URL (its iss), got {:?}",
                    issuer.issuer
                ));
            }
            for (field, url) in [
                ("jwks-url", &issuer.jwks_url),
                ("discovery-url", &issuer.discovery_url),
            ] {
                if let Some(url) = url
                    && !http(url)
                {
                    return Err(format!(
                        "friends.issuers.{name}.{field} must be an http(s) URL, got {url:?}"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(issuer: IssuerConfig) -> FriendsConfig {
        FriendsConfig {
            issuers: BTreeMap::from([("acme".to_owned(), issuer)]),
            ..FriendsConfig::default()
        }
    }

    #[test]
    fn bad_settings_are_refused_naming_the_field() {
        assert!(
            FriendsConfig::default().validate().is_ok(),
            "nothing listed"
        );
        let good = IssuerConfig {
            issuer: "https://idp.test".into(),
            ..IssuerConfig::default()
        };
        assert!(listing(good.clone()).validate().is_ok());
        let error = listing(IssuerConfig {
            issuer: "idp".into(),
            ..good.clone()
        })
        .validate()
        .unwrap_err();
        assert!(error.contains("friends.issuers.acme.issuer"), "{error}");
        let error = listing(IssuerConfig {
            jwks_url: Some("file:///etc/keys".into()),
            ..good.clone()
        })
        .validate()
        .unwrap_err();
        assert!(error.contains("friends.issuers.acme.jwks-url"), "{error}");
        let mut lapsing = listing(good);
        lapsing.expires = "forever".into();
        assert!(lapsing.validate().unwrap_err().contains("friends.expires"));
    }
}
