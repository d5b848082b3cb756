//! fundi-client: a client of a fundi server, with fundi's two credentials (the client
//! application's bearer token and the end user's token) on every call. The CLI, the MCP
//! bridge and the examples call fundi through it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), fundi_client::ClientError> {
//! use fundi_client::{Client, Credentials, user_message};
//!
//! let fundi = Client::new("http://127.0.0.1:8080", "set FUNDI_TOKEN and FUNDI_USER_TOKEN");
//! let me = Credentials::new("client-token", "user-token");
//! let message = user_message("the quick brown fox", None, Some("word-count"));
//! let task = fundi.send_message(&me, &message, false).await?;
//! println!("{:?}", task.status.state);
//! # Ok(())
//! # }
//! ```
//!
//! Tasks and messages are the official A2A Rust SDK's types (`a2a-lf`, re-exported as
//! [`a2a`]); a call answered 429 or 5xx is tried again with backoff, a 401 never is.

mod client;
mod credentials;
mod error;
mod stream;

pub use a2a;
pub use client::{Client, user_message};
pub use credentials::{Credentials, DEFAULT_USER_HEADER};
pub use error::ClientError;
pub use stream::{Event, Events, Results};
