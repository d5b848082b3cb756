//! Name resolution for every client that fetches on a user's behalf (the skills that
//! fetch, the peers fundi delegates to): a name that resolves to a special-purpose
//! address (loopback, private, link-local such as the cloud metadata address, NAT64 or
//! 6to4 forms of those; see `fundi_ops::addresses`) is refused at connect time, so
//! an allowed public name that is pointed inside later (DNS rebinding) reaches nothing.
//! An origin written as an IP literal is not resolved: the operator named that address.
//! A client whose settings set `allow-private-networks` resolves as the system does.

use std::net::SocketAddr;

use crate::addresses::special_purpose;

/// The resolver of an HTTP client that must reach only public addresses.
#[derive(Debug, Clone, Copy)]
pub struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = addrs
                .iter()
                .copied()
                .filter(|addr| special_purpose(addr.ip()).is_none())
                .collect();
            if public.is_empty() {
                let why = match addrs.first() {
                    Some(addr) => format!(
                        "{host} resolves to {} address {} (set allow-private-networks in its \
                         settings to reach it)",
                        special_purpose(addr.ip()).unwrap_or("a special-purpose"),
                        addr.ip()
                    ),
                    None => format!("{host} does not resolve"),
                };
                return Err(why.into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}

/// `builder` resolving through [`PublicOnly`], unless private networks are allowed.
pub fn guarded(
    builder: reqwest::ClientBuilder,
    allow_private_networks: bool,
) -> reqwest::ClientBuilder {
    match allow_private_networks {
        true => builder,
        false => builder.dns_resolver(std::sync::Arc::new(PublicOnly)),
    }
}

#[cfg(test)]
mod tests {
    use reqwest::dns::Resolve;

    use super::*;

    #[tokio::test]
    async fn a_name_that_resolves_inside_is_refused() {
        let name: reqwest::dns::Name = "localhost".parse().unwrap();
        let error = match PublicOnly.resolve(name).await {
            Ok(_) => panic!("localhost resolved through the guard"),
            Err(e) => e.to_string(),
        };
        assert!(error.contains("a loopback address"), "{error}");
        assert!(error.contains("allow-private-networks"), "{error}");
    }
}
