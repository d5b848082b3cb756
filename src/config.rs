//! `fundi serve` settings: built-in defaults, then `config/fundi.toml` (or `--config`),
//! then environment variables `FUNDI__SECTION__FIELD`, per field; then the command-line
//! flags. Every field is documented in `config/fundi.toml`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use fundi_gateway::{AuthConfig, FriendsConfig, GatewayConfig, PushSettings};
use fundi_peers::{DelegateConfig, PeerConfig};
use fundi_runtime::RuntimeConfig;
use fundi_skills::{A11yConfig, ChaosConfig, EchoConfig, HealConfig, InboxConfig, SecurityConfig};
use serde::{Deserialize, Serialize};

use crate::telemetry::{LogFormat, TelemetryConfig};

mod store;

pub use store::{DurabilityMode, PostgresStoreConfig, StoreConfig, StoreKind};

/// The file read when `--config` is not given (if it exists).
pub const DEFAULT_CONFIG_PATH: &str = "config/fundi.toml";

/// Everything `fundi serve` can be told.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct AppConfig {
    /// Listening and shutdown.
    pub server: ServerConfig,
    /// Where tasks are stored.
    pub store: StoreConfig,
    /// How tasks run.
    pub runtime: RuntimeConfig,
    /// Which built-in skills run, and their settings.
    pub skills: SkillsConfig,
    /// The A2A endpoint and agent card.
    pub gateway: GatewayConfig,
    /// Who may call the A2A endpoint.
    pub auth: AuthConfig,
    /// Push notifications.
    pub push: PushSettings,
    /// OpenTelemetry and Prometheus.
    pub telemetry: TelemetryConfig,
    /// Logging.
    pub log: LogConfig,
    /// The MCP tools (`/mcp`, and `fundi mcp`).
    pub mcp: McpConfig,
    /// The other A2A agents this server may delegate to, by name (`[peers.<name>]`).
    pub peers: BTreeMap<String, PeerConfig>,
    /// The keys that sign the agent card.
    pub card_signing: CardSigningConfig,
    /// Requests for access by other agents: the identity providers that vouch for the
    /// people behind them, and the bounds on their requests.
    pub friends: FriendsConfig,
}

/// The keys that sign the agent card (A2A §8.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct CardSigningConfig {
    /// Sign the agent card, and publish the keys at `/.well-known/jwks.json`. Default:
    /// true.
    pub enabled: bool,
    /// The key file (made on first start when missing). Default:
    /// `<data dir>/card-signing-keys.json`. Several nodes serving one card share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
    /// How long a key replaced by `fundi rotate-card-key` stays published, in days.
    /// Default: 30.
    pub keep_retired_days: u64,
}

impl Default for CardSigningConfig {
    fn default() -> Self {
        CardSigningConfig {
            enabled: true,
            key_file: None,
            keep_retired_days: 30,
        }
    }
}

/// The MCP tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct McpConfig {
    /// Serve the tools over streamable HTTP at `/mcp` on `fundi serve`. Default: true.
    pub enabled: bool,
    /// Offer the tools that change anything (submit, cancel, respond to a proposal).
    /// Default: false (read-only).
    pub allow_writes: bool,
    /// The longest `fundi_wait_for_task` waits, in seconds (no tool call lasts
    /// longer). Default: 25.
    pub wait_ceiling_s: u64,
    /// Most MCP sessions one user holds open at `/mcp`; an `initialize` past it gets
    /// HTTP 429. Default: 16.
    pub max_sessions_per_user: usize,
    /// A session unused this long, in seconds, is closed (its id then gets 404).
    /// Default: 300.
    pub session_idle_timeout_s: u64,
    /// The fundi server `fundi mcp` talks to (`FUNDI_URL` and `--url` win). Default:
    /// http://127.0.0.1:8080.
    pub url: Option<String>,
    /// The bearer token `fundi mcp` sends (`FUNDI_TOKEN` and `--token` win).
    pub token: Option<String>,
    /// The user token `fundi mcp` sends (`FUNDI_USER_TOKEN` and `--user-token` win).
    pub user_token: Option<String>,
    /// The header carrying it (`FUNDI_USER_HEADER` wins). Default: X-Fundi-User-Token.
    pub user_header: Option<String>,
    /// The credentials file a local server wrote, for the fields not set otherwise
    /// (`FUNDI_CREDENTIALS` and `--credentials` win). Default: data/credentials.json.
    pub credentials_file: Option<std::path::PathBuf>,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            enabled: true,
            allow_writes: false,
            wait_ceiling_s: 25,
            max_sessions_per_user: 16,
            session_idle_timeout_s: 300,
            url: None,
            token: None,
            user_token: None,
            user_header: None,
            credentials_file: None,
        }
    }
}

impl McpConfig {
    /// The tools' settings.
    pub fn settings(&self) -> fundi_mcp::Settings {
        fundi_mcp::Settings {
            allow_writes: self.allow_writes,
            wait_ceiling: std::time::Duration::from_secs(self.wait_ceiling_s),
        }
    }
}

/// Listening and shutdown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Address to listen on. Default: 127.0.0.1:8080 (loopback only).
    pub bind: SocketAddr,
    /// On SIGINT/SIGTERM, how long running tasks get to finish before the rest is left
    /// to recovery, in ms. Default: 10000.
    pub shutdown_grace_ms: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            shutdown_grace_ms: 10_000,
        }
    }
}

