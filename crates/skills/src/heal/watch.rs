//! The self-healing loop: an issue store that, when a11y-audit or security-scan
//! records a new issue that a loop rule covers and a remediator handles, submits a
//! heal task for it. The task waits at the approval gate like any other; one heal is
//! submitted per issue (when it is first recorded), and the issue's claim keeps two
//! heals of it from both proposing a fix. A heal belongs to the user whose task found
//! the issue.

use std::sync::Arc;

use async_trait::async_trait;
use fundi_ops::issues::{Issue, IssueStore, NewIssue};
use fundi_runtime::store::StoreError;
use fundi_runtime::{Message, Part, SubmitRequest};
use serde_json::json;

use super::config::{HealConfig, LoopRule, severity_rank};
use super::link::RuntimeLink;
use super::remedy::Remediator;
use super::skill::{SKILL_ID, built_in};

/// The client that the loop's heal tasks name.
pub const LOOP_CLIENT: &str = "fundi heal loop";

/// An issue store that submits heal tasks for new issues, as `[[skills.heal-issue.loop]]`
/// says; everything else it passes to the store it wraps.
pub struct HealingLoop {
    inner: Arc<dyn IssueStore>,
    rules: Vec<LoopRule>,
    remediators: Vec<Arc<dyn Remediator>>,
    link: RuntimeLink,
}

impl HealingLoop {
    /// The loop over `inner`; heal tasks are submitted through `link` once it is set.
    pub fn new(inner: Arc<dyn IssueStore>, config: &HealConfig, link: RuntimeLink) -> HealingLoop {
        HealingLoop {
            inner,
            rules: config.watch.clone(),
            remediators: built_in(config),
            link,
        }
    }

    /// The rule that covers `finding`, if one does and a remediator handles it.
    fn rule_for(&self, finding: &NewIssue) -> Option<&LoopRule> {
        if !self.remediators.iter().any(|r| r.handles(finding)) {
            return None;
        }
        self.rules.iter().find(|rule| {
            let severe_enough = match &rule.min_severity {
                None => true,
                Some(min) => {
                    severity_rank(&rule.source, &finding.severity)
                        >= severity_rank(&rule.source, min)
                }
            };
            rule.source == finding.source
                && severe_enough
                && finding.location.starts_with(&rule.site)
        })
    }

    fn submit(&self, issue: &Issue, rule: &LoopRule) {
        let Some(runtime) = self.link.handle() else {
            tracing::warn!(issue = issue.id(), "the heal loop has no runtime yet");
            return;
        };
        let data = json!({
            "issue": issue.id(),
            "repository": rule.repository,
            "site": rule.site,
            "root": rule.root,
        });
        let mut request = SubmitRequest::new(Message::user(vec![
            Part::text(format!("heal issue {}", issue.id())),
            Part::data(data),
        ]));
        request.skill = Some(SKILL_ID.into());
        request.client = Some(LOOP_CLIENT.into());
        let id = issue.id().to_owned();
        let finder = issue.finding.task_id.clone();
        // Not awaited: the audit that recorded the issue goes on.
        tokio::spawn(async move {
            // The heal is the user's whose audit found the issue: they see it and are
            // asked about it (a task that has no owner is seen by in-process callers only).
            request.owner = runtime.owner_of(&finder).await.ok().flatten();
            match runtime.submit(request).await {
                Ok(accepted) => {
                    tracing::info!(issue = %id, task_id = %accepted.task.id, "heal submitted")
                }
                Err(error) => tracing::warn!(issue = %id, %error, "submitting a heal"),
            }
        });
    }
}

#[async_trait]
impl IssueStore for HealingLoop {
    async fn record(&self, finding: NewIssue) -> Result<(Issue, bool), StoreError> {
        let (issue, new) = self.inner.record(finding).await?;
        if new && let Some(rule) = self.rule_for(&issue.finding) {
            self.submit(&issue, rule);
        }
        Ok((issue, new))
    }

    async fn issue(&self, id: &str) -> Result<Option<Issue>, StoreError> {
        self.inner.issue(id).await
    }

    async fn issues(&self, source: Option<&str>) -> Result<Vec<Issue>, StoreError> {
        self.inner.issues(source).await
    }

    async fn modify(
        &self,
        id: &str,
        change: &(dyn for<'i> Fn(&'i Issue) -> Option<Issue> + Send + Sync),
    ) -> Result<Option<Issue>, StoreError> {
        self.inner.modify(id, change).await
    }
}
