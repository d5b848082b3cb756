//! `security-scan`: HTTP security checks of an allowed target, modelled on Mozilla's HTTP
//! Observatory and OWASP ZAP's baseline passive rules. See docs/skills/security-scan.md.

pub mod catalogue;
mod checks;
mod config;
pub mod finding;
mod http;
mod landing;
mod narrowing;
mod skill;

pub use config::SecurityConfig;
pub use skill::{SCOPE, SKILL_ID, SecurityScanSkill};
