//! What an approver may narrow a scan to: the same target, some of the paths asked, and
//! passive checks only where active ones were asked (never active where they were not).

use fundi_runtime::{Message, Part};
use serde_json::Value;

use super::SecurityScanSkill;

impl SecurityScanSkill {
    pub(super) fn narrowing(&self, original: &Message, narrowed: &Value) -> Result<(), String> {
        let asked = self.plan(original).map_err(|e| e.to_string())?;
        let offered = self
            .plan(&Message::user(vec![Part::data(narrowed.clone())]))
            .map_err(|e| e.to_string())?;
        if offered.base != asked.base {
            return Err(format!(
                "the narrowed input must scan {}, as asked",
                asked.base
            ));
        }
        if let Some(extra) = offered.paths.iter().find(|p| !asked.paths.contains(p)) {
            return Err(format!("path {} was not asked", extra.path()));
        }
        if offered.active && !asked.active {
            return Err("active checks were not asked".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use fundi_ops::issues::MemoryIssueStore;
    use serde_json::json;

    use super::*;
    use crate::security::SecurityConfig;

    #[test]
    fn a_scan_narrows_to_fewer_paths_and_to_passive_checks_only() {
        let config = SecurityConfig {
            allowed_origins: vec!["https://app.test".into()],
            ..SecurityConfig::default()
        };
        let skill = SecurityScanSkill::new(config, Arc::new(MemoryIssueStore::new())).unwrap();
        let asked = Message::user(vec![Part::data(
            json!({"url": "https://app.test/", "paths": ["/", "/login"], "active": true}),
        )]);
        let fewer = json!({"url": "https://app.test/", "paths": ["/login"], "active": false});
        assert!(skill.narrowing(&asked, &fewer).is_ok());
        let other = json!({"url": "https://app.test/", "paths": ["/admin"]});
        assert!(
            skill
                .narrowing(&asked, &other)
                .unwrap_err()
                .contains("/admin was not asked")
        );
        let passive = Message::user(vec![Part::data(
            json!({"url": "https://app.test/", "paths": ["/"]}),
        )]);
        let active = json!({"url": "https://app.test/", "paths": ["/"], "active": true});
        assert!(
            skill
                .narrowing(&passive, &active)
                .unwrap_err()
                .contains("active")
        );
    }
}
