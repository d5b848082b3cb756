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

/// Which store keeps the tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StoreKind {
    /// sled, on disk (the embedded default).
    Sled,
    /// In memory: everything is lost at exit (demos, tests).
    Memory,
    /// PostgreSQL, at `store.postgres.url` (several nodes share one schema when each
    /// sets `store.postgres.node-id`).
    Postgres,
}

/// When a change is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DurabilityMode {
    /// Flushed before it is acknowledged (concurrent writers share flushes).
    Sync,
    /// Flushed within `flush-window-ms`; a crash loses at most that window.
    Batched,
}

/// Where tasks are stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct StoreConfig {
    /// `sled`, `memory` or `postgres`. Default: sled.
    pub kind: StoreKind,
    /// The sled directory. Default: `data`.
    pub path: PathBuf,
    /// `sync` or `batched`. Default: sync.
    pub durability: DurabilityMode,
    /// With `batched`: the longest a change stays unflushed, in ms. Default: 10.
    pub flush_window_ms: u64,
    /// sled's page cache, in MiB: the store's memory, whatever the number of stored
    /// tasks. Default: 256.
    pub cache_mb: u64,
    /// How long an ended task is kept after its last change ("30d", "12h"): older ones
    /// are removed in the background, whole. Unset (the default): kept for ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<String>,
    /// With `kind = "postgres"`: where the database is.
    pub postgres: PostgresStoreConfig,
}

/// `[store.postgres]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct PostgresStoreConfig {
    /// A `postgres://user@host:port/database` URL. Required with `kind = "postgres"`.
    /// With `?sslmode=require` the connection is TLS and the server's certificate is
    /// verified (public roots, or `ca-file`); otherwise it is plain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A PEM file of CA certificates trusted for the database's certificate, beside the
    /// public roots (a private CA, a cloud provider's). Only with `sslmode=require`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// The schema fundi's tables live in (created if missing). Default: `public`.
    pub schema: String,
    /// Most connections open at once. Default: 16.
    pub pool_size: usize,
    /// Commits (and, apart, first-message lookups) this node has under way at once, at
    /// most: those that arrive meanwhile wait for one to end and go together in the
    /// next statement. The database's cost is mostly per statement, so fewer make
    /// larger statements and, on a database with few cores, more sends per second;
    /// more keep more of a large database's cores busy. At least 1; more than
    /// `pool-size` counts as `pool-size`. Default: 2.
    pub statements_at_once: usize,
    /// Longest one statement may run before PostgreSQL cancels it (and the write or read
    /// fails), like "30s"; "0s" leaves the server's own `statement_timeout`. Default: 30s.
    pub statement_timeout: String,
    /// This node's id, for several nodes on one schema (unique among them, the same
    /// across its restarts): tasks are leased to nodes, and any node answers for any
    /// task. Unset (the default): this node is the schema's only one, and a second is
    /// refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// With `node-id`: how long a lease lasts unless renewed, like "10s": how long a dead
    /// node's tasks, push deliveries and schedule firings wait before another node takes
    /// them over. Default: 10s.
    pub lease_time: String,
    /// With `node-id`: how long the node goes on without renewing its leases before it
    /// cuts itself off (stops its runs, answers 503, writes nothing until it holds the
    /// database again), like "6s"; shorter than `lease-time`, so that its runs have
    /// stopped before another node may take them. Default: two thirds of `lease-time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_deadline: Option<String>,
}

impl Default for PostgresStoreConfig {
    fn default() -> Self {
        PostgresStoreConfig {
            url: None,
            ca_file: None,
            schema: "public".into(),
            pool_size: 16,
            statements_at_once: 2,
            statement_timeout: "30s".into(),
            node_id: None,
            lease_time: "10s".into(),
            renew_deadline: None,
        }
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            kind: StoreKind::Sled,
            path: PathBuf::from("data"),
            durability: DurabilityMode::Sync,
            flush_window_ms: 10,
            cache_mb: 256,
            retention: None,
            postgres: PostgresStoreConfig::default(),
        }
    }
}

impl StoreConfig {
    /// `postgres.statement-timeout` read; `None` for "0s" (the server's own).
    pub fn postgres_statement_timeout(&self) -> anyhow::Result<Option<std::time::Duration>> {
        let text = &self.postgres.statement_timeout;
        let timeout = humantime::parse_duration(text).with_context(|| {
            format!(
                "store.postgres.statement-timeout must be a duration like \"30s\", got {text:?}"
            )
        })?;
        Ok((!timeout.is_zero()).then_some(timeout))
    }

