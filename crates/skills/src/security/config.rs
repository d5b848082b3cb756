//! `[skills.security-scan]` settings.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Targets, limits and trust for security scans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct SecurityConfig {
    /// Origins (`https://app.example.com`) that may be scanned; anything else is
    /// refused. Default: none.
    pub allowed_origins: Vec<String>,
    /// Whether an allowed origin's name may resolve to a loopback, private, link-local or
    /// other special-purpose address (an internal staging host, say). Origins written as
    /// IP addresses are reached as written either way. Default: false.
    pub allow_private_networks: bool,
    /// PEM files of extra trusted CA certificates (an internal CA), on top of the
    /// public roots. Default: none.
    pub extra_ca_files: Vec<PathBuf>,
    /// Most paths one scan looks at. Default: 20.
    pub max_paths: usize,
    /// Most requests the active checks make per scan. Default: 60.
    pub max_active_requests: usize,
    /// Active requests per second, at most. Default: 5.
    pub active_requests_per_second: u32,
    /// Longest one request may take (connect, headers and body), in ms. Default: 10000.
    pub request_timeout_ms: u64,
    /// Bytes of a response body read (the rest is dropped). Default: 1048576 (1 MiB).
    pub max_body_bytes: usize,
    /// Chromium's HSTS preload list (`transport_security_state_static.json`), which the
    /// Observatory grade consults; without it no site counts as preloaded. Default: none.
    pub hsts_preload_list: Option<PathBuf>,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        SecurityConfig {
            allowed_origins: Vec::new(),
            allow_private_networks: false,
            extra_ca_files: Vec::new(),
            max_paths: 20,
            max_active_requests: 60,
            active_requests_per_second: 5,
            request_timeout_ms: 10_000,
            max_body_bytes: 1024 * 1024,
            hsts_preload_list: None,
        }
    }
}

impl SecurityConfig {
    /// Checks values that serde cannot; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        for origin in &self.allowed_origins {
            let parsed = reqwest::Url::parse(origin)
                .map_err(|e| format!("skills.security-scan.allowed-origins: {origin:?}: {e}"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(format!(
                    "skills.security-scan.allowed-origins: {origin:?} is not an http(s) origin"
                ));
            }
        }
        for (name, value) in [
            ("max-paths", self.max_paths),
            ("max-body-bytes", self.max_body_bytes),
            (
                "active-requests-per-second",
                self.active_requests_per_second as usize,
            ),
        ] {
            if value == 0 {
                return Err(format!("skills.security-scan.{name} must be at least 1"));
            }
        }
        if self.request_timeout_ms == 0 {
            return Err("skills.security-scan.request-timeout-ms must be at least 1".into());
        }
        Ok(())
    }
}
