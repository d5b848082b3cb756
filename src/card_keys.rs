//! The keys that sign the agent card (`[card-signing]`): made on first start beside the
//! credentials (`<data dir>/card-signing-keys.json`, owner-only, or `key-file`), the
//! current one signing, the ones it replaced still published in the JWKS for
//! `keep-retired-days` so that a verifier holding a card they signed can still check it.
//! `fundi rotate-card-key` makes a new current key; a server takes it at its next start.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use chrono::{DateTime, Duration, Utc};
use fundi::config::AppConfig;
use fundi_peers::signature::CardKey;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::credentials::write_private;

/// What the key file holds.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyFile {
    current: KeptKey,
    #[serde(default)]
    retired: Vec<RetiredKey>,
}

/// The current key, private.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeptKey {
    kid: String,
    /// The Ed25519 seed, base64.
    seed: String,
}

/// A key that signed before the current one: only its public half.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RetiredKey {
    jwk: Value,
    retired_at: DateTime<Utc>,
}

/// The key file of `config` (for a server on `data_dir`).
pub(crate) fn path(config: &AppConfig, data_dir: &Path) -> PathBuf {
    config
        .card_signing
        .key_file
        .clone()
        .unwrap_or_else(|| data_dir.join("card-signing-keys.json"))
}

/// The current key and the public JWKs of the retired ones still kept, making the file
/// with a new key when there is none.
pub(crate) fn load_or_create(
    config: &AppConfig,
    path: &Path,
) -> anyhow::Result<(CardKey, Vec<Value>)> {
    let file = match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice::<KeyFile>(&bytes)
            .with_context(|| format!("{} is not a card signing key file", path.display()))?,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let key = CardKey::generate();
            let file = KeyFile {
                current: KeptKey {
                    kid: key.kid().to_owned(),
                    seed: key.seed_base64(),
                },
                retired: Vec::new(),
            };
            write_private(path, &serde_json::to_vec_pretty(&file)?)?;
            tracing::info!(kid = key.kid(), path = %path.display(), "made a key to sign the agent card");
            file
        }
        Err(error) => {
            return Err(error).with_context(|| format!("reading {}", path.display()));
        }
    };
    let key = CardKey::from_seed_base64(file.current.kid.clone(), &file.current.seed)
        .map_err(anyhow::Error::msg)?;
    let kept_since = Utc::now() - Duration::days(config.card_signing.keep_retired_days as i64);
    let retired = file
        .retired
        .into_iter()
        .filter(|r| r.retired_at > kept_since)
        .map(|r| r.jwk)
        .collect();
    Ok((key, retired))
}

/// Makes a new current key; the one it replaces is kept public for the retired days.
pub(crate) fn rotate(config: &AppConfig, path: &Path) -> anyhow::Result<String> {
    if !path.exists() {
        bail!(
            "{} does not exist: a server makes it on its first start",
            path.display()
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut file: KeyFile = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a card signing key file", path.display()))?;
    let old = CardKey::from_seed_base64(file.current.kid.clone(), &file.current.seed)
        .map_err(anyhow::Error::msg)?;
    let kept_since = Utc::now() - Duration::days(config.card_signing.keep_retired_days as i64);
    file.retired.retain(|r| r.retired_at > kept_since);
    file.retired.push(RetiredKey {
        jwk: old.public_jwk(),
        retired_at: Utc::now(),
    });
    let new = CardKey::generate();
    file.current = KeptKey {
        kid: new.kid().to_owned(),
        seed: new.seed_base64(),
    };
    write_private(path, &serde_json::to_vec_pretty(&file)?)?;
    Ok(new.kid().to_owned())
}
