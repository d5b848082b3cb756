//! A heal's input: which issue (an id in the issue store, or one described inline),
//! which repository (inside an allowed workspace), and where in it the issue is.

use std::path::{Path, PathBuf};

use fundi_ops::issues::{NewIssue, fingerprint};
use fundi_runtime::{Message, TaskId};
use serde::Deserialize;
use serde_json::Value;

use super::remedy::Place;

/// What a heal task is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HealRequest {
    /// The issue, by id or inline.
    pub(crate) issue: IssueRef,
    /// The repository's directory, as given.
    pub(crate) repository: PathBuf,
    /// Where the issue is in it.
    pub(crate) place: Place,
}

/// An issue named or described.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum IssueRef {
    /// An issue of the issue store.
    Stored(String),
    /// An issue described in the input (not in the store).
    Inline(Box<NewIssue>),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Described {
    source: String,
    rule: String,
    location: String,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    evidence: String,
    #[serde(default)]
    severity: Option<String>,
    #[serde(default)]
    title: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Input {
    issue: Value,
    repository: String,
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    site: Option<String>,
    #[serde(default)]
    root: Option<String>,
}

/// The request in `message`'s data part; the error says which field is wrong.
pub(crate) fn parse(message: &Message, task: &TaskId) -> Result<HealRequest, String> {
    let data = message.data().ok_or(
        "heal-issue needs a data part: {\"issue\": ID or {source, rule, location, ...}, \
         \"repository\": PATH, \"file\"?, \"site\"?, \"root\"?}",
    )?;
    let input: Input = serde_json::from_value(data.clone()).map_err(|e| format!("data: {e}"))?;
    let issue = match input.issue {
        Value::String(id) if !id.trim().is_empty() => IssueRef::Stored(id),
        Value::Object(_) => {
            let d: Described =
                serde_json::from_value(input.issue).map_err(|e| format!("data.issue: {e}"))?;
            let target = d.target.clone().unwrap_or_default();
            IssueRef::Inline(Box::new(NewIssue {
                fingerprint: fingerprint(&[&d.source, &d.rule, &d.location, &target]),
                title: d
                    .title
                    .unwrap_or_else(|| format!("{} on {}", d.rule, d.location)),
                severity: d.severity.unwrap_or_default(),
                source: d.source,
                rule: d.rule,
                location: d.location,
                target: d.target,
                evidence: d.evidence,
                remediation: String::new(),
                tags: Vec::new(),
                task_id: task.clone(),
            }))
        }
        _ => {
            return Err(
                "data.issue must be an issue id, or an object {source, rule, location, target?, \
                 evidence?}"
                    .into(),
            );
        }
    };
    if input.repository.trim().is_empty() {
        return Err("data.repository must be a directory path".into());
    }
    if let Some(site) = &input.site
        && !site.starts_with("http://")
        && !site.starts_with("https://")
    {
        return Err(format!(
            "data.site must be an http(s) URL prefix, got {site:?}"
        ));
    }
    Ok(HealRequest {
        issue,
        repository: PathBuf::from(input.repository),
        place: Place {
            file: input.file,
            site: input.site,
            root: input.root,
        },
    })
}

/// The repository's directory, resolved, if it is inside one of `workspaces`.
pub(crate) fn inside_workspace(
    repository: &Path,
    workspaces: &[PathBuf],
) -> Result<PathBuf, String> {
    if workspaces.is_empty() {
        return Err(
            "no workspace is allowed: set skills.heal-issue.workspaces to the directories \
             whose repositories heal may change"
                .into(),
        );
    }
    if !repository.is_absolute() {
        return Err(format!(
            "data.repository must be an absolute path, got {}",
            repository.display()
        ));
    }
    let resolved = repository
        .canonicalize()
        .map_err(|e| format!("data.repository {}: {e}", repository.display()))?;
    let allowed = workspaces
        .iter()
        .filter_map(|w| w.canonicalize().ok())
        .any(|w| resolved.starts_with(&w));
    match allowed {
        true => Ok(resolved),
        false => Err(format!(
            "data.repository {} is outside every allowed workspace ({})",
            repository.display(),
            workspaces
                .iter()
                .map(|w| w.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}
