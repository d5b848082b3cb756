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
}
