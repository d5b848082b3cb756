//! `heal-issue`: findings become fixes on a branch that a person approves; nothing is
//! ever merged. See docs/skills/heal-issue.md.

mod config;
mod decision;
pub mod git;
mod headers;
mod html;
mod input;
mod link;
mod place;
mod proposed;
mod remedy;
mod server_config;
mod skill;
mod tags;
mod watch;

pub use config::{HeaderValues, HealConfig, LoopRule};
pub use headers::HeadersRemediator;
pub use html::HtmlRemediator;
pub use link::RuntimeLink;
pub use remedy::{Place, Remediator, Remedy, RemedyError, Tree, includes};
pub use skill::{HealIssueSkill, SCOPE, SKILL_ID};
pub use watch::{HealingLoop, LOOP_CLIENT};
