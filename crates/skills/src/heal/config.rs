//! `[skills.heal-issue]` settings.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where heal-issue may work, who its commits are by, where fixes are published, and
/// which new issues the self-healing loop turns into heal tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct HealConfig {
    /// Directories whose git repositories heal may change; a repository outside every
    /// one of them is refused. Default: none (every heal is refused).
    pub workspaces: Vec<PathBuf>,
    /// The name on fix commits. Default: `fundi`.
    pub author_name: String,
    /// The email on fix commits. Default: `fundi@localhost`.
    pub author_email: String,
    /// The git remote an approved fix's branch is pushed to. Default: `origin`.
    pub remote: String,
    /// Whether the approver must be someone other than the user who asked for the heal.
    /// Default: false.
    pub require_distinct_approver: bool,
    /// The language a page without one gets (`lang` on `<html>`). Default: `en`.
    pub default_lang: String,
    /// The attributes on cookies that the server's configuration adds to every cookie
    /// (`Secure`, `HttpOnly`, `SameSite=Lax`). Default: none, and cookie findings are
    /// not healed: which flags an application's cookies can take is its owner's call.
    pub cookie_flags: Vec<String>,
    /// Values of the security headers a fix adds.
    pub headers: HeaderValues,
    /// The self-healing loop: which new issues become heal tasks. Default: none.
    #[serde(rename = "loop")]
    pub watch: Vec<LoopRule>,
}

/// The values of the security headers that fixes add.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct HeaderValues {
    /// `Strict-Transport-Security`.
    pub strict_transport_security: String,
    /// `Content-Security-Policy`: a starter a person should tighten.
    pub content_security_policy: String,
    /// `X-Frame-Options`.
    pub x_frame_options: String,
    /// `Referrer-Policy`.
    pub referrer_policy: String,
    /// `Permissions-Policy`.
    pub permissions_policy: String,
}

impl Default for HeaderValues {
    fn default() -> Self {
        HeaderValues {
            strict_transport_security: "max-age=63072000; includeSubDomains".into(),
            content_security_policy:
                "default-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'self'"
                    .into(),
            x_frame_options: "SAMEORIGIN".into(),
            referrer_policy: "strict-origin-when-cross-origin".into(),
            permissions_policy: "camera=(), microphone=(), geolocation=()".into(),
        }
    }
}

/// One rule of the loop: new issues of `source` at `min-severity` or worse, found on
/// pages under `site`, are healed in `repository` (whose `root` directory `site`
/// serves).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct LoopRule {
    /// `a11y-audit` or `security-scan`.
    pub source: String,
    /// The least severe issue healed: a11y `minor`/`moderate`/`serious`/`critical`,
    /// security `info`/`low`/`medium`/`high`. Default: every severity.
    #[serde(default)]
    pub min_severity: Option<String>,
    /// The URL prefix of the pages (an issue elsewhere is not this rule's).
    pub site: String,
    /// The repository (inside a workspace).
    pub repository: PathBuf,
    /// The directory of the repository that `site` serves. Default: its top.
    #[serde(default)]
    pub root: Option<String>,
}

impl Default for HealConfig {
    fn default() -> Self {
        HealConfig {
            workspaces: Vec::new(),
            author_name: "fundi".into(),
            author_email: "fundi@localhost".into(),
            remote: "origin".into(),
            require_distinct_approver: false,
            default_lang: "en".into(),
            cookie_flags: Vec::new(),
            headers: HeaderValues::default(),
            watch: Vec::new(),
        }
    }
}

/// Severities from least to most severe, by source.
pub(crate) fn severity_rank(source: &str, severity: &str) -> Option<usize> {
    let order: &[&str] = match source {
        "a11y-audit" => &["minor", "moderate", "serious", "critical"],
        "security-scan" => &["info", "low", "medium", "high"],
        _ => return None,
    };
    order.iter().position(|s| *s == severity)
}

impl HealConfig {
    /// Checks values that serde cannot; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        for (i, root) in self.workspaces.iter().enumerate() {
            if !root.is_absolute() {
                return Err(format!(
                    "skills.heal-issue.workspaces[{i}] must be an absolute path, got {root:?}"
                ));
            }
        }
        for (name, value) in [
            ("author-name", &self.author_name),
            ("author-email", &self.author_email),
            ("remote", &self.remote),
            ("default-lang", &self.default_lang),
        ] {
            if value.trim().is_empty() || value.chars().any(char::is_control) {
                return Err(format!(
                    "skills.heal-issue.{name} must be a non-empty line of text"
                ));
            }
        }
        if self.remote.starts_with('-') {
            return Err("skills.heal-issue.remote must not start with '-'".into());
        }
        for flag in &self.cookie_flags {
            let known = ["secure", "httponly", "samesite=lax", "samesite=strict"];
            if !known.contains(&flag.to_ascii_lowercase().as_str()) {
                return Err(format!(
                    "skills.heal-issue.cookie-flags: {flag:?} is not one of Secure, HttpOnly, \
                     SameSite=Lax, SameSite=Strict"
                ));
            }
        }
        for (i, rule) in self.watch.iter().enumerate() {
            let at = format!("skills.heal-issue.loop[{i}]");
            if severity_rank(&rule.source, "info")
                .or(severity_rank(&rule.source, "minor"))
                .is_none()
            {
                return Err(format!(
                    "{at}.source must be a11y-audit or security-scan, got {:?}",
                    rule.source
                ));
            }
            if let Some(min) = &rule.min_severity
                && severity_rank(&rule.source, min).is_none()
            {
                return Err(format!(
                    "{at}.min-severity {min:?} is not a severity of {}",
                    rule.source
                ));
            }
            if !rule.site.starts_with("http://") && !rule.site.starts_with("https://") {
                return Err(format!(
                    "{at}.site must be an http(s) URL, got {:?}",
                    rule.site
                ));
            }
            if !rule.repository.is_absolute() {
                return Err(format!("{at}.repository must be an absolute path"));
            }
        }
        Ok(())
    }
}
