//! The origins a skill may reach: an allowlist from its config (no SSRF beyond it).

use reqwest::Url;

/// Allowed origins, as `scheme://host[:port]`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Origins(Vec<String>);

impl Origins {
    /// From configured origins (already validated as http(s) URLs).
    pub(crate) fn new(configured: &[String]) -> Origins {
        Origins(
            configured
                .iter()
                .filter_map(|o| Url::parse(o).ok())
                .map(|u| u.origin().ascii_serialization())
                .collect(),
        )
    }

    /// Whether `url` is http(s) on an allowed origin.
    pub(crate) fn allows(&self, url: &Url) -> bool {
        matches!(url.scheme(), "http" | "https")
            && self.0.contains(&url.origin().ascii_serialization())
    }

    /// The list for messages ("none" when empty).
    pub(crate) fn describe(&self) -> String {
        if self.0.is_empty() {
            "none".to_owned()
        } else {
            self.0.join(", ")
        }
    }
}
