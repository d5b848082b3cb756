//! Which webhook addresses fundi will connect to. A URL is checked when its config is
//! created, and every address is checked again when connecting (a DNS name that
//! resolved to a public address at creation may resolve to an internal one later).

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::Url;

use super::settings::PushSettings;

/// The SSRF policy.
#[derive(Debug)]
pub(crate) struct Policy {
    allowed_hosts: HashSet<String>,
    allow_private: bool,
}

impl Policy {
    pub(crate) fn new(settings: &PushSettings) -> Policy {
        Policy {
            allowed_hosts: settings
                .allowed_hosts
                .iter()
                .map(|h| normalize_host(h))
                .collect(),
            allow_private: settings.allow_private_networks,
        }
    }

    fn host_allowed(&self, host: &str) -> bool {
        self.allow_private || self.allowed_hosts.contains(&normalize_host(host))
    }

    /// Why `ip` is refused for `host`, if it is.
    pub(crate) fn refusal(&self, host: &str, ip: IpAddr) -> Option<String> {
        if self.host_allowed(host) {
            return None;
        }
        non_public(ip).map(|kind| {
            format!(
                "{host} is {kind} address {ip}, which webhooks may not use (allow it in push.allowed-hosts)"
            )
        })
    }

    /// Checks a webhook URL: http(s), no credentials in it, and a host whose every
    /// address is public (or allowed). The error says what is wrong.
    pub(crate) async fn check_url(&self, raw: &str) -> Result<Url, String> {
        let url = Url::parse(raw).map_err(|e| format!("{raw:?} is not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "{raw:?} is not an http(s) URL (scheme {:?})",
                url.scheme()
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(
                "the URL carries credentials; use the config's authentication instead".into(),
            );
        }
        let host = url
            .host_str()
            .ok_or_else(|| format!("{raw:?} has no host"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = host.parse::<IpAddr>() {
            return match self.refusal(host, ip) {
                Some(why) => Err(why),
                None => Ok(url),
            };
        }
        if self.host_allowed(host) {
            return Ok(url);
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| format!("{host} does not resolve: {e}"))?
            .collect();
        if addrs.is_empty() {
            return Err(format!("{host} does not resolve to any address"));
        }
        for addr in addrs {
            if let Some(why) = self.refusal(host, addr.ip()) {
                return Err(why);
            }
        }
        Ok(url)
    }

    /// For a URL whose host is an IP literal (the resolver is not asked for those).
    pub(crate) fn check_literal(&self, url: &Url) -> Result<(), String> {
        let Some(host) = url.host_str() else {
            return Ok(());
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match host.parse::<IpAddr>() {
            Ok(ip) => self.refusal(host, ip).map_or(Ok(()), Err),
            Err(_) => Ok(()),
        }
    }
}

fn normalize_host(host: &str) -> String {
    host.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// The kind of a non-public address ("a loopback"), or `None` for a public one: every
/// special-purpose block of the IANA registries, IPv4 carried in IPv6 included.
pub(crate) fn non_public(ip: IpAddr) -> Option<&'static str> {
    fundi_ops::addresses::special_purpose(ip)
}

/// The resolver webhooks connect through: every resolved address is checked, so DNS
/// rebinding after the config was accepted gets nowhere.
pub(crate) struct GuardedResolver {
    pub(crate) policy: Arc<Policy>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = addrs
                .iter()
                .copied()
                .filter(|addr| policy.refusal(&host, addr.ip()).is_none())
                .collect();
            if allowed.is_empty() {
                let why = addrs
                    .first()
                    .and_then(|addr| policy.refusal(&host, addr.ip()))
                    .unwrap_or_else(|| format!("{host} does not resolve"));
                return Err(why.into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict() -> Policy {
        Policy::new(&PushSettings::default())
    }

    #[test]
    fn internal_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
        ] {
            assert!(non_public(ip.parse().unwrap()).is_some(), "{ip}");
        }
        for ip in ["1.1.1.1", "93.184.216.34", "2606:4700:4700::1111"] {
            assert!(non_public(ip.parse().unwrap()).is_none(), "{ip}");
        }
    }

    #[tokio::test]
    async fn urls_are_refused_with_the_reason() {
        let policy = strict();
        for (url, expected) in [
            ("ftp://example.com/x", "not an http(s) URL"),
            ("http://user:pw@example.com/", "carries credentials"),
            ("http://127.0.0.1:9/x", "a loopback address 127.0.0.1"),
            ("http://10.0.0.1/", "a private address"),
            (
                "http://169.254.169.254/latest/meta-data",
                "a link-local address",
            ),
            ("http://[::1]:9/", "a loopback address ::1"),
            ("http://[::127.0.0.1]/", "a loopback"),
            ("http://[64:ff9b::7f00:1]/", "a loopback"),
            ("http://[64:ff9b::a9fe:a9fe]/", "a link-local"),
            ("http://[2002:7f00:1::1]/", "a loopback"),
            ("http://[fec0::1]/", "a site-local"),
            ("http://[100::1]/", "a discard-only"),
            ("http://192.0.0.1/", "an IETF protocol assignment"),
            ("http://localhost:9/", "a loopback address"),
            ("not a url", "is not a URL"),
        ] {
            let err = policy.check_url(url).await.unwrap_err();
            assert!(err.contains(expected), "{url}: {err}");
        }
        let allowed = Policy::new(&PushSettings {
            allowed_hosts: vec!["127.0.0.1".into(), "localhost".into()],
            ..PushSettings::default()
        });
        assert!(allowed.check_url("http://127.0.0.1:9/x").await.is_ok());
        assert!(allowed.check_url("http://localhost:9/x").await.is_ok());
        assert!(allowed.check_url("http://[::1]:9/x").await.is_err());
    }

    #[tokio::test]
    async fn the_resolver_refuses_names_that_resolve_inside() {
        use reqwest::dns::Resolve;
        let resolver = GuardedResolver {
            policy: Arc::new(strict()),
        };
        let name: reqwest::dns::Name = "localhost".parse().unwrap();
        let err = match resolver.resolve(name).await {
            Ok(_) => panic!("localhost resolved through the guard"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("a loopback address"), "{err}");
    }
}