    /// `postgres.node-id` and `lease-time` read: this node's lease settings, or `None`
    /// for the schema's only node.
    pub fn postgres_lease(&self) -> anyhow::Result<Option<fundi_postgres::LeaseConfig>> {
        let Some(node) = &self.postgres.node_id else {
            return Ok(None);
        };
        if self.kind != StoreKind::Postgres {
            bail!(
                "store.postgres.node-id is for several nodes on one PostgreSQL schema; it needs \
                 store.kind = \"postgres\" (a sled store belongs to one process)"
            );
        }
        if node.trim().is_empty() || node.len() > 128 || node.chars().any(char::is_control) {
            bail!("store.postgres.node-id must be 1 to 128 characters without control characters");
        }
        let text = &self.postgres.lease_time;
        let ttl = humantime::parse_duration(text).with_context(|| {
            format!("store.postgres.lease-time must be a duration like \"10s\", got {text:?}")
        })?;
        if ttl < std::time::Duration::from_secs(1) {
            bail!("store.postgres.lease-time must be at least 1s, got {text:?}");
        }
        let lease = fundi_postgres::LeaseConfig::new(node.clone(), ttl);
        let Some(text) = &self.postgres.renew_deadline else {
            return Ok(Some(lease));
        };
        let deadline = humantime::parse_duration(text).with_context(|| {
            format!("store.postgres.renew-deadline must be a duration like \"6s\", got {text:?}")
        })?;
        // At least a tenth of the lease is left for runs to stop in.
        if deadline.is_zero() || deadline > ttl * 9 / 10 {
            bail!(
                "store.postgres.renew-deadline must be more than 0s and at most nine tenths of \
                 store.postgres.lease-time ({}), so that a node cut off stops its runs before \
                 another node may take them; got {text:?}",
                humantime::format_duration(ttl)
            );
        }
        Ok(Some(lease.with_renew_deadline(deadline)))
    }

    /// `retention` read: how long an ended task is kept; `None`: for ever.
    pub fn retention(&self) -> anyhow::Result<Option<std::time::Duration>> {
        let Some(text) = &self.retention else {
            return Ok(None);
        };
        let kept = humantime::parse_duration(text).with_context(|| {
            format!("store.retention must be a duration like \"30d\" or \"12h\", got {text:?}")
        })?;
        if kept.is_zero() {
            bail!("store.retention must be longer than 0 (leave it unset to keep every task)");
        }
        Ok(Some(kept))
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
        self.store.retention()?;
        self.store.postgres_statement_timeout()?;
        self.store.postgres_lease()?;
        if self.store.postgres.statements_at_once == 0 {
            bail!("store.postgres.statements-at-once must be at least 1");
        }
        if self.store.durability == DurabilityMode::Batched && self.store.flush_window_ms == 0 {
            bail!("store.flush-window-ms must be at least 1 with durability = \"batched\"");
        }
        if self.store.cache_mb == 0 {
            bail!("store.cache-mb must be at least 1");
        }
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
mod tests {
    use super::*;

    /// The shipped file must parse, and say what the defaults are (plus the one
    /// documented difference, the default skill).
    #[test]
    fn the_shipped_config_file_is_the_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_CONFIG_PATH);
        let from_file: AppConfig = Figment::from(Serialized::defaults(AppConfig::default()))
            .merge(Toml::file_exact(path))
            .extract()
            .unwrap();
        let mut expected = AppConfig::default();
        expected.runtime.default_skill = Some("echo".into());
        assert_eq!(from_file, expected);
    }

    fn parse(toml: &str) -> Result<AppConfig, String> {
        Figment::from(Serialized::defaults(AppConfig::default()))
            .merge(Toml::string(toml))
            .extract::<AppConfig>()
            .map_err(describe)
    }

