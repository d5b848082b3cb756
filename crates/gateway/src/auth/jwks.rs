//! A cached JWKS: fetched on first use, again after `max-age`, and again when a token
//! names an unknown key id (key rotation), but never more often than `min-refresh`.

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;

/// Largest JWKS document read.
const MAX_JWKS_BYTES: usize = 512 * 1024;
/// Longest a JWKS fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// One verification key, with the algorithm its JWK pins (if any).
#[derive(Clone)]
pub(crate) struct Key {
    pub(crate) key: DecodingKey,
    pub(crate) alg: Option<Algorithm>,
}

/// Why no key was found.
#[derive(Debug)]
pub(crate) enum KeyError {
    /// The JWKS has no key with this id (or the token names none and there are several).
    Unknown(String),
    /// The JWKS could not be fetched and nothing usable is cached.
    Unavailable(String),
}

pub(crate) struct Jwks {
    url: String,
    client: reqwest::Client,
    max_age: Duration,
    min_refresh: Duration,
    cache: RwLock<Cached>,
    /// When the last fetch started, and why it failed if it did; held while fetching,
    /// so one fetch runs at a time.
    last_attempt: tokio::sync::Mutex<Option<(Instant, Option<String>)>>,
}

#[derive(Default)]
struct Cached {
    by_kid: HashMap<String, Key>,
    /// Keys without a `kid`: usable only by tokens without one, when alone.
    anonymous: Vec<Key>,
    fetched_at: Option<Instant>,
}

impl Cached {
    fn find(&self, kid: Option<&str>) -> Option<Key> {
        match kid {
            Some(kid) => self.by_kid.get(kid).cloned(),
            None => {
                let mut all = self.by_kid.values().chain(&self.anonymous);
                match (all.next(), all.next()) {
                    (Some(only), None) => Some(only.clone()),
                    _ => None,
                }
            }
        }
    }
}

impl Jwks {
    pub(crate) fn new(
        url: String,
        client: reqwest::Client,
        max_age: Duration,
        min_refresh: Duration,
    ) -> Jwks {
        Jwks {
            url,
            client,
            max_age,
            min_refresh,
            cache: RwLock::new(Cached::default()),
            last_attempt: tokio::sync::Mutex::new(None),
        }
    }

    /// The key for a token's `kid`.
    pub(crate) async fn key(&self, kid: Option<&str>) -> Result<Key, KeyError> {
        if let Some(key) = self.cached(kid, true) {
            return Ok(key);
        }
        let mut last_attempt = self.last_attempt.lock().await;
        // Another request may have fetched while this one waited.
        if let Some(key) = self.cached(kid, true) {
            return Ok(key);
        }
        let stale = self.cached(kid, false);
        let may_fetch = last_attempt
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed() >= self.min_refresh);
        if !may_fetch {
            // Until the next fetch may start, a failed one is what is known of the keys.
            let failed = last_attempt.as_ref().and_then(|(_, error)| error.clone());
            return stale.ok_or_else(|| match failed {
                Some(error) => KeyError::Unavailable(error),
                None => unknown(kid),
            });
        }
        let started = Instant::now();
        match self.fetch().await {
            Ok(fresh) => {
                *last_attempt = Some((started, None));
                let found = fresh.find(kid);
                *self.cache.write().unwrap_or_else(|e| e.into_inner()) = fresh;
                found.ok_or_else(|| unknown(kid))
            }
            Err(error) => {
                tracing::warn!(url = %self.url, %error, "JWKS fetch failed");
                *last_attempt = Some((started, Some(error.clone())));
                stale.ok_or(KeyError::Unavailable(error))
            }
        }
    }

    fn cached(&self, kid: Option<&str>, fresh_only: bool) -> Option<Key> {
        let cache = self.cache.read().unwrap_or_else(|e| e.into_inner());
        let fresh = cache
            .fetched_at
            .is_some_and(|at| at.elapsed() < self.max_age);
        if fresh_only && !fresh {
            return None;
        }
        cache.find(kid)
    }

    async fn fetch(&self) -> Result<Cached, String> {
        let mut response = self
            .client
            .get(&self.url)
            .timeout(FETCH_TIMEOUT)
            .send()
            .await
            .map_err(|e| format!("GET {}: {e}", self.url))?;
        if !response.status().is_success() {
            return Err(format!("GET {}: HTTP {}", self.url, response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("reading {}: {e}", self.url))?
        {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(format!(
                    "{} is larger than {MAX_JWKS_BYTES} bytes",
                    self.url
                ));
            }
            body.extend_from_slice(&chunk);
        }
        parse(&body).map_err(|e| format!("{}: {e}", self.url))
    }
}

