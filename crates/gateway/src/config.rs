//! Gateway settings: what the agent card says, and the HTTP limits.

use serde::{Deserialize, Serialize};

/// How the gateway presents the agent and guards its endpoint. Start from the default
/// and set what differs: a setting added later breaks no embedder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct GatewayConfig {
    /// Base URL clients reach this server at, advertised in the agent card (never taken
    /// from a request's Host header). Default: none, then `http://<bound address>`.
    pub public_url: Option<String>,
    /// The agent's name on its card. Default: "fundi".
    pub name: String,
    /// The agent's description on its card.
    pub description: String,
    /// The agent's own version on its card. Default: this build's version.
    pub version: String,
    /// Provider organization on the card (set with `provider-url`, or neither).
    /// Default: none (the card has no provider).
    pub provider_organization: Option<String>,
    /// Provider URL on the card. Default: none.
    pub provider_url: Option<String>,
    /// Documentation URL on the card. Default: none.
    pub documentation_url: Option<String>,
    /// Serve the HTTP+JSON (REST) binding (`POST /message:send`, `GET /tasks/{id}`, ...)
    /// beside JSON-RPC, and list it on the agent card. Default: true.
    pub rest: bool,
    /// Serve the gRPC binding (`lf.a2a.v1.A2AService`) and list it on the agent card.
    /// Default: true.
    pub grpc: bool,
    /// Serve gRPC on this address of its own (`host:port`) instead of beside HTTP on
    /// the gateway's port (where it is HTTP/2 without TLS, or TLS at a proxy).
    /// Default: none.
    pub grpc_bind: Option<String>,
    /// The address gRPC clients dial (`host:port`), as the card lists it. Default: the
    /// host and port of `public-url` (or of `grpc-bind` when set).
    pub grpc_public_address: Option<String>,
    /// Serve GetExtendedAgentCard: to an authenticated caller, the card with the skills
    /// it may run, the scopes it holds and its limits (`capabilities.extendedAgentCard`).
    /// Default: true.
    pub extended_card: bool,
    /// Largest accepted request body, in bytes. Default: 1048576 (1 MiB).
    pub max_body_bytes: usize,
    /// Longest a non-streaming call may take, in ms; a blocking SendMessage returns the
    /// task as it stands then. Default: 30000.
    pub request_timeout_ms: u64,
    /// Interval of keep-alive comments on idle SSE streams, in ms. Default: 15000.
    pub sse_keep_alive_ms: u64,
    /// `Cache-Control: max-age` of the agent card, in seconds. Default: 300.
    pub card_max_age_secs: u64,
    /// Host names (without port) accepted in the `Host` header of `/a2a`, besides
    /// loopback names and the host of `public-url`: a defence against DNS rebinding.
    /// `"*"` accepts any. Default: none.
    pub allowed_hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`) whose browser requests `/a2a` accepts; a request
    /// with any other `Origin` header is refused. Default: none.
    pub allowed_origins: Vec<String>,
    /// Longest a client may take to send a request's headers, in ms; an idle keep-alive
    /// connection is closed after this long too (behind a load balancer, set it above
    /// the balancer's idle timeout). Default: 30000.
    pub header_read_timeout_ms: u64,
    /// Longest a client may take to send a request's body once its head has arrived, in
    /// ms; a slower sender is cut off with HTTP 408. Default: 30000.
    pub body_read_timeout_ms: u64,
    /// Most bytes of request bodies the server holds at once, over all connections
    /// (never less than `max-body-bytes`); a body that would pass it is cut off with
    /// HTTP 503. Default: 67108864 (64 MiB).
    pub max_buffered_body_bytes: usize,
    /// Most connections open at once; past it, new connections wait to be accepted. Kept
    /// below the process's file-descriptor limit at start. Default: 4096.
    pub max_connections: usize,
    /// Most event streams (SubscribeToTask, streaming SendMessage, on either binding) one
    /// user holds open at once. Default: 64.
    pub max_streams_per_user: usize,
    /// Most event streams open on one task at once, over all users. Default: 16.
    pub max_streams_per_task: usize,
    /// Most bytes of tasks in one ListTasks page (as stored, before `historyLength` and
    /// `includeArtifacts` trim them); the page ends early, with a next-page token,
    /// before the task that would pass it (a page holds at least one task).
    /// Default: 8388608 (8 MiB).
    pub max_list_bytes: usize,
    /// Most parts in one message. Default: 64.
    pub max_parts_per_message: usize,
    /// Largest text part, in bytes. Default: 262144 (256 KiB).
    pub max_text_bytes: usize,
    /// Requests per minute each user may make on `/a2a` (0: no limit). Default: 1200.
    pub rate_limit_per_minute: u32,
    /// Requests a user may make at once above that rate. Default: 100.
    pub rate_limit_burst: u32,
    /// Serve the web console at `/console` (docs/console.md; `fundi-console`'s router,
    /// which the server merges with `app_with`). Default: true.
    pub console: bool,
    /// Sign people in to the console through an OpenID Connect identity provider
    /// (beside one-time links). Default: none.
    pub console_oidc: Option<ConsoleOidc>,
}

/// An OpenID Connect identity provider that signs people in to the console: the
/// authorization-code flow with PKCE, back to `<public-url>/console/sign-in/callback`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct ConsoleOidc {
    /// The provider's issuer URL; its discovery document is read from
    /// `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
    /// This console's client id at the provider.
    pub client_id: String,
    /// Its client secret, for a confidential client (PKCE is used either way).
    /// Default: none.
    pub client_secret: Option<String>,
    /// OAuth scopes asked for beside `openid` (`profile`, or one that makes the
    /// provider put fundi's scopes in the ID token). Default: none.
    pub request_scopes: Vec<String>,
}

