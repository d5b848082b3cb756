//! What a message asks a11y-audit to do: the page (inline HTML, or a site to crawl on
//! an allowed origin) and how to audit it (`mode`), each refused clearly when it
//! cannot be done. What an approver may narrow it to is `narrowing`.

mod narrowing;

use fundi_runtime::{Message, PartContent, SkillError};
use reqwest::Url;
use serde_json::{Value, json};

use super::audit::decode;
use super::config::AuditMode;
use crate::origins::Origins;

/// What a message asks to audit.
#[derive(Debug)]
pub(super) enum Source {
    Inline { name: String, html: String },
    Site { start: Url, max_pages: usize },
}

/// How a message is read, under the skill's settings.
pub(super) struct Asking<'a> {
    pub(super) origins: &'a Origins,
    /// The most pages a crawl may ask for.
    pub(super) max_pages: usize,
    /// The mode of a message that names none.
    pub(super) default_mode: AuditMode,
}

impl Asking<'_> {
    /// What the message asks for; a clear refusal otherwise.
    pub(super) fn source(&self, message: &Message) -> Result<Source, SkillError> {
        for part in &message.parts {
            let html_type = part.media_type.as_deref().is_some_and(|t| {
                t.starts_with("text/html") || t.starts_with("application/xhtml+xml")
            });
            let html_name = part.filename.as_deref().is_some_and(|f| {
                let f = f.to_ascii_lowercase();
                f.ends_with(".html") || f.ends_with(".htm")
            });
            let name = part.filename.clone().unwrap_or_else(|| "inline".into());
            match &part.content {
                PartContent::Text(text) if html_type => {
                    return Ok(Source::Inline {
                        name,
                        html: text.clone(),
                    });
                }
                PartContent::Raw(bytes) if html_type || html_name => {
                    return Ok(Source::Inline {
                        name,
                        html: decode(bytes, part.media_type.as_deref()),
                    });
                }
                PartContent::Data(data) if data.get("url").is_some() => {
                    return self.site(data);
                }
                PartContent::Url(url) => {
                    return self.site(&json!({"url": url}));
                }
                _ => {}
            }
        }
        Err(SkillError::Rejected(
            "a11y-audit needs HTML to audit: a text part with mediaType \"text/html\", an \
             HTML file part, or a data part {\"url\": \"https://...\", \"maxPages\": N}"
                .into(),
        ))
    }

    pub(super) fn site(&self, data: &Value) -> Result<Source, SkillError> {
        let raw = data["url"]
            .as_str()
            .ok_or_else(|| SkillError::Rejected("data.url must be a string".into()))?;
        let start = Url::parse(raw)
            .map_err(|e| SkillError::Rejected(format!("data.url {raw:?} is not a URL: {e}")))?;
        if !self.origins.allows(&start) {
            return Err(SkillError::Rejected(format!(
                "{} is not an allowed origin for a11y-audit (allowed: {}); an operator can add \
                 it to skills.a11y-audit.allowed-origins",
                start.origin().ascii_serialization(),
                self.origins.describe()
            )));
        }
        let max_pages = match data.get("maxPages") {
            None | Some(Value::Null) => 1,
            Some(n) => match n.as_f64() {
                Some(n) if n >= 1.0 && n.fract() == 0.0 => n as usize,
                _ => {
                    return Err(SkillError::Rejected(format!(
                        "data.maxPages must be a whole number of at least 1, got {n}"
                    )));
                }
            },
        };
        Ok(Source::Site {
            start,
            max_pages: max_pages.min(self.max_pages),
        })
    }

    /// How the message asks to be audited (`mode` in a data part), or the default.
    pub(super) fn mode(&self, message: &Message) -> Result<AuditMode, SkillError> {
        let asked = message.parts.iter().find_map(|part| match &part.content {
            PartContent::Data(data) => data.get("mode"),
            _ => None,
        });
        match asked {
            None | Some(Value::Null) => Ok(self.default_mode),
            Some(Value::String(mode)) if mode == "static" => Ok(AuditMode::Static),
            Some(Value::String(mode)) if mode == "browser" => Ok(AuditMode::Browser),
            Some(other) => Err(SkillError::Rejected(format!(
                "data.mode must be \"static\" or \"browser\", got {other}"
            ))),
        }
    }
}
