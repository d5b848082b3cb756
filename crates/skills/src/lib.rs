//! fundi-skills: the built-in skills. Each implements `fundi_runtime::Skill` in its own
//! module and depends on the runtime only.

pub mod a11y;
pub mod chaos;
mod echo;
mod findings;
pub mod heal;
pub mod inbox;
mod markup;
mod origins;
pub mod schema;
mod schemas;
pub mod security;
#[cfg(feature = "test-util")]
pub mod testing;

pub use a11y::{A11yAuditSkill, A11yConfig, AuditMode};
pub use chaos::{ChaosConfig, ChaosRunSkill};
pub use echo::{EchoConfig, EchoSkill};
pub use heal::{HealConfig, HealIssueSkill};
pub use inbox::{InboxConfig, InboxSkill};
pub use security::{SecurityConfig, SecurityScanSkill};