fn unknown(kid: Option<&str>) -> KeyError {
    KeyError::Unknown(match kid {
        Some(kid) => format!("no signing key has the id {kid:?}"),
        None => "the token names no key id (kid) and the key set has several keys".into(),
    })
}

/// A JWKS document: each usable signing key (others are skipped, with a log line, so one
/// exotic key does not disable the rest).
fn parse(body: &[u8]) -> Result<Cached, String> {
    #[derive(Deserialize)]
    struct Document {
        keys: Vec<serde_json::Value>,
    }
    let document: Document =
        serde_json::from_slice(body).map_err(|e| format!("not a JWKS document: {e}"))?;
    let mut cached = Cached {
        fetched_at: Some(Instant::now()),
        ..Cached::default()
    };
    for raw in document.keys {
        match usable_key(raw) {
            Ok((kid, key)) => match kid {
                Some(kid) => {
                    cached.by_kid.insert(kid, key);
                }
                None => cached.anonymous.push(key),
            },
            Err(reason) => tracing::debug!(%reason, "skipping a JWKS key"),
        }
    }
    Ok(cached)
}

fn usable_key(raw: serde_json::Value) -> Result<(Option<String>, Key), String> {
    let jwk: Jwk = serde_json::from_value(raw).map_err(|e| e.to_string())?;
    if matches!(&jwk.common.public_key_use, Some(u) if *u != PublicKeyUse::Signature) {
        return Err("not a signature key".into());
    }
    match &jwk.algorithm {
        AlgorithmParameters::OctetKey(_) => {
            return Err("symmetric keys are never accepted from a JWKS".into());
        }
        // The Ed25519 verifier slices 32 bytes: refuse other lengths here, not there.
        AlgorithmParameters::OctetKeyPair(params) => {
            use base64::Engine as _;
            let x = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(params.x.trim_end_matches('='))
                .map_err(|e| format!("bad OKP x: {e}"))?;
            if x.len() != 32 {
                return Err("OKP key is not 32 bytes".into());
            }
        }
        _ => {}
    }
    let key = DecodingKey::from_jwk(&jwk).map_err(|e| e.to_string())?;
    let alg = match jwk.common.key_algorithm {
        Some(alg) => Some(
            alg.to_string()
                .parse::<Algorithm>()
                .map_err(|_| format!("algorithm {alg} cannot sign JWTs"))?,
        ),
        None => None,
    };
    Ok((jwk.common.key_id.clone(), Key { key, alg }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keys_that_cannot_be_fetched_are_unavailable_until_the_next_fetch_too() {
        // A port nothing listens on: the fetch fails at once.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/jwks.json", closed.local_addr().unwrap());
        drop(closed);
        let jwks = Jwks::new(
            url,
            reqwest::Client::new(),
            Duration::from_secs(300),
            Duration::from_secs(60),
        );
        for attempt in ["the fetch", "the wait before the next fetch"] {
            match jwks.key(Some("k")).await {
                Err(KeyError::Unavailable(_)) => {}
                Err(KeyError::Unknown(why)) => panic!("{attempt}: unknown key: {why}"),
                Ok(_) => panic!("{attempt}: a key from nowhere"),
            }
        }
    }
}
