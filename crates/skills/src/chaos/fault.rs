//! The faults a chaos run injects, modelled on Toxiproxy's toxics (same names, same
//! attributes, same units) so that scenarios carry over, plus `down` and the HTTP faults
//! of an HTTP target.

use serde_json::{Value, json};

use super::fields::{object, share, text, whole};

/// Longest delay or timeout a fault may ask for, in ms (10 minutes, a plan's default cap).
const MAX_MS: u64 = 600_000;

/// Which way data flows: Toxiproxy's `stream`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Direction {
    /// From the client to the target.
    Upstream,
    /// From the target to the client (Toxiproxy's default).
    Downstream,
}

impl Direction {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Direction::Upstream => "upstream",
            Direction::Downstream => "downstream",
        }
    }
}

/// What a fault does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FaultKind {
    /// Each chunk waits `latency` ± `jitter` ms from when it arrived.
    Latency { latency: u64, jitter: u64 },
    /// At most `rate` KB (1000 bytes) a second.
    Bandwidth { rate: u64 },
    /// The close of the connection waits `delay` ms.
    SlowClose { delay: u64 },
    /// No data passes; the connection is closed after `timeout` ms (0: held open).
    Timeout { timeout: u64 },
    /// `timeout` ms after the first data, the connection is reset (TCP RST).
    ResetPeer { timeout: u64 },
    /// Data goes in slices of `average_size` ± `size_variation` bytes, `delay` µs apart.
    Slicer {
        average_size: u64,
        size_variation: u64,
        delay: u64,
    },
    /// The connection is closed once `bytes` have passed.
    LimitData { bytes: u64 },
    /// Connections are refused (toxicity 1: the listener closes for the phase) or, for a
    /// share of them, reset as soon as they are accepted.
    Down,
    /// A share of requests is answered with `status` without reaching the target.
    HttpError { status: u16 },
    /// A response's head waits `delay` ms.
    HeaderDelay { delay: u64 },
    /// A response's body waits `delay` ms after its head.
    BodyDelay { delay: u64 },
}

/// Every fault's type, as [`FaultKind::name`] spells them (the input schema lists them).
pub(crate) const FAULT_TYPES: [&str; 11] = [
    "latency",
    "bandwidth",
    "slow_close",
    "timeout",
    "reset_peer",
    "slicer",
    "limit_data",
    "down",
    "http_error",
    "header_delay",
    "body_delay",
];

impl FaultKind {
    /// The fault's type, as Toxiproxy (and the chaos-event log) names it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            FaultKind::Latency { .. } => "latency",
            FaultKind::Bandwidth { .. } => "bandwidth",
            FaultKind::SlowClose { .. } => "slow_close",
            FaultKind::Timeout { .. } => "timeout",
            FaultKind::ResetPeer { .. } => "reset_peer",
            FaultKind::Slicer { .. } => "slicer",
            FaultKind::LimitData { .. } => "limit_data",
            FaultKind::Down => "down",
            FaultKind::HttpError { .. } => "http_error",
            FaultKind::HeaderDelay { .. } => "header_delay",
            FaultKind::BodyDelay { .. } => "body_delay",
        }
    }

    /// Whether it acts on HTTP requests (and so needs an HTTP target).
    pub(crate) fn is_http(&self) -> bool {
        matches!(
            self,
            FaultKind::HttpError { .. }
                | FaultKind::HeaderDelay { .. }
                | FaultKind::BodyDelay { .. }
        )
    }

    fn attributes(&self) -> Value {
        match self {
            FaultKind::Latency { latency, jitter } => json!({"latency": latency, "jitter": jitter}),
            FaultKind::Bandwidth { rate } => json!({"rate": rate}),
            FaultKind::SlowClose { delay } => json!({"delay": delay}),
            FaultKind::Timeout { timeout } | FaultKind::ResetPeer { timeout } => {
                json!({"timeout": timeout})
            }
            FaultKind::Slicer {
                average_size,
                size_variation,
                delay,
            } => json!({"average_size": average_size, "size_variation": size_variation,
                        "delay": delay}),
            FaultKind::LimitData { bytes } => json!({"bytes": bytes}),
            FaultKind::Down => json!({}),
            FaultKind::HttpError { status } => json!({"status": status}),
            FaultKind::HeaderDelay { delay } | FaultKind::BodyDelay { delay } => {
                json!({"delay": delay})
            }
        }
    }
}

