//! Local credentials: with `auth.mode = "static"` and no tokens configured, `fundi serve`
//! makes one client token (scope `fundi:admin`) and one user token (subject `local`),
//! keeps them in `<data dir>/credentials.json` (owner-only permissions), and reuses them
//! at the next start. The CLI client reads the same file.

use std::path::{Path, PathBuf};

use anyhow::Context;
use fundi_gateway::{AuthConfig, StaticClient};
use fundi_runtime::ADMIN_SCOPE;
use serde::{Deserialize, Serialize};

/// The file name under the data directory.
pub(crate) const FILE_NAME: &str = "credentials.json";
/// The subject of the generated user (the owner of the tasks it creates).
pub(crate) const LOCAL_USER: &str = "local";
/// The name of the generated client.
const LOCAL_CLIENT: &str = "local";

/// What the file holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LocalCredentials {
    /// The bearer token (`Authorization: Bearer`).
    pub(crate) token: String,
    /// The user token (header `userHeader`).
    pub(crate) user_token: String,
    /// The header that carries the user token.
    pub(crate) user_header: String,
}

/// The path of the credentials file under `data_dir`.
pub(crate) fn path_in(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

/// Reads credentials written by a server.
pub(crate) fn read(path: &Path) -> anyhow::Result<LocalCredentials> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a credentials file", path.display()))
}

/// Loads (or makes and writes) the local pair and installs it in `auth`.
pub(crate) fn install_local(auth: &mut AuthConfig, data_dir: &Path) -> anyhow::Result<PathBuf> {
    let path = path_in(data_dir);
    let credentials = match read(&path) {
        Ok(existing) => existing,
        Err(_) => {
            let fresh = LocalCredentials {
                token: random_token(),
                user_token: random_token(),
                user_header: auth.user_header.clone(),
            };
            write_private(&path, &serde_json::to_vec_pretty(&fresh)?)?;
            fresh
        }
    };
    auth.static_tokens.clients.insert(
        LOCAL_CLIENT.into(),
        StaticClient {
            token: credentials.token,
            scopes: vec![ADMIN_SCOPE.into()],
        },
    );
    auth.static_tokens
        .users
        .insert(LOCAL_USER.into(), credentials.user_token);
    Ok(path)
}

/// 244 random bits (two v4 UUIDs from the OS's random source), as hex.
fn random_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    std::io::Write::write_all(&mut file, bytes)
        .with_context(|| format!("writing {}", path.display()))
}
