//! `fundi mcp`: the MCP tools over stdio for a client that starts fundi as its MCP
//! server. Nothing but MCP goes to stdout. Each setting comes from its flag or
//! environment variable first, then the config file's `[mcp]`, then (for credentials)
//! the file a local `fundi serve` wrote.

use std::path::PathBuf;

use anyhow::Context;
use fundi::config::AppConfig;
use fundi_mcp::{Client, CredentialSource, Credentials, FundiTools};

use crate::cli::McpArgs;
use crate::credentials;

/// The server `fundi mcp` talks to when nothing says otherwise.
const DEFAULT_URL: &str = "http://127.0.0.1:8080";

pub(crate) async fn run(args: McpArgs) -> anyhow::Result<()> {
    let config = AppConfig::load(args.config.as_deref())?;
    let mcp = &config.mcp;
    let mut settings = mcp.settings();
    settings.allow_writes |= args.allow_writes;
    let url = args
        .url
        .or_else(|| mcp.url.clone())
        .unwrap_or_else(|| DEFAULT_URL.into());
    let file = args
        .credentials
        .or_else(|| mcp.credentials_file.clone())
        .unwrap_or_else(|| PathBuf::from("data/credentials.json"));
    let token = args.token.or_else(|| mcp.token.clone());
    let user_token = args.user_token.or_else(|| mcp.user_token.clone());
    let user_header = args.user_header.or_else(|| mcp.user_header.clone());
    let credentials = match (token, user_token) {
        (Some(token), Some(user_token)) => Credentials {
            token,
            user_token,
            user_header: user_header.unwrap_or_else(|| fundi_gateway::DEFAULT_USER_HEADER.into()),
        },
        (token, user_token) => {
            let written = credentials::read(&file).with_context(|| {
                format!(
                    "no credentials: set FUNDI_TOKEN and FUNDI_USER_TOKEN (or mcp.token and \
                     mcp.user-token), or FUNDI_CREDENTIALS to the file a local server wrote \
                     (tried {})",
                    file.display()
                )
            })?;
            Credentials {
                token: token.unwrap_or(written.token),
                user_token: user_token.unwrap_or(written.user_token),
                user_header: user_header.unwrap_or(written.user_header),
            }
        }
    };
    let hint = format!(
        "set FUNDI_TOKEN and FUNDI_USER_TOKEN (or mcp.token and mcp.user-token) to \
         credentials the server at {url} accepts, or FUNDI_CREDENTIALS to the file it wrote \
         (now {})",
        file.display()
    );
    let fundi = Client::new(&url, hint);
    let tools = FundiTools::new(fundi, CredentialSource::Fixed(credentials), settings);
    fundi_mcp::serve_stdio(tools)
        .await
        .context("serving MCP over stdio")
}
