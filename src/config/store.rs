//! `[store]` and `[store.postgres]`: which store keeps the tasks, how durable a change
//! is, and how the PostgreSQL store connects, leases and sends its statements.

use std::path::PathBuf;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

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
    /// Checks what serde cannot, naming the field.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.retention()?;
        self.postgres_statement_timeout()?;
        self.postgres_lease()?;
        if self.postgres.statements_at_once == 0 {
            bail!("store.postgres.statements-at-once must be at least 1");
        }
        if self.durability == DurabilityMode::Batched && self.flush_window_ms == 0 {
            bail!("store.flush-window-ms must be at least 1 with durability = \"batched\"");
        }
        if self.cache_mb == 0 {
            bail!("store.cache-mb must be at least 1");
        }
        Ok(())
    }

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
