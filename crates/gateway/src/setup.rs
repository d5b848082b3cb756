//! `SetupError`: why a part of the gateway could not be set up from its settings (the
//! authenticator, push delivery). Each names the setting at fault.

use std::path::PathBuf;

/// Why a part of the gateway could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A setting is missing, out of range or inconsistent; the text names it.
    #[error("{0}")]
    Invalid(String),
    /// A file a setting names could not be read.
    #[error("{setting} {}: {source}", path.display())]
    Unreadable {
        /// The setting, e.g. `auth.machine.public-key-file`.
        setting: String,
        /// The file it names.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// An HTTP client could not be built.
    #[error("{what}: HTTP client: {source}")]
    HttpClient {
        /// What the client is for.
        what: &'static str,
        /// Why it could not be built.
        source: reqwest::Error,
    },
}

impl From<String> for SetupError {
    fn from(text: String) -> SetupError {
        SetupError::Invalid(text)
    }
}
