//! Chromium's HSTS preload list, which Observatory's HSTS and redirection tests
//! consult. fundi ships none: an operator points `hsts-preload-list` at Chromium's
//! `transport_security_state_static.json`; without it no site counts as preloaded.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

/// The hosts preloaded as HTTPS-only, and whether their subdomains are too.
#[derive(Debug, Clone, Default)]
pub(crate) struct PreloadList {
    hosts: HashMap<String, bool>,
    loaded: bool,
}

#[derive(Deserialize)]
struct RawList {
    entries: Vec<RawEntry>,
}

#[derive(Deserialize)]
struct RawEntry {
    name: String,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    include_subdomains: bool,
}

impl PreloadList {
    /// Reads Chromium's list (JSON with `//` comment lines).
    pub(crate) fn read(path: &Path) -> Result<PreloadList, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        PreloadList::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses Chromium's list from its text.
    pub(crate) fn parse(text: &str) -> Result<PreloadList, String> {
        let json: String = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let raw: RawList = serde_json::from_str(&json)
            .map_err(|e| format!("not Chromium's HSTS preload list: {e}"))?;
        let hosts = raw
            .entries
            .into_iter()
            .filter(|e| e.mode.as_deref() == Some("force-https"))
            .map(|e| (e.name.trim().to_lowercase(), e.include_subdomains))
            .collect();
        Ok(PreloadList {
            hosts,
            loaded: true,
        })
    }

    /// Whether a list was read at all.
    pub(crate) fn is_loaded(&self) -> bool {
        self.loaded
    }

    /// Whether `host` is preloaded: listed itself, or under a listed domain that
    /// includes its subdomains.
    pub(crate) fn covers(&self, host: &str) -> bool {
        if self.hosts.contains_key(host) {
            return true;
        }
        let mut rest = host;
        while let Some((_, parent)) = rest.split_once('.') {
            if self.hosts.get(parent) == Some(&true) {
                return true;
            }
            rest = parent;
        }
        false
    }
}
