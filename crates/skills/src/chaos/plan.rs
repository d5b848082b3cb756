//! What a chaos run is asked to do (its message's data part), checked against the
//! skill's settings before anything listens:
//!
//! ```json
//! {"target": "http://127.0.0.1:8081", "listen": "127.0.0.1:0",
//!  "plan": [{"name": "baseline", "durationMs": 5000},
//!           {"name": "fault", "durationMs": 10000, "faults": [
//!              {"type": "latency", "attributes": {"latency": 200, "jitter": 20}}]},
//!           {"name": "recovery", "durationMs": 5000}],
//!  "probe": {"kind": "http", "path": "/health", "ratePerSecond": 5, "timeoutMs": 2000},
//!  "slo": {"successRate": 0.99, "p99Ms": 500}, "seed": 7}
//! ```

use std::net::SocketAddr;
use std::time::Duration;

use fundi_runtime::{Message, PartContent};
use serde_json::{Map, Value};

use super::config::ChaosConfig;
use super::fault::{Fault, FaultKind};
use super::fields::{object, share, text, whole};
use super::target::Target;

/// Most faults in one phase.
const MAX_FAULTS: usize = 16;
/// Longest a probe may wait for its answer, in ms.
const MAX_PROBE_TIMEOUT_MS: u64 = 30_000;

/// A checked request.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) target: Target,
    pub(crate) listen: SocketAddr,
    pub(crate) phases: Vec<Phase>,
    pub(crate) probe: Option<Probe>,
    /// Seeds the draws of which connections (and requests) a fault affects: the same
    /// seed and the same traffic give the same draws.
    pub(crate) seed: Option<u64>,
}

/// One phase of the plan.
#[derive(Debug, Clone)]
pub(crate) struct Phase {
    pub(crate) name: String,
    pub(crate) duration: Duration,
    pub(crate) faults: Vec<Fault>,
    /// What the probe figures of this phase are held to, if anything.
    pub(crate) slo: Option<Slo>,
}

/// Probe traffic through the proxy.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Probe {
    pub(crate) kind: ProbeKind,
    pub(crate) rate: u32,
    pub(crate) timeout: Duration,
}

/// What one probe does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ProbeKind {
    /// `GET path` on a new connection; a response below 500 is a success.
    Http { path: String },
    /// A TCP connect; an established connection is a success.
    Tcp,
}

/// Service levels a phase's probe figures are held to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Slo {
    /// Share of probes that succeed, at least.
    pub(crate) success_rate: Option<f64>,
    /// The 99th percentile of successful probes' latency, at most, in ms.
    pub(crate) p99_ms: Option<u64>,
}

impl Plan {
    /// The plan of a task's first message; the error names the field.
    pub(crate) fn read(message: &Message, config: &ChaosConfig) -> Result<Plan, String> {
        let data = message
            .parts
            .iter()
            .find_map(|p| match &p.content {
                PartContent::Data(d) => Some(d),
                _ => None,
            })
            .ok_or(
                "chaos-run needs a data part: {\"target\": \"host:port\", \"plan\": \
                 [{\"name\": \"fault\", \"durationMs\": 10000, \"faults\": [...]}]}",
            )?;
        Plan::parse(data, config)
    }

