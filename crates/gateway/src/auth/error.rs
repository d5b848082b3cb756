//! Why a caller was not let in.

use thiserror::Error;

/// An authentication failure. The gateway answers HTTP 401 (or 503 when the signing keys
/// cannot be fetched) and nothing else happens.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum AuthError {
    /// The credential is absent.
    #[error("missing {0}")]
    Missing(String),
    /// The credential is present but not acceptable.
    #[error("{credential} is invalid: {reason}")]
    Invalid {
        /// Which credential ("the bearer token", "the user token in X-…").
        credential: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The key server could not be reached and no cached key fits.
    #[error("the token's signing keys are unavailable: {0}")]
    KeysUnavailable(String),
    /// The store holding the grants failed.
    #[error("the grants cannot be read: {0}")]
    GrantsUnavailable(String),
}
