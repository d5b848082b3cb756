//! `a11y-audit`: WCAG checks of HTML pages with axe-core's rule ids, impacts and tags.
//! See docs/skills/a11y-audit.md.

pub mod audit;
mod colors;
mod config;
mod implicit;
mod names;
mod narrowing;
mod page;
mod roles;
pub mod rules;
mod skill;
mod style;

pub use config::A11yConfig;
pub use page::{Limits, PageError};
pub use skill::{A11yAuditSkill, SCOPE, SKILL_ID};