    /// The plan of a data part.
    pub(crate) fn parse(data: &Value, config: &ChaosConfig) -> Result<Plan, String> {
        let map = object(
            "data",
            data,
            &["target", "listen", "plan", "probe", "slo", "seed"],
        )?;
        let raw = text("data", map, "target")?.ok_or("data.target is missing")?;
        let target = Target::parse(raw).map_err(|e| format!("data.target {raw:?}: {e}"))?;
        let allowed: Vec<Target> = config
            .allowed_targets
            .iter()
            .filter_map(|t| Target::parse(t).ok())
            .collect();
        if !allowed.contains(&target) {
            let list: Vec<String> = allowed.iter().map(ToString::to_string).collect();
            return Err(format!(
                "data.target {target} is not an allowed target for chaos-run (allowed: {}); \
                 an operator can add it to skills.chaos-run.allowed-targets",
                if list.is_empty() {
                    "none".to_owned()
                } else {
                    list.join(", ")
                }
            ));
        }
        let listen = match text("data", map, "listen")? {
            None => SocketAddr::from(([127, 0, 0, 1], 0)),
            Some(raw) => raw.parse().map_err(|_| {
                format!("data.listen {raw:?} is not an address like 127.0.0.1:0 (an IP and a port)")
            })?,
        };
        if !listen.ip().is_loopback() && !config.allow_non_loopback_listen {
            return Err(format!(
                "data.listen {listen} is not a loopback address; an operator can allow it with \
                 skills.chaos-run.allow-non-loopback-listen"
            ));
        }
        check_listen_port(listen, config)?;
        let slo = match map.get("slo") {
            None | Some(Value::Null) => None,
            Some(value) => Some(Slo::parse("data.slo", value)?),
        };
        let phases = phases(map, &target, slo, config)?;
        let probe = match map.get("probe") {
            None | Some(Value::Null) => None,
            Some(value) => Some(Probe::parse(value, &target, config)?),
        };
        if probe.is_none() && phases.iter().any(|p| p.slo.is_some()) {
            return Err("data.slo needs a probe (data.probe) to measure it with".into());
        }
        let seed = match map.get("seed") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                value
                    .as_u64()
                    .ok_or_else(|| format!("data.seed must be a whole number, got {value}"))?,
            ),
        };
        Ok(Plan {
            target,
            listen,
            phases,
            probe,
            seed,
        })
    }

    /// How long the plan lasts.
    pub(crate) fn duration(&self) -> Duration {
        self.phases.iter().map(|p| p.duration).sum()
    }
}

fn phases(
    map: &Map<String, Value>,
    target: &Target,
    slo: Option<Slo>,
    config: &ChaosConfig,
) -> Result<Vec<Phase>, String> {
    let items = match map.get("plan") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        _ => return Err("data.plan must be a list of phases, at least one".into()),
    };
    if items.len() > config.max_phases {
        return Err(format!(
            "data.plan has {} phases; at most {} (skills.chaos-run.max-phases)",
            items.len(),
            config.max_phases
        ));
    }
    let max_ms = config.max_duration_s.saturating_mul(1000);
    let mut phases: Vec<Phase> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("data.plan[{i}]");
        let phase = object(&path, item, &["name", "durationMs", "faults", "slo"])?;
        let name = text(&path, phase, "name")?
            .map(str::to_owned)
            .unwrap_or_else(|| format!("phase-{}", i + 1));
        if name.is_empty() || name.len() > 64 {
            return Err(format!("{path}.name must be 1 to 64 characters"));
        }
        if phases.iter().any(|p| p.name == name) {
            return Err(format!("{path}.name {name:?} names an earlier phase too"));
        }
        // The plan's length is checked as a whole below, naming the setting.
        let ms = whole(
            &path,
            phase,
            "durationMs",
            None,
            (100, u64::from(u32::MAX)),
            "a whole number of ms",
        )?;
        let faults = match phase.get("faults") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(faults)) if faults.len() <= MAX_FAULTS => faults
                .iter()
                .enumerate()
                .map(|(j, f)| Fault::parse(&format!("{path}.faults[{j}]"), f))
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(format!(
                    "{path}.faults must be a list of at most {MAX_FAULTS} faults"
                ));
            }
        };
        for (j, fault) in faults.iter().enumerate() {
            if fault.kind.is_http() && !target.is_http() {
                return Err(format!(
                    "{path}.faults[{j}]: {} needs an http(s):// target (this one is TCP)",
                    fault.kind.name()
                ));
            }
        }
        if faults.iter().filter(|f| f.kind == FaultKind::Down).count() > 1 {
            return Err(format!("{path}.faults: one down fault per phase"));
        }
        let slo = match phase.get("slo") {
            None => slo,
            Some(Value::Null) => None,
            Some(value) => Some(Slo::parse(&format!("{path}.slo"), value)?),
        };
        phases.push(Phase {
            name,
            duration: Duration::from_millis(ms),
            faults,
            slo,
        });
    }
    let total: u128 = phases.iter().map(|p| p.duration.as_millis()).sum();
    if total > u128::from(max_ms) {
        return Err(format!(
            "data.plan lasts {} s in all; at most {} s (skills.chaos-run.max-duration-s)",
            total / 1000,
            config.max_duration_s
        ));
    }
    Ok(phases)
}

