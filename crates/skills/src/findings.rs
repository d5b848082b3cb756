//! Recording a skill's findings in the issue store.

use fundi_ops::issues::{IssueStore, NewIssue};
use fundi_runtime::SkillError;

/// Records every finding; returns how many were new and how many were seen before.
pub(crate) async fn record(
    store: &dyn IssueStore,
    findings: impl IntoIterator<Item = NewIssue>,
) -> Result<(usize, usize), SkillError> {
    let (mut new, mut updated) = (0, 0);
    for finding in findings {
        let (_, is_new) = store
            .record(finding)
            .await
            .map_err(|e| SkillError::Failed(format!("recording issues: {e}")))?;
        if is_new {
            new += 1;
        } else {
            updated += 1;
        }
    }
    Ok((new, updated))
}
