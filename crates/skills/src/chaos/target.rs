//! What a chaos run stands in front of: a TCP address or an HTTP(S) origin.

use std::fmt;

use reqwest::Url;

/// A target, as configured or asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// `host:port`: bytes are proxied as they are.
    Tcp { host: String, port: u16 },
    /// `http(s)://host[:port]`: requests are proxied, and HTTP faults can be injected.
    Http(Url),
}

impl Target {
    /// Parses `host:port` or an origin; the error says what is wrong.
    pub(crate) fn parse(text: &str) -> Result<Target, String> {
        if text.starts_with("http://") || text.starts_with("https://") {
            let url = Url::parse(text).map_err(|e| format!("not a URL: {e}"))?;
            if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
                return Err("an http(s) target is an origin, without a path or query".into());
            }
            if !url.username().is_empty() || url.password().is_some() {
                return Err("an http(s) target carries no credentials".into());
            }
            if url.host().is_none() {
                return Err("an http(s) target needs a host".into());
            }
            return Ok(Target::Http(url));
        }
        if text.contains("://") {
            return Err("the scheme must be http or https (or no scheme: host:port)".into());
        }
        let (host, port) = text
            .rsplit_once(':')
            .ok_or("expected host:port (a TCP target) or an http(s):// origin")?;
        let port: u16 = port
            .parse()
            .map_err(|_| format!("the port {port:?} is not a number from 1 to 65535"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() || port == 0 {
            return Err("expected host:port with a host and a port from 1 to 65535".into());
        }
        Ok(Target::Tcp {
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    /// Where the proxy connects: `host:port`.
    pub(crate) fn authority(&self) -> String {
        match self {
            Target::Tcp { host, port } => join(host, *port),
            Target::Http(url) => join(
                url.host_str().unwrap_or_default(),
                url.port_or_known_default().unwrap_or(80),
            ),
        }
    }

    /// Whether HTTP faults can be injected (the proxy speaks HTTP).
    pub(crate) fn is_http(&self) -> bool {
        matches!(self, Target::Http(_))
    }
}

fn join(host: &str, port: u16) -> String {
    match host.contains(':') {
        true => format!("[{host}]:{port}"),
        false => format!("{host}:{port}"),
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Tcp { .. } => f.write_str(&self.authority()),
            Target::Http(url) => f.write_str(&url.origin().ascii_serialization()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_read_as_written_and_compared_as_normalised() {
        assert_eq!(
            Target::parse("LocalHost:8080").unwrap(),
            Target::parse("localhost:8080").unwrap()
        );
        assert_eq!(
            Target::parse("http://127.0.0.1:8080").unwrap(),
            Target::parse("http://127.0.0.1:8080/").unwrap()
        );
        assert_eq!(
            Target::parse("[::1]:9000").unwrap().authority(),
            "[::1]:9000"
        );
        assert_eq!(
            Target::parse("https://example.com").unwrap().authority(),
            "example.com:443"
        );
        for (bad, says) in [
            ("example.com", "host:port"),
            ("example.com:0", "port"),
            ("example.com:99999", "port"),
            ("ftp://example.com", "scheme"),
            ("http://example.com/admin", "origin"),
            ("http://user:pw@example.com", "credentials"),
        ] {
            let error = Target::parse(bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}
