//! `[skills.a11y-audit]` settings.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How pages are audited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuditMode {
    /// The page's HTML as served, parsed and checked by fundi's own rules: no browser.
    #[default]
    Static,
    /// The page as a browser renders it, scripts run, checked by axe-core in headless
    /// Chromium.
    Browser,
}

impl AuditMode {
    /// The name a message and the settings use.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditMode::Static => "static",
            AuditMode::Browser => "browser",
        }
    }
}

/// Limits and the origins pages may be fetched from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct A11yConfig {
    /// Origins (`https://site.example`) whose pages may be fetched and crawled; any other
    /// URL is refused. Default: none (only inline HTML is audited).
    pub allowed_origins: Vec<String>,
    /// Whether an allowed origin's name may resolve to a loopback, private, link-local or
    /// other special-purpose address (an internal staging host, say). Origins written as
    /// IP addresses are reached as written either way. Default: false.
    pub allow_private_networks: bool,
    /// Most pages one crawl audits (a message's `maxPages` is capped by this). Default: 20.
    pub max_pages: usize,
    /// Largest page, in bytes. Default: 5242880 (5 MiB).
    pub max_page_bytes: usize,
    /// Most elements in one page. Default: 100000.
    pub max_elements: usize,
    /// Deepest element nesting in one page. Default: 512.
    pub max_depth: usize,
    /// Most attributes on one element. Default: 1000.
    pub max_attributes: usize,
    /// Longest the audit of one page may take, in ms. Default: 20000.
    pub page_time_limit_ms: u64,
    /// Longest one fetch may take, in ms. Default: 15000.
    pub fetch_timeout_ms: u64,
    /// How a message that names no `mode` is audited. Default: static.
    pub default_mode: AuditMode,
    /// The Chromium that browser mode starts. Default: `chromium` (then
    /// `chromium-browser`, `google-chrome`) on PATH.
    pub chromium: Option<PathBuf>,
    /// Pages audited in the browser at once, over every run. Default: the number of
    /// CPUs (as the runtime's CPU pool).
    pub browser_pages: Option<usize>,
}

impl Default for A11yConfig {
    fn default() -> Self {
        A11yConfig {
            allowed_origins: Vec::new(),
            allow_private_networks: false,
            max_pages: 20,
            max_page_bytes: 5 * 1024 * 1024,
            max_elements: 100_000,
            max_depth: 512,
            max_attributes: 1_000,
            page_time_limit_ms: 20_000,
            fetch_timeout_ms: 15_000,
            default_mode: AuditMode::Static,
            chromium: None,
            browser_pages: None,
        }
    }
}

impl A11yConfig {
    /// Checks values that serde cannot; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        for origin in &self.allowed_origins {
            let parsed = reqwest::Url::parse(origin)
                .map_err(|e| format!("skills.a11y-audit.allowed-origins: {origin:?}: {e}"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(format!(
                    "skills.a11y-audit.allowed-origins: {origin:?} is not an http(s) origin"
                ));
            }
        }
        for (name, value) in [
            ("max-pages", self.max_pages),
            ("max-page-bytes", self.max_page_bytes),
            ("max-elements", self.max_elements),
            ("max-depth", self.max_depth),
            ("max-attributes", self.max_attributes),
        ] {
            if value == 0 {
                return Err(format!("skills.a11y-audit.{name} must be at least 1"));
            }
        }
        if self.browser_pages == Some(0) {
            return Err("skills.a11y-audit.browser-pages must be at least 1".into());
        }
        if self.page_time_limit_ms == 0 || self.fetch_timeout_ms == 0 {
            return Err(
                "skills.a11y-audit.page-time-limit-ms and fetch-timeout-ms must be at least 1"
                    .into(),
            );
        }
        Ok(())
    }
}
