//! A peer as an operator configures it, and the delegate skill's settings.

use serde::{Deserialize, Serialize};

/// One known peer (`[peers.<name>]`). Every field can also come from the environment,
/// `FUNDI__PEERS__<NAME>__TOKEN` and so on.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct PeerConfig {
    /// The peer's agent card URL, or its base URL (the card is then read at
    /// `/.well-known/agent-card.json` under it). Calls go only to the endpoints the card
    /// lists, never to a path made up from this URL.
    pub url: String,
    /// The bearer token sent to the peer (`Authorization: Bearer`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The user token sent to a fundi peer (or any peer whose card asks for an API key in
    /// a header), in the header its card names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_token: Option<String>,
    /// Whether the peer may be on a loopback, private or other special-purpose address.
    /// Default: false.
    pub allow_private_networks: bool,
    /// Whether the peer's card must carry a signature that verifies against the keys
    /// its own origin publishes (a card that does not is refused). Default: false.
    pub require_signed_card: bool,
    /// Hosts besides the card's own that the card's interfaces may point at (an agent
    /// whose card is served from another host than its endpoint). Default: none.
    pub interface_hosts: Vec<String>,
}

/// Tokens are never printed.
impl std::fmt::Debug for PeerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |token: &Option<String>| token.as_ref().map(|_| "<set>");
        f.debug_struct("PeerConfig")
            .field("url", &self.url)
            .field("token", &set(&self.token))
            .field("user_token", &set(&self.user_token))
            .field("allow_private_networks", &self.allow_private_networks)
            .field("require_signed_card", &self.require_signed_card)
            .field("interface_hosts", &self.interface_hosts)
            .finish()
    }
}

impl PeerConfig {
    /// A peer at `url`, with no credentials and public addresses only.
    pub fn new(url: impl Into<String>) -> PeerConfig {
        PeerConfig {
            url: url.into(),
            ..PeerConfig::default()
        }
    }

    /// Checks the peer `name`'s settings; the error names the field.
    pub fn validate(&self, name: &str) -> Result<(), String> {
        check_name(name)?;
        let field = |f: &str| format!("peers.{name}.{f}");
        let url = reqwest::Url::parse(&self.url)
            .map_err(|e| format!("{} must be an http(s) URL: {e}", field("url")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(format!(
                "{} must be an http(s) URL with a host, got {:?}",
                field("url"),
                self.url
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "{} must not carry credentials: set {} instead",
                field("url"),
                field("token")
            ));
        }
        for (token, which) in [(&self.token, "token"), (&self.user_token, "user-token")] {
            if token
                .as_ref()
                .is_some_and(|t| t.is_empty() || t.chars().any(|c| c.is_control() || c == ' '))
            {
                return Err(format!(
                    "{} must be a non-empty token without spaces or control characters",
                    field(which)
                ));
            }
        }
        if let Some(bad) = self.interface_hosts.iter().find(|h| h.trim().is_empty()) {
            return Err(format!(
                "{} must list host names, got {bad:?}",
                field("interface-hosts")
            ));
        }
        Ok(())
    }
}

/// A peer's name: what the config, the CLI and a delegation name it by.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let fine = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    match fine {
        true => Ok(()),
        false => Err(format!(
            "peer name {name:?} must be 1 to 64 lower-case letters, digits or '-'"
        )),
    }
}

/// The `delegate` skill's settings (`[skills.delegate]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct DelegateConfig {
    /// How long a peer may keep failing (unreachable, 5xx, busy) before the delegated
    /// task ends `failed`, in seconds. Default: 300.
    pub give_up_after_s: u64,
    /// The longest pause between two reads of a peer's task that is followed by polling
    /// (a peer without streaming), in ms. Default: 5000.
    pub poll_max_ms: u64,
    /// How long a peer's card is used before it is revalidated, in seconds. Default: 60.
    pub card_max_age_s: u64,
    /// A peer's task that has shown no change for this long, in seconds, is followed
    /// quietly: read once every `quiet-poll-s` instead of streamed or polled, and the
    /// local task waits idle between reads, so that it parks (with the default
    /// `runtime.park-after-ms` of 60 s, from 120 s up). A change seen on the peer
    /// follows it closely again. 0: always closely. Default: 300.
    pub quiet_poll_s: u64,
}

impl Default for DelegateConfig {
    fn default() -> Self {
        DelegateConfig {
            give_up_after_s: 300,
            poll_max_ms: 5000,
            card_max_age_s: 60,
            quiet_poll_s: 300,
        }
    }
}

impl DelegateConfig {
    /// Checks the settings; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.give_up_after_s == 0 {
            return Err("skills.delegate.give-up-after-s must be at least 1".into());
        }
        if !(10..=600_000).contains(&self.poll_max_ms) {
            return Err("skills.delegate.poll-max-ms must be from 10 to 600000".into());
        }
        if self.quiet_poll_s > 86_400 {
            return Err("skills.delegate.quiet-poll-s must be at most 86400 (a day)".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_are_refused_naming_the_field() {
        let ok = PeerConfig::new("http://127.0.0.1:8080");
        assert_eq!(ok.validate("b"), Ok(()));
        for (config, name, says) in [
            (ok.clone(), "B", "peer name \"B\""),
            (PeerConfig::new("ftp://x/"), "b", "peers.b.url"),
            (PeerConfig::new("not a url"), "b", "peers.b.url"),
            (
                PeerConfig::new("http://u:p@x/"),
                "b",
                "must not carry credentials",
            ),
            (
                PeerConfig {
                    token: Some("a b".into()),
                    ..ok.clone()
                },
                "b",
                "peers.b.token",
            ),
            (
                PeerConfig {
                    interface_hosts: vec![" ".into()],
                    ..ok.clone()
                },
                "b",
                "peers.b.interface-hosts",
            ),
        ] {
            let error = config.validate(name).unwrap_err();
            assert!(error.contains(says), "{error}");
        }
        let delegate = DelegateConfig::default();
        assert_eq!(delegate.validate(), Ok(()));
        let too_long = DelegateConfig {
            quiet_poll_s: 86_401,
            ..delegate
        };
        let error = too_long.validate().unwrap_err();
        assert!(error.contains("skills.delegate.quiet-poll-s"), "{error}");
    }

    #[test]
    fn tokens_are_not_printed() {
        let config = PeerConfig {
            token: Some("secret-1".into()),
            user_token: Some("secret-2".into()),
            ..PeerConfig::new("http://x/")
        };
        let printed = format!("{config:?}");
        assert!(!printed.contains("secret"), "{printed}");
        assert!(printed.contains("<set>"), "{printed}");
    }
}
