//! `fundi mcp`: the MCP tools over stdio for a client that starts fundi as its MCP
//! server. Nothing but MCP goes to stdout; logs go to stderr.

use anyhow::Context;
use fundi::config::AppConfig;
use fundi_mcp::{CredentialSource, Credentials, Fundi, FundiTools};

use crate::cli::McpArgs;
use crate::client::credentials_of;

pub(crate) async fn run(args: McpArgs) -> anyhow::Result<()> {
    let config = AppConfig::load(args.config.as_deref())?;
    let mut settings = config.mcp.settings();
    settings.allow_writes |= args.allow_writes;
    let endpoint = &args.endpoint;
    let (token, user_token, user_header) = credentials_of(endpoint)?;
    let hint = format!(
        "set FUNDI_TOKEN and FUNDI_USER_TOKEN (or --token and --user-token) to credentials \
         the server at {} accepts, or FUNDI_CREDENTIALS to the credentials file it wrote \
         (now {})",
        endpoint.url,
        endpoint.credentials.display()
    );
    let fundi = Fundi::new(&endpoint.url, hint);
    let credentials = CredentialSource::Fixed(Credentials {
        token,
        user_token,
        user_header,
    });
    fundi_mcp::serve_stdio(FundiTools::new(fundi, credentials, settings))
        .await
        .context("serving MCP over stdio")
}