impl Probe {
    fn parse(value: &Value, target: &Target, config: &ChaosConfig) -> Result<Probe, String> {
        let path = "data.probe";
        let map = object(path, value, &["kind", "path", "ratePerSecond", "timeoutMs"])?;
        let kind = match text(path, map, "kind")? {
            None if target.is_http() => "http",
            None => "tcp",
            Some(kind) => kind,
        };
        let kind = match kind {
            "http" => {
                let at = text(path, map, "path")?.unwrap_or("/");
                if !at.starts_with('/') || at.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    return Err(format!(
                        "data.probe.path {at:?} must be a path like /health"
                    ));
                }
                ProbeKind::Http {
                    path: at.to_owned(),
                }
            }
            "tcp" if map.contains_key("path") => {
                return Err("data.probe.path is for http probes (this one is tcp)".into());
            }
            "tcp" => ProbeKind::Tcp,
            other => {
                return Err(format!(
                    "data.probe.kind must be \"http\" or \"tcp\", got {other:?}"
                ));
            }
        };
        let max = u64::from(config.max_probe_rate);
        let rate = whole(
            path,
            map,
            "ratePerSecond",
            Some(5),
            (1, max),
            "probes a second",
        )?;
        let timeout = whole(
            path,
            map,
            "timeoutMs",
            Some(2000),
            (1, MAX_PROBE_TIMEOUT_MS),
            "a whole number of ms",
        )?;
        Ok(Probe {
            kind,
            rate: rate as u32,
            timeout: Duration::from_millis(timeout),
        })
    }
}

impl Slo {
    fn parse(path: &str, value: &Value) -> Result<Slo, String> {
        let map = object(path, value, &["successRate", "p99Ms"])?;
        let success_rate = share(path, map, "successRate", None)?;
        let p99_ms = match map.get("p99Ms") {
            None | Some(Value::Null) => None,
            Some(_) => Some(whole(
                path,
                map,
                "p99Ms",
                None,
                (1, MAX_PROBE_TIMEOUT_MS),
                "ms",
            )?),
        };
        if success_rate.is_none() && p99_ms.is_none() {
            return Err(format!("{path} must set successRate, p99Ms or both"));
        }
        Ok(Slo {
            success_rate,
            p99_ms,
        })
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

/// Refuses a proxy port outside `skills.chaos-run.listen-ports` (port 0 lets the system
/// pick one) and any address this server itself listens on.
fn check_listen_port(listen: SocketAddr, config: &ChaosConfig) -> Result<(), String> {
    let port = listen.port();
    if port != 0 && !config.listen_ports.contains(port) {
        return Err(format!(
            "data.listen port {port} is outside the ports chaos-run may listen on ({}); an \
             operator sets them with skills.chaos-run.listen-ports",
            config.listen_ports
        ));
    }
    let overlaps = |own: &SocketAddr| {
        own.port() == port
            && (own.ip() == listen.ip()
                || own.ip().is_unspecified()
                || listen.ip().is_unspecified())
    };
    if port != 0 && config.own_listeners.iter().any(overlaps) {
        return Err(format!(
            "data.listen {listen} is where this fundi server itself listens; choose another port"
        ));
    }
    Ok(())
}