    #[test]
    fn bad_values_are_refused_naming_the_field() {
        let err = parse("[store]\ndurability = \"sometimes\"").unwrap_err();
        assert!(err.contains("store.durability"), "{err}");
        let err = parse("[runtime]\ncancel-grace-ms = \"soon\"").unwrap_err();
        assert!(err.contains("runtime.cancel-grace-ms"), "{err}");
        let err = parse("[server]\nbindd = \"127.0.0.1:1\"").unwrap_err();
        assert!(err.contains("bindd"), "{err}");
        let mut config = parse("[skills]\nenabled = [\"echo\", \"nope\"]").unwrap();
        let err = config.validate().unwrap_err().to_string();
        assert!(
            err.contains("skills.enabled") && err.contains("nope"),
            "{err}"
        );
        config = parse("[store.postgres]\nstatement-timeout = \"a while\"").unwrap();
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("store.postgres.statement-timeout"), "{err}");
        config = parse("[store.postgres]\nstatements-at-once = 0").unwrap();
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("store.postgres.statements-at-once"), "{err}");
        // A pool smaller than the default needs no setting of its own.
        config = parse("[store.postgres]\npool-size = 1").unwrap();
        config.validate().unwrap();
        assert_eq!(AppConfig::default().store.postgres.statements_at_once, 2);
        config = parse("[store.postgres]\nstatement-timeout = \"0s\"").unwrap();
        assert_eq!(config.store.postgres_statement_timeout().unwrap(), None);
        assert_eq!(
            AppConfig::default()
                .store
                .postgres_statement_timeout()
                .unwrap(),
            Some(std::time::Duration::from_secs(30))
        );
        for (toml, field) in [
            ("node-id = \"\"", "store.postgres.node-id"),
            (
                "node-id = \"n1\"\nlease-time = \"soon\"",
                "store.postgres.lease-time",
            ),
            ("node-id = \"n1\"\nlease-time = \"100ms\"", "at least 1s"),
            (
                "node-id = \"n1\"\nrenew-deadline = \"later\"",
                "store.postgres.renew-deadline",
            ),
            (
                "node-id = \"n1\"\nlease-time = \"10s\"\nrenew-deadline = \"10s\"",
                "at most nine tenths",
            ),
        ] {
            config = parse(&format!(
                "[store]\nkind = \"postgres\"\n[store.postgres]\n{toml}"
            ))
            .unwrap();
            let err = config.validate().unwrap_err().to_string();
            assert!(err.contains(field), "{toml}: {err}");
        }
        config = parse("[store.postgres]\nnode-id = \"n1\"").unwrap();
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("needs store.kind = \"postgres\""), "{err}");
        config = parse("[store]\nkind = \"postgres\"\n[store.postgres]\nnode-id = \"n1\"").unwrap();
        let lease = config.store.postgres_lease().unwrap().unwrap();
        assert_eq!(
            (lease.node.as_str(), lease.ttl, lease.renew_deadline),
            (
                "n1",
                std::time::Duration::from_secs(10),
                std::time::Duration::from_secs(10) * 2 / 3
            )
        );
        config = parse(
            "[store]\nkind = \"postgres\"\n[store.postgres]\nnode-id = \"n1\"\nrenew-deadline = \"5s\"",
        )
        .unwrap();
        let lease = config.store.postgres_lease().unwrap().unwrap();
        assert_eq!(lease.renew_deadline, std::time::Duration::from_secs(5));
        assert_eq!(AppConfig::default().store.postgres_lease().unwrap(), None);
        config = parse("[runtime]\nmax-concurrent-runs = 0").unwrap();
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("runtime.max-concurrent-runs"), "{err}");
        config = parse("[skills.chaos-run]\nallowed-targets = [\"db.internal\"]").unwrap();
        let err = config.validate().unwrap_err().to_string();
        assert!(
            err.contains("skills.chaos-run.allowed-targets") && err.contains("host:port"),
            "{err}"
        );
        for (toml, field) in [
            (
                "workspaces = [\"srv\"]",
                "workspaces[0] must be an absolute path",
            ),
            ("cookie-flags = [\"Partitioned\"]", "cookie-flags"),
            (
                "[[skills.heal-issue.loop]]\nsource = \"chaos-run\"\nsite = \"http://x/\"\n\
                 repository = \"/srv\"",
                "loop[0].source",
            ),
            (
                "[[skills.heal-issue.loop]]\nsource = \"a11y-audit\"\nmin-severity = \"high\"\n\
                 site = \"http://x/\"\nrepository = \"/srv\"",
                "loop[0].min-severity",
            ),
        ] {
            config = parse(&format!("[skills.heal-issue]\n{toml}")).unwrap();
            let err = config.validate().unwrap_err().to_string();
            assert!(err.contains(field), "{toml}: {err}");
        }
    }
}