/// Built-in skills.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct SkillsConfig {
    /// Ids of the built-in skills to register. Default: echo, a11y-audit,
    /// security-scan, chaos-run, heal-issue and delegate (`inbox` is enabled by naming
    /// it).
    pub enabled: Vec<String>,
    /// Settings of the `echo` skill.
    pub echo: EchoConfig,
    /// Settings of the `a11y-audit` skill.
    pub a11y_audit: A11yConfig,
    /// Settings of the `security-scan` skill.
    pub security_scan: SecurityConfig,
    /// Settings of the `chaos-run` skill.
    pub chaos_run: ChaosConfig,
    /// Settings of the `heal-issue` skill (and the self-healing loop).
    pub heal_issue: HealConfig,
    /// Settings of the `inbox` skill.
    pub inbox: InboxConfig,
    /// Settings of the `delegate` skill.
    pub delegate: DelegateConfig,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        SkillsConfig {
            enabled: DEFAULT_SKILLS.iter().map(|s| (*s).to_owned()).collect(),
            echo: EchoConfig::default(),
            a11y_audit: A11yConfig::default(),
            security_scan: SecurityConfig::default(),
            chaos_run: ChaosConfig::default(),
            heal_issue: HealConfig::default(),
            inbox: InboxConfig::default(),
            delegate: DelegateConfig::default(),
        }
    }
}

/// Logging.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct LogConfig {
    /// A tracing filter, e.g. `info` or `fundi_runtime=debug,info`; `RUST_LOG`, when
    /// set, wins. Default: info.
    pub filter: String,
    /// `text` (colours only on a terminal) or `json` (one object per line, for log
    /// collectors). Default: text.
    pub format: LogFormat,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            filter: "info".into(),
            format: LogFormat::Text,
        }
    }
}

/// The built-in skills there are.
pub const BUILT_IN_SKILLS: [&str; 7] = [
    "echo",
    "a11y-audit",
    "security-scan",
    "chaos-run",
    "heal-issue",
    "inbox",
    "delegate",
];

/// The built-in skills enabled unless `skills.enabled` says otherwise.
pub const DEFAULT_SKILLS: [&str; 6] = [
    "echo",
    "a11y-audit",
    "security-scan",
    "chaos-run",
    "heal-issue",
    "delegate",
];

impl AppConfig {
    /// Reads defaults < file < environment. `path` given: the file must exist. Not
    /// given: `config/fundi.toml` is read if it exists.
    pub fn load(path: Option<&Path>) -> anyhow::Result<AppConfig> {
        let mut figment = Figment::from(Serialized::defaults(AppConfig::default()));
        match path {
            Some(path) => {
                if !path.is_file() {
                    bail!("config file {} does not exist", path.display());
                }
                figment = figment.merge(Toml::file_exact(path));
            }
            None if Path::new(DEFAULT_CONFIG_PATH).is_file() => {
                figment = figment.merge(Toml::file_exact(DEFAULT_CONFIG_PATH));
            }
            None => {}
        }
        let env = Env::prefixed("FUNDI__")
            .split("__")
            .map(|key| key.as_str().replace('_', "-").into());
        let config: AppConfig = figment
            .merge(env)
            .extract()
            .map_err(|e| anyhow::anyhow!(describe(e)))
            .context("invalid configuration")?;
        config.validate()?;
        Ok(config)
    }

    /// Checks what serde cannot, naming the field.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.runtime.validate().map_err(anyhow::Error::msg)?;
        self.gateway.validate().map_err(anyhow::Error::msg)?;
        self.auth.validate().map_err(anyhow::Error::msg)?;
        self.push.validate().map_err(anyhow::Error::msg)?;
        self.telemetry.validate()?;
        self.skills
            .a11y_audit
            .validate()
            .map_err(anyhow::Error::msg)?;
        self.skills
            .chaos_run
            .validate()
            .map_err(anyhow::Error::msg)?;
        self.skills
            .heal_issue
            .validate()
            .map_err(anyhow::Error::msg)?;
        self.skills
            .delegate
            .validate()
            .map_err(anyhow::Error::msg)?;
        for (name, peer) in &self.peers {
            peer.validate(name).map_err(anyhow::Error::msg)?;
        }
        self.friends.validate().map_err(anyhow::Error::msg)?;
        if !self.server.bind.ip().is_loopback() && !self.auth.is_production_grade() {
            bail!(
                "refusing to listen on {}: it is not a loopback address, and static tokens are \
                 for local use only; configure auth.mode = \"jwt\" (with auth.machine and \
                 auth.user) to serve beyond this machine",
                self.server.bind
            );
        }
        if let Some(unknown) = self
            .skills
            .enabled
            .iter()
            .find(|s| !BUILT_IN_SKILLS.contains(&s.as_str()))
        {
            bail!(
                "skills.enabled: unknown skill {unknown:?} (built-in skills: {BUILT_IN_SKILLS:?})"
            );
        }
        self.store.validate()?;
        if self.mcp.max_sessions_per_user == 0 {
            bail!("mcp.max-sessions-per-user must be at least 1");
        }
        if self.mcp.session_idle_timeout_s == 0 {
            bail!("mcp.session-idle-timeout-s must be at least 1");
        }
        if self.server.shutdown_grace_ms > 600_000 {
            bail!("server.shutdown-grace-ms must be at most 600000 (10 minutes)");
        }
        Ok(())
    }
}

/// Every figment error, each naming its key and source.
fn describe(error: figment::Error) -> String {
    error
        .into_iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests;
