//! `[skills.chaos-run]` settings.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::target::Target;

/// Targets, bounds and listen addresses for chaos runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ChaosConfig {
    /// Targets a run may put its proxy in front of: `host:port` (TCP) or an
    /// `http(s)://` origin; anything else is refused. Default: none.
    pub allowed_targets: Vec<String>,
    /// Whether the proxy may listen on an address other than loopback (where other
    /// machines could reach it). Default: false.
    pub allow_non_loopback_listen: bool,
    /// Longest a run's plan may last (the sum of its phases), in seconds. Default: 600.
    pub max_duration_s: u64,
    /// Ports a run's proxy may listen on, as `first-last` (port 0, a port the system
    /// picks, is always allowed). Default: "1024-65535" (no privileged port).
    pub listen_ports: PortRange,
    /// The addresses this server itself listens on, which a proxy may never take (set
    /// by the server at start, not a setting).
    #[serde(skip)]
    pub own_listeners: Vec<SocketAddr>,
    /// Most phases in a plan. Default: 20.
    pub max_phases: usize,
    /// Most probes a second a run may ask for. Default: 50.
    pub max_probe_rate: u32,
    /// Most connections the proxy holds open at once; more are closed as they come (a
    /// genuine error, never a chaos event). Default: 1000.
    pub max_connections: usize,
    /// Most chaos events one run records in the log; the rest are still counted (in
    /// the report and in `fundi.chaos.events`). Default: 10000.
    pub max_events: usize,
}

impl Default for ChaosConfig {
    fn default() -> Self {
        ChaosConfig {
            allowed_targets: Vec::new(),
            allow_non_loopback_listen: false,
            listen_ports: PortRange {
                first: 1024,
                last: 65535,
            },
            own_listeners: Vec::new(),
            max_duration_s: 600,
            max_phases: 20,
            max_probe_rate: 50,
            max_connections: 1000,
            max_events: 10_000,
        }
    }
}

/// An inclusive range of TCP ports, written `first-last` ("20000-20999").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PortRange {
    /// The first port of the range.
    pub first: u16,
    /// The last port of the range.
    pub last: u16,
}

impl PortRange {
    /// Whether `port` is in the range.
    pub fn contains(&self, port: u16) -> bool {
        (self.first..=self.last).contains(&port)
    }
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

impl TryFrom<String> for PortRange {
    type Error = String;

    fn try_from(text: String) -> Result<PortRange, String> {
        let wrong = || format!("{text:?} is not a port range like 20000-20999");
        let (first, last) = text.split_once('-').ok_or_else(wrong)?;
        let first: u16 = first.trim().parse().map_err(|_| wrong())?;
        let last: u16 = last.trim().parse().map_err(|_| wrong())?;
        if first == 0 || first > last {
            return Err(wrong());
        }
        Ok(PortRange { first, last })
    }
}

impl From<PortRange> for String {
    fn from(range: PortRange) -> String {
        range.to_string()
    }
}

impl ChaosConfig {
    /// Checks values that serde cannot; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        for target in &self.allowed_targets {
            Target::parse(target)
                .map_err(|e| format!("skills.chaos-run.allowed-targets: {target:?}: {e}"))?;
        }
        for (name, value) in [
            ("max-duration-s", self.max_duration_s as usize),
            ("max-phases", self.max_phases),
            ("max-probe-rate", self.max_probe_rate as usize),
            ("max-connections", self.max_connections),
        ] {
            if value == 0 {
                return Err(format!("skills.chaos-run.{name} must be at least 1"));
            }
        }
        Ok(())
    }
}
