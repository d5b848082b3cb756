//! fundi-skills: the built-in skills. Each implements `fundi_runtime::Skill` in its own
//! module and depends on the runtime only.

mod echo;

pub use echo::{EchoConfig, EchoSkill};
