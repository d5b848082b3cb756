//! `a11y-audit`: WCAG checks of HTML pages with axe-core's rule ids, impacts and tags.
//! See docs/skills/a11y-audit.md.

pub mod audit;
mod browser;
mod colors;
mod config;
mod frontier;
mod implicit;
mod names;
mod page;
mod rendered;
mod report;
mod request;
mod roles;
pub mod rules;
mod skill;
mod style;

pub use browser::axe_version;
pub use config::{A11yConfig, AuditMode};
pub use page::{Limits, PageError};
pub use skill::{A11yAuditSkill, SCOPE, SKILL_ID};