/// A fault of a phase: what, which way, and on what share of connections (or requests).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fault {
    /// The scenario's name for it (its type when unnamed).
    pub(crate) name: String,
    pub(crate) kind: FaultKind,
    pub(crate) stream: Direction,
    /// Share of connections affected (of requests, for HTTP faults), 0 to 1.
    pub(crate) toxicity: f64,
}

impl Fault {
    /// Reads a fault in Toxiproxy's shape: `{"type": "latency", "stream": "downstream",
    /// "toxicity": 1, "attributes": {"latency": 100, "jitter": 10}, "name": "..."}`.
    pub(crate) fn parse(path: &str, value: &Value) -> Result<Fault, String> {
        let map = object(
            path,
            value,
            &["type", "name", "stream", "toxicity", "attributes"],
        )?;
        let kind = text(path, map, "type")?.ok_or_else(|| {
            format!(
                "{path}.type is missing (one of: latency, bandwidth, slow_close, timeout, \
                 reset_peer, slicer, limit_data, down, http_error, header_delay, body_delay)"
            )
        })?;
        let stream = match text(path, map, "stream")? {
            None | Some("downstream") => Direction::Downstream,
            Some("upstream") => Direction::Upstream,
            Some(other) => {
                return Err(format!(
                    "{path}.stream must be \"upstream\" or \"downstream\", got {other:?}"
                ));
            }
        };
        let toxicity = share(path, map, "toxicity", Some(1.0))?.unwrap_or(1.0);
        let at = format!("{path}.attributes");
        let empty = json!({});
        let attributes = map.get("attributes").unwrap_or(&empty);
        let kind = attributes_of(kind, &at, attributes, path)?;
        let name = text(path, map, "name")?
            .map(str::to_owned)
            .unwrap_or_else(|| kind.name().to_owned());
        Ok(Fault {
            name,
            kind,
            stream,
            toxicity,
        })
    }

    /// The fault as the report shows it (Toxiproxy's shape, with every attribute).
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.kind.name(),
            "stream": self.stream.as_str(),
            "toxicity": self.toxicity,
            "attributes": self.kind.attributes(),
        })
    }
}