impl ConsoleOidc {
    /// What is wrong with the settings, naming the field.
    pub fn validate(&self) -> Result<(), String> {
        let issuer = self.issuer.to_ascii_lowercase();
        if !(issuer.starts_with("https://") || issuer.starts_with("http://")) {
            return Err(format!(
                "gateway.console-oidc.issuer must be an http(s) URL, got {:?}",
                self.issuer
            ));
        }
        if self.client_id.trim().is_empty() {
            return Err("gateway.console-oidc.client-id must not be empty".into());
        }
        Ok(())
    }
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            public_url: None,
            name: "fundi".into(),
            description: "A2A runtime for long-running agent skills: every task is durable, \
                          supervised and streamed."
                .into(),
            version: env!("CARGO_PKG_VERSION").into(),
            provider_organization: None,
            provider_url: None,
            documentation_url: None,
            rest: true,
            grpc: true,
            grpc_bind: None,
            grpc_public_address: None,
            extended_card: true,
            max_body_bytes: 1024 * 1024,
            request_timeout_ms: 30_000,
            sse_keep_alive_ms: 15_000,
            card_max_age_secs: 300,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            header_read_timeout_ms: 30_000,
            body_read_timeout_ms: 30_000,
            max_buffered_body_bytes: 64 * 1024 * 1024,
            max_connections: 4096,
            max_streams_per_user: 64,
            max_streams_per_task: 16,
            max_list_bytes: 8 * 1024 * 1024,
            max_parts_per_message: 64,
            max_text_bytes: 256 * 1024,
            rate_limit_per_minute: 1200,
            rate_limit_burst: 100,
            console: true,
            console_oidc: None,
        }
    }
}

impl GatewayConfig {
    /// Checks values that serde cannot; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(oidc) = &self.console_oidc {
            oidc.validate()?;
        }
        if let Some(url) = &self.public_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(format!(
                "gateway.public-url must be an http(s) URL, got {url:?}"
            ));
        }
        if self.provider_organization.is_some() != self.provider_url.is_some() {
            return Err(
                "gateway.provider-organization and gateway.provider-url go together: set both or neither"
                    .into(),
            );
        }
        for (address, name) in [
            (&self.grpc_bind, "grpc-bind"),
            (&self.grpc_public_address, "grpc-public-address"),
        ] {
            if let Some(address) = address
                && !is_host_and_port(address)
            {
                return Err(format!(
                    "gateway.{name} must be host:port (no scheme or path), got {address:?}"
                ));
            }
        }
        if self.max_body_bytes == 0 {
            return Err("gateway.max-body-bytes must be at least 1".into());
        }
        if self.request_timeout_ms == 0 {
            return Err("gateway.request-timeout-ms must be at least 1".into());
        }
        if self.sse_keep_alive_ms == 0 {
            return Err("gateway.sse-keep-alive-ms must be at least 1".into());
        }
        if self.header_read_timeout_ms == 0 {
            return Err("gateway.header-read-timeout-ms must be at least 1".into());
        }
        for (value, name) in [
            (self.body_read_timeout_ms as usize, "body-read-timeout-ms"),
            (self.max_buffered_body_bytes, "max-buffered-body-bytes"),
            (self.max_connections, "max-connections"),
            (self.max_streams_per_user, "max-streams-per-user"),
            (self.max_streams_per_task, "max-streams-per-task"),
            (self.max_list_bytes, "max-list-bytes"),
        ] {
            if value == 0 {
                return Err(format!("gateway.{name} must be at least 1"));
            }
        }
        if self.max_parts_per_message == 0 {
            return Err("gateway.max-parts-per-message must be at least 1".into());
        }
        if self.max_text_bytes == 0 {
            return Err("gateway.max-text-bytes must be at least 1".into());
        }
        if self.rate_limit_per_minute > 0 && self.rate_limit_burst == 0 {
            return Err(
                "gateway.rate-limit-burst must be at least 1 when rate-limit-per-minute is set"
                    .into(),
            );
        }
        for origin in &self.allowed_origins {
            if origin != "null"
                && !(origin.starts_with("http://") || origin.starts_with("https://"))
            {
                return Err(format!(
                    "gateway.allowed-origins: {origin:?} is not an origin (scheme://host[:port])"
                ));
            }
        }
        Ok(())
    }
}

/// `host:port` (a name, an IPv4 address or a bracketed IPv6 one), nothing else.
fn is_host_and_port(address: &str) -> bool {
    let Some((host, port)) = address.rsplit_once(':') else {
        return false;
    };
    let host_ok = !host.is_empty() && !host.contains(['/', '@', '?', '#', ' ']);
    host_ok && port.parse::<u16>().is_ok()
}
