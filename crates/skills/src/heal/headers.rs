//! Fixes of security-scan's header and cookie findings in the site's server
//! configuration (nginx, a Caddyfile, a `_headers` file), re-checked with
//! security-scan's own header and cookie checks on the headers the fixed
//! configuration sends.

use fundi_ops::issues::NewIssue;

use super::config::HeaderValues;
use super::git::FileWrite;
use super::place::{ConfigKind, config_file};
use super::remedy::{Place, Remediator, Remedy, RemedyError, Tree, includes};
use super::server_config::{Scope, cookie_line, header_line, lines, put_line, scope};
use crate::security::header_findings;

/// The cookie rules fixed (with `cookie-flags` set).
const COOKIE_RULES: [&str; 4] = [
    "cookie-session-no-secure",
    "cookie-no-secure",
    "cookie-session-no-httponly",
    "cookie-no-samesite",
];

/// The remediator of security-scan's header findings.
pub struct HeadersRemediator {
    values: HeaderValues,
    cookie_flags: Vec<String>,
}

impl HeadersRemediator {
    /// Fixes add these header values, and these cookie flags (none: cookie findings
    /// are not this remediator's).
    pub fn new(values: HeaderValues, cookie_flags: Vec<String>) -> HeadersRemediator {
        HeadersRemediator {
            values,
            cookie_flags,
        }
    }

    /// The header that fixes `rule`, and its value.
    fn header_for(&self, rule: &str) -> Option<(&'static str, &str)> {
        let v = &self.values;
        Some(match rule {
            "hsts-missing"
            | "hsts-invalid"
            | "hsts-short-max-age"
            | "hsts-no-include-subdomains" => (
                "Strict-Transport-Security",
                v.strict_transport_security.as_str(),
            ),
            "csp-missing" => (
                "Content-Security-Policy",
                v.content_security_policy.as_str(),
            ),
            "x-content-type-options-missing" => ("X-Content-Type-Options", "nosniff"),
            "clickjacking" => ("X-Frame-Options", v.x_frame_options.as_str()),
            "referrer-policy-missing" | "referrer-policy-unsafe" => {
                ("Referrer-Policy", v.referrer_policy.as_str())
            }
            "permissions-policy-missing" => ("Permissions-Policy", v.permissions_policy.as_str()),
            _ => return None,
        })
    }

    fn flags_fix(&self, rule: &str) -> bool {
        let wanted = match rule {
            "cookie-session-no-secure" | "cookie-no-secure" => "secure",
            "cookie-session-no-httponly" => "httponly",
            "cookie-no-samesite" => "samesite=",
            _ => return false,
        };
        self.cookie_flags
            .iter()
            .any(|f| f.to_ascii_lowercase().starts_with(wanted))
    }
}

fn host_of(issue: &NewIssue) -> String {
    reqwest::Url::parse(&issue.location)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default()
}

fn site_scope(
    issue: &NewIssue,
    place: &Place,
    tree: &Tree,
) -> Result<(String, ConfigKind, String, Scope), RemedyError> {
    let (path, kind) = config_file(place, tree)?;
    let source = tree.text(&path)?.to_owned();
    let scope = scope(kind, &source, &host_of(issue))
        .map_err(|e| RemedyError::NotHandled(format!("{path}: {e}")))?;
    Ok((path, kind, source, scope))
}

impl Remediator for HeadersRemediator {
    fn name(&self) -> &str {
        "security-headers"
    }

    fn handles(&self, issue: &NewIssue) -> bool {
        issue.source == "security-scan"
            && (self.header_for(&issue.rule).is_some()
                || (COOKIE_RULES.contains(&issue.rule.as_str()) && self.flags_fix(&issue.rule)))
    }

    fn files(&self, _: &NewIssue, place: &Place, tree: &Tree) -> Result<Vec<String>, RemedyError> {
        Ok(vec![config_file(place, tree)?.0])
    }

    fn remediate(
        &self,
        issue: &NewIssue,
        place: &Place,
        tree: &Tree,
    ) -> Result<Remedy, RemedyError> {
        let (path, kind, source, scope) = site_scope(issue, place, tree)?;
        let mut notes = Vec::new();
        if scope.nested_headers && kind == ConfigKind::Nginx {
            notes.push(format!(
                "{path} sets headers inside a location block too: nginx sends that block none \
                 of the server's add_header lines, so add the header there as well"
            ));
        }
        let (content, summary) = match self.header_for(&issue.rule) {
            Some((name, value)) => {
                if issue.rule == "csp-missing" {
                    notes.push(format!(
                        "the Content-Security-Policy is a starter ({value}): check that the \
                         site still loads everything it needs before approving"
                    ));
                }
                let existing = scope
                    .headers
                    .iter()
                    .find(|(n, _, _)| n == &name.to_ascii_lowercase());
                let content = match existing {
                    Some((_, _, line)) => {
                        let indent: String = lines(&source)[*line]
                            .chars()
                            .take_while(|c| c.is_whitespace() && *c != '\n')
                            .collect();
                        put_line(
                            &source,
                            *line,
                            &header_line(kind, &indent, name, value),
                            true,
                        )
                    }
                    None if scope.insert_before == usize::MAX => {
                        let with_section = put_line(&source, usize::MAX, "/*", false);
                        put_line(
                            &with_section,
                            usize::MAX,
                            &header_line(kind, &scope.indent, name, value),
                            false,
                        )
                    }
                    None => put_line(
                        &source,
                        scope.insert_before,
                        &header_line(kind, &scope.indent, name, value),
                        false,
                    ),
                };
                (content, format!("Send {name}: {value} from {path}"))
            }
            None => {
                let line =
                    cookie_line(kind, &scope.indent, &self.cookie_flags).ok_or_else(|| {
                        RemedyError::NotHandled(format!(
                            "{path} cannot change the cookies an application sets: fix the cookie \
                         where it is set"
                        ))
                    })?;
                let content = match &scope.cookie_flags {
                    Some((_, at)) => put_line(&source, *at, &line, true),
                    None => put_line(&source, scope.insert_before, &line, false),
                };
                let flags = self.cookie_flags.join(", ");
                (content, format!("Add {flags} to every cookie, in {path}"))
            }
        };
        Ok(Remedy {
            writes: vec![FileWrite { path, content }],
            summary,
            notes,
        })
    }

    fn still_found(
        &self,
        issue: &NewIssue,
        place: &Place,
        tree: &Tree,
    ) -> Result<bool, RemedyError> {
        let (_, _, _, scope) = site_scope(issue, place, tree)?;
        let mut headers: Vec<(String, String)> = scope
            .headers
            .iter()
            .map(|(n, v, _)| (n.clone(), v.clone()))
            .collect();
        // The cookie as the finding saw it, with the flags the server now adds.
        if let Some(cookie) = issue.evidence.strip_prefix("Set-Cookie: ") {
            let mut cookie = cookie.to_owned();
            if let Some((flags, _)) = &scope.cookie_flags {
                let lower = cookie.to_ascii_lowercase();
                for flag in flags {
                    let key = flag.split('=').next().unwrap_or(flag);
                    if !lower.contains(key) {
                        cookie.push_str(&format!("; {flag}"));
                    }
                }
            }
            headers.push(("set-cookie".into(), cookie));
        }
        let found = header_findings(&issue.location, &headers).map_err(RemedyError::NotHandled)?;
        Ok(includes(issue, &found))
    }
}
