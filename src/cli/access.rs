//! `fundi access`: requests for access by other agents, for the people who decide them.

use clap::Subcommand;

use super::Endpoint;

#[derive(Debug, Subcommand)]
pub(crate) enum AccessCommand {
    /// List the requests for access, newest first (the default: pending ones only).
    List {
        #[command(flatten)]
        endpoint: Endpoint,
        /// Only those with this status: pending, approved, collected, rejected, expired,
        /// or all.
        #[arg(long, default_value = "pending")]
        status: String,
    },
    /// Approve a request: vends a grant of the scopes asked for (or fewer), whose token
    /// the requester collects once.
    Approve {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The request id (ar-...).
        id: String,
        /// Grant only these of the scopes asked for, comma-separated.
        #[arg(long, value_delimiter = ',')]
        scopes: Option<Vec<String>>,
        /// How long the grant admits requests ("30d", "12h"); until revoked when absent.
        #[arg(long)]
        expires: Option<String>,
    },
    /// Reject a request; the requester is told, with the reason when given.
    Reject {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The request id (ar-...).
        id: String,
        /// Why, as the requester will read it.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Ask a peer (added with `fundi peers add`) for access, as this server's agent:
    /// prints the request's id and its continuation secret, once.
    Request {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The peer to ask.
        #[arg(long)]
        peer: String,
        /// The scopes asked for, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        scopes: Vec<String>,
        /// Why, as the person deciding at the peer will read it.
        #[arg(long)]
        reason: String,
        /// A file holding the identity assertion (a JWT of an identity provider the peer
        /// lists, for the peer's URL); `-` reads it from standard input.
        #[arg(long)]
        assertion_file: std::path::PathBuf,
    },
    /// Collect the token of a request a person at the peer approved; it becomes the
    /// peer's token for delegation.
    Collect {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The peer asked.
        #[arg(long)]
        peer: String,
        /// The request id (ar-...), as `fundi access request` printed it.
        id: String,
        /// The continuation secret `fundi access request` printed.
        #[arg(long, env = "FUNDI_CONTINUATION", hide_env_values = true)]
        continuation: String,
    },
}
