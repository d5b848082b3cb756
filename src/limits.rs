//! The gateway's size limits, fitted to the skills: a request the gateway accepts is one
//! a skill can take, and an input a skill accepts inline gets through the gateway. An
//! enabled a11y-audit takes pages up to `skills.a11y-audit.max-page-bytes` inline (a
//! text part, or a raw part in base64), so the largest text part and the largest body
//! are raised to fit one when they are set lower.

use fundi_gateway::{GatewayConfig, Listening};

use crate::config::AppConfig;

/// Room for the JSON around an inline page (the envelope, the message, its metadata).
const ENVELOPE_BYTES: usize = 64 * 1024;

/// The gateway's settings with its limits raised to fit the largest inline input an
/// enabled skill accepts; each raise is logged, naming the settings.
pub(crate) fn fitted_gateway(config: &AppConfig) -> GatewayConfig {
    let mut gateway = config.gateway.clone();
    let Some(page) = largest_inline_input(config) else {
        return gateway;
    };
    // A page as a raw part is base64 (4 bytes per 3); as a text part it is as large, or
    // a third larger once its quotes and newlines are escaped in JSON.
    let body = page.div_ceil(3) * 4 + ENVELOPE_BYTES;
    if gateway.max_text_bytes < page {
        tracing::info!(
            from = gateway.max_text_bytes,
            to = page,
            "gateway.max-text-bytes raised to fit skills.a11y-audit.max-page-bytes"
        );
        gateway.max_text_bytes = page;
    }
    if gateway.max_body_bytes < body {
        tracing::info!(
            from = gateway.max_body_bytes,
            to = body,
            "gateway.max-body-bytes raised to fit skills.a11y-audit.max-page-bytes (a page \
             in base64, and the request around it)"
        );
        gateway.max_body_bytes = body;
    }
    gateway
}

/// File descriptors kept for what is not a client's connection: the store's files, its
/// database connections, webhooks, the skills' own requests, log files.
const RESERVED_DESCRIPTORS: u64 = 512;

/// How the accept loop treats connections: `gateway.max-connections`, lowered (and the
/// lowering logged) to stay below the process's file-descriptor limit, so that the
/// server always has descriptors left to answer `/health` and to do its own work.
pub(crate) fn listening(gateway: &GatewayConfig) -> Listening {
    let mut listening = Listening::from_config(gateway);
    if let Ok((soft, _)) = rlimit::Resource::NOFILE.get() {
        let room = soft.saturating_sub(RESERVED_DESCRIPTORS).max(16);
        let room = usize::try_from(room).unwrap_or(usize::MAX);
        if listening.max_connections > room {
            tracing::warn!(
                from = listening.max_connections,
                to = room,
                descriptors = soft,
                "gateway.max-connections lowered to stay below the file-descriptor limit"
            );
            listening.max_connections = room;
        }
    }
    listening
}

/// Raises the process's file-descriptor limit to its hard limit: every connection and
/// stream holds a descriptor (the connection limit stays below it: [`listening`]).
pub fn raise_descriptor_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::debug!(limit, "file-descriptor limit"),
        Err(error) => tracing::warn!(%error, "could not raise the file-descriptor limit"),
    }
}

/// The largest input an enabled skill takes inline, in bytes.
fn largest_inline_input(config: &AppConfig) -> Option<usize> {
    let skills = &config.skills;
    let a11y = skills.enabled.iter().any(|id| id == "a11y-audit");
    a11y.then_some(skills.a11y_audit.max_page_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_rise_to_an_enabled_audits_page_and_no_further() {
        let mut config = AppConfig::default();
        config.skills.a11y_audit.max_page_bytes = 3 * 1024 * 1024;
        config.gateway.max_text_bytes = 1024;
        config.gateway.max_body_bytes = 2048;
        let fitted = fitted_gateway(&config);
        assert_eq!(fitted.max_text_bytes, 3 * 1024 * 1024);
        assert_eq!(fitted.max_body_bytes, 4 * 1024 * 1024 + ENVELOPE_BYTES);

        // Set higher: kept.
        config.gateway.max_body_bytes = 50 * 1024 * 1024;
        assert_eq!(fitted_gateway(&config).max_body_bytes, 50 * 1024 * 1024);

        // Without the audit: as set.
        config.skills.enabled.retain(|id| id != "a11y-audit");
        let fitted = fitted_gateway(&config);
        assert_eq!(
            (fitted.max_text_bytes, fitted.max_body_bytes),
            (1024, 50 * 1024 * 1024)
        );
    }
}
