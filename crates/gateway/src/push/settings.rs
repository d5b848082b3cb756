//! `[push]` settings: limits, retry policy and the SSRF policy of webhook deliveries.

use serde::{Deserialize, Serialize};

/// How push notifications are accepted and delivered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct PushSettings {
    /// Serve the push-config methods and deliver (the card then says
    /// `pushNotifications: true`). Default: true.
    pub enabled: bool,
    /// Most configs one task may have. Default: 10.
    pub max_configs_per_task: usize,
    /// Host names or IP addresses a webhook may use even though they are (or resolve to)
    /// loopback, private, link-local or other non-public addresses: for local setups and
    /// tests. Default: none.
    pub allowed_hosts: Vec<String>,
    /// Accept every non-public address (local development only). Default: false.
    pub allow_private_networks: bool,
    /// Longest one delivery (connect, send, answer) may take, in ms. Default: 10000.
    pub timeout_ms: u64,
    /// Attempts per event before delivery to the config is given up. Default: 10.
    pub max_attempts: u32,
    /// Wait after the first failed attempt, in ms; doubled each time. Default: 500.
    pub initial_backoff_ms: u64,
    /// Longest wait between attempts, in ms. Default: 60000.
    pub max_backoff_ms: u64,
    /// An event still failing this long after its first attempt is given up, in
    /// seconds. Default: 3600.
    pub max_age_secs: u64,
}

impl Default for PushSettings {
    fn default() -> Self {
        PushSettings {
            enabled: true,
            max_configs_per_task: 10,
            allowed_hosts: Vec::new(),
            allow_private_networks: false,
            timeout_ms: 10_000,
            max_attempts: 10,
            initial_backoff_ms: 500,
            max_backoff_ms: 60_000,
            max_age_secs: 3600,
        }
    }
}

impl PushSettings {
    /// Checks values that serde cannot; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_configs_per_task == 0 {
            return Err("push.max-configs-per-task must be at least 1".into());
        }
        if self.timeout_ms == 0 {
            return Err("push.timeout-ms must be at least 1".into());
        }
        if self.max_attempts == 0 {
            return Err("push.max-attempts must be at least 1".into());
        }
        if self.initial_backoff_ms == 0 || self.max_backoff_ms < self.initial_backoff_ms {
            return Err(
                "push.initial-backoff-ms must be at least 1 and at most push.max-backoff-ms".into(),
            );
        }
        Ok(())
    }
}
