//! Why a call to fundi gave no answer to use.

/// Why a call to fundi did not give an answer to use.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// fundi refused the credentials.
    #[error("fundi refused the credentials (HTTP 401): {0}")]
    Unauthenticated(String),
    /// fundi answered with an error about the request (the message says what).
    #[error("{message}")]
    Refused {
        /// What fundi said.
        message: String,
        /// The JSON-RPC error code, for a JSON-RPC call.
        code: Option<i64>,
    },
    /// fundi answered with something this client cannot read as what it asked for.
    #[error("{0}")]
    Unexpected(String),
    /// fundi could not be reached, or kept failing.
    #[error("fundi at {url} is not answering: {reason}")]
    Unreachable {
        /// Where.
        url: String,
        /// Why.
        reason: String,
        /// Whether anything answered at all (false: no connection could be made).
        answered: bool,
    },
}
