//! What a message asks `security-scan` to scan: an allowed target, the paths on it, and
//! whether the light active checks run, each refused with what is wrong.

use fundi_runtime::{Message, PartContent, SkillError};
use reqwest::Url;
use serde_json::{Value, json};

use super::super::grades::observatory_ports;
use super::super::observatory::Ports;
use super::SecurityScanSkill;

/// A scan, as a message asks for it.
pub(super) struct Plan {
    pub(super) base: Url,
    pub(super) paths: Vec<Url>,
    pub(super) active: bool,
    /// Where the Observatory grade's other-scheme session starts.
    pub(super) ports: Ports,
}

impl SecurityScanSkill {
    pub(super) fn plan(&self, message: &Message) -> Result<Plan, SkillError> {
        let data = message
            .parts
            .iter()
            .find_map(|p| match &p.content {
                PartContent::Data(d) if d.get("url").is_some() => Some(d.clone()),
                PartContent::Url(u) => Some(json!({"url": u})),
                _ => None,
            })
            .ok_or_else(|| {
                SkillError::Rejected(
                    "security-scan needs a target: a data part {\"url\": \"https://...\", \
                     \"paths\": [\"/\"], \"active\": false}"
                        .into(),
                )
            })?;
        let raw = data["url"]
            .as_str()
            .ok_or_else(|| SkillError::Rejected("data.url must be a string".into()))?;
        let base = Url::parse(raw)
            .map_err(|e| SkillError::Rejected(format!("data.url {raw:?} is not a URL: {e}")))?;
        if !self.allowed(&base) {
            return Err(SkillError::Rejected(format!(
                "{} is not an allowed target for security-scan (allowed: {}); an operator can \
                 add it to skills.security-scan.allowed-origins",
                base.origin().ascii_serialization(),
                self.origins.describe()
            )));
        }
        let paths: Vec<String> = match data.get("paths") {
            None | Some(Value::Null) => vec![base.path().to_owned()],
            Some(Value::Array(items)) => items
                .iter()
                .map(|p| {
                    p.as_str().map(str::to_owned).ok_or_else(|| {
                        SkillError::Rejected("data.paths must be a list of strings".into())
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(SkillError::Rejected(
                    "data.paths must be a list of paths like \"/login\"".into(),
                ));
            }
        };
        if paths.is_empty() || paths.len() > self.config.max_paths {
            return Err(SkillError::Rejected(format!(
                "data.paths must list 1 to {} paths (skills.security-scan.max-paths)",
                self.config.max_paths
            )));
        }
        let mut urls = Vec::new();
        for path in &paths {
            let url = base.join(path).map_err(|e| {
                SkillError::Rejected(format!("data.paths: {path:?} is not a path: {e}"))
            })?;
            if url.origin() != base.origin() {
                return Err(SkillError::Rejected(format!(
                    "data.paths: {path:?} leaves {} (paths must stay on the target)",
                    base.origin().ascii_serialization()
                )));
            }
            if !urls.contains(&url) {
                urls.push(url);
            }
        }
        let active = match data.get("active") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(SkillError::Rejected(format!(
                    "data.active must be true or false, got {other}"
                )));
            }
        };
        let ports = observatory_ports(&data)?;
        Ok(Plan {
            base,
            paths: urls,
            active,
            ports,
        })
    }
}