fn attributes_of(kind: &str, at: &str, value: &Value, path: &str) -> Result<FaultKind, String> {
    let ms = (0, MAX_MS);
    let parsed = match kind {
        "latency" => {
            let map = object(at, value, &["latency", "jitter"])?;
            let latency = whole(at, map, "latency", Some(0), ms, "a whole number of ms")?;
            let jitter = whole(
                at,
                map,
                "jitter",
                Some(0),
                (0, latency),
                "a whole number of ms",
            )?;
            FaultKind::Latency { latency, jitter }
        }
        "bandwidth" => {
            let map = object(at, value, &["rate"])?;
            let rate = whole(at, map, "rate", None, (1, 10_000_000), "KB a second")?;
            FaultKind::Bandwidth { rate }
        }
        "slow_close" => {
            let map = object(at, value, &["delay"])?;
            FaultKind::SlowClose {
                delay: whole(at, map, "delay", Some(0), ms, "a whole number of ms")?,
            }
        }
        "timeout" => {
            let map = object(at, value, &["timeout"])?;
            FaultKind::Timeout {
                timeout: whole(at, map, "timeout", Some(0), ms, "a whole number of ms")?,
            }
        }
        "reset_peer" => {
            let map = object(at, value, &["timeout"])?;
            FaultKind::ResetPeer {
                timeout: whole(at, map, "timeout", Some(0), ms, "a whole number of ms")?,
            }
        }
        "slicer" => {
            let map = object(at, value, &["average_size", "size_variation", "delay"])?;
            let average_size = whole(
                at,
                map,
                "average_size",
                None,
                (1, 1 << 20),
                "a size in bytes",
            )?;
            let size_variation = whole(
                at,
                map,
                "size_variation",
                Some(0),
                (0, average_size - 1),
                "a size in bytes",
            )?;
            let delay = whole(at, map, "delay", Some(0), (0, MAX_MS * 1000), "µs")?;
            FaultKind::Slicer {
                average_size,
                size_variation,
                delay,
            }
        }
        "limit_data" => {
            let map = object(at, value, &["bytes"])?;
            FaultKind::LimitData {
                bytes: whole(at, map, "bytes", None, (0, 1 << 40), "a number of bytes")?,
            }
        }
        "down" => {
            object(at, value, &[])?;
            FaultKind::Down
        }
        "http_error" => {
            let map = object(at, value, &["status"])?;
            let status = whole(at, map, "status", Some(503), (400, 599), "an HTTP status")?;
            FaultKind::HttpError {
                status: status as u16,
            }
        }
        "header_delay" | "body_delay" => {
            let map = object(at, value, &["delay"])?;
            let delay = whole(at, map, "delay", Some(0), ms, "a whole number of ms")?;
            match kind {
                "header_delay" => FaultKind::HeaderDelay { delay },
                _ => FaultKind::BodyDelay { delay },
            }
        }
        other => {
            return Err(format!(
                "{path}.type {other:?} is not a fault (one of: latency, bandwidth, slow_close, \
                 timeout, reset_peer, slicer, limit_data, down, http_error, header_delay, \
                 body_delay)"
            ));
        }
    };
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_fault_type_is_one() {
        for kind in FAULT_TYPES {
            let parsed = Fault::parse("f", &json!({"type": kind}));
            let said = parsed.err().unwrap_or_default();
            assert!(!said.contains("is not a fault"), "{kind}: {said}");
        }
        let unknown = Fault::parse("f", &json!({"type": "nope"})).unwrap_err();
        assert!(unknown.contains("is not a fault"), "{unknown}");
    }

    #[test]
    fn toxiproxy_toxics_are_read_with_their_defaults() {
        let fault = Fault::parse(
            "f",
            &json!({"type": "latency", "attributes": {"latency": 100, "jitter": 10}}),
        )
        .unwrap();
        assert_eq!(
            fault.kind,
            FaultKind::Latency {
                latency: 100,
                jitter: 10
            }
        );
        assert_eq!((fault.stream, fault.toxicity), (Direction::Downstream, 1.0));
        assert_eq!(fault.name, "latency");
        let fault = Fault::parse(
            "f",
            &json!({"type": "reset_peer", "stream": "upstream", "toxicity": 0.5, "name": "rst"}),
        )
        .unwrap();
        assert_eq!(fault.kind, FaultKind::ResetPeer { timeout: 0 });
        assert_eq!(
            (fault.stream, fault.toxicity, fault.name.as_str()),
            (Direction::Upstream, 0.5, "rst")
        );
        assert_eq!(
            Fault::parse("f", &json!({"type": "http_error"}))
                .unwrap()
                .kind,
            FaultKind::HttpError { status: 503 }
        );
    }

    #[test]
    fn bad_faults_are_refused_naming_the_field() {
        for (fault, says) in [
            (json!({"attributes": {}}), "f.type is missing"),
            (json!({"type": "lag"}), "\"lag\" is not a fault"),
            (
                json!({"type": "latency", "attributes": {"latncy": 1}}),
                "f.attributes.latncy",
            ),
            (
                json!({"type": "latency", "attributes": {"latency": -1}}),
                "f.attributes.latency",
            ),
            (
                json!({"type": "latency", "attributes": {"latency": 10, "jitter": 20}}),
                "f.attributes.jitter must be a whole number of ms from 0 to 10",
            ),
            (json!({"type": "bandwidth"}), "f.attributes.rate is missing"),
            (
                json!({"type": "down", "toxicity": 2}),
                "f.toxicity must be a number from 0 to 1",
            ),
            (json!({"type": "down", "stream": "both"}), "f.stream"),
            (
                json!({"type": "down", "attributes": {"x": 1}}),
                "takes no fields",
            ),
            (
                json!({"type": "slicer", "attributes": {"average_size": 10, "size_variation": 10}}),
                "size_variation",
            ),
            (
                json!({"type": "http_error", "attributes": {"status": 200}}),
                "status",
            ),
            (
                json!({"type": "latency", "colour": "red"}),
                "f.colour is not a field",
            ),
        ] {
            let error = Fault::parse("f", &fault).unwrap_err();
            assert!(error.contains(says), "{fault}: {error}");
        }
    }
}
