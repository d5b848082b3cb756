//! `chaos-run`: a bounded fault-injection proxy with probe traffic, a report per phase,
//! and chaos events kept apart from genuine failures. See docs/skills/chaos-run.md.

mod config;
mod connection;
mod drill;
pub(crate) mod fault;
mod fields;
mod http_proxy;
mod ledger;
mod link;
mod plan;
mod probe;
mod proxy;
mod pump;
mod report;
mod skill;
mod target;

pub use config::{ChaosConfig, PortRange};
pub use drill::FaultProxy;
pub use skill::{ChaosRunSkill, SCOPE, SKILL_ID};
