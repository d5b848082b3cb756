//! chaos-run's proxy used directly, outside a run: a fault drill (fundi's own cluster
//! tests put one in front of each node's database) moves it from phase to phase when it
//! chooses, instead of on the plan's clock. Phases are written as a chaos-run plan's
//! (`{"name", "durationMs", "faults": [...]}`, the same faults, attributes and draws);
//! `durationMs` is not used. Nothing is logged but warnings: there is no run to report
//! to.

use std::net::SocketAddr;
use std::sync::Arc;

use fundi_ops::chaos::MemoryChaosLog;
use serde_json::{Value, json};

use super::config::ChaosConfig;
use super::ledger::Ledger;
use super::link::Shared;
use super::plan::Plan;
use super::proxy::Proxy;

/// A proxy in front of a TCP target whose phases its owner moves through.
pub struct FaultProxy {
    proxy: Proxy,
    phases: Vec<String>,
}

impl FaultProxy {
    /// Listens on a free loopback port ([`FaultProxy::address`]) for connections to
    /// `target` (`host:port`), in the first of `phases` (a chaos-run plan's array); the
    /// error names what is wrong with them.
    pub async fn start(target: &str, phases: Value) -> Result<FaultProxy, String> {
        let config = ChaosConfig {
            allowed_targets: vec![target.to_owned()],
            ..ChaosConfig::default()
        };
        let data = json!({"target": target, "plan": phases});
        let plan = Plan::parse(&data, &config)?;
        let names: Vec<String> = plan.phases.iter().map(|p| p.name.clone()).collect();
        let (ledger, writer) = Ledger::start(
            None,
            Arc::new(MemoryChaosLog::new()),
            "drill".into(),
            names.clone(),
            0,
        );
        // The ledger's log writer has nothing to write (no events are kept).
        drop(writer);
        let proxy = Proxy::start(plan.listen, usize::MAX, |stage| Shared {
            phases: plan.phases.clone().into(),
            target: plan.target.clone(),
            ledger,
            stage,
            seed: plan.seed.unwrap_or(0),
            http: None,
        })
        .await?;
        Ok(FaultProxy {
            proxy,
            phases: names,
        })
    }

    /// Where clients connect.
    pub fn address(&self) -> SocketAddr {
        self.proxy.local()
    }

    /// Moves every connection (and the listener) to the phase named `name`.
    pub fn enter(&self, name: &str) -> Result<(), String> {
        let index = self
            .phases
            .iter()
            .position(|p| p == name)
            .ok_or_else(|| format!("no phase is named {name:?} (phases: {:?})", self.phases))?;
        self.proxy.enter(index);
        Ok(())
    }

    /// Closes the listener and every connection.
    pub async fn shutdown(self) {
        self.proxy.shutdown().await;
    }
}
