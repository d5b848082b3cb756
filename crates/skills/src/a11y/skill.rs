//! The `a11y-audit` skill: takes inline HTML or a URL on an allowed origin (crawling
//! same-origin links up to a limit), audits each page, records violations as issues, and
//! answers with a JSON report and a short summary.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use fundi_ops::issues::{IssueStore, NewIssue, fingerprint};
use fundi_runtime::cpu::Exhausted;
use fundi_runtime::{
    Artifact, InputRefused, Message, MessagePolicy, Part, Skill, SkillCard, SkillContext,
    SkillError, SkillInput, SkillOutput, TaskId,
};
use reqwest::Url;
use serde_json::{Value, json};

use crate::findings;
use crate::origins::Origins;

use super::audit::{PageReport, audit, decode};
use super::browser::{self, Chromium, axe_version};
use super::config::{A11yConfig, AuditMode};
use super::frontier::Crawl;
use super::page::{Limits, PageError};
use super::rendered;
use super::report::{PageOutcome, page_note, summarize, summary_text};
use super::request::{Asking, Source};
use std::collections::BTreeMap;

/// The skill's id.
pub const SKILL_ID: &str = "a11y-audit";
/// The scope a caller needs.
pub const SCOPE: &str = "fundi:audit";
/// Redirects followed per fetch (each must stay on an allowed origin).
const MAX_REDIRECTS: usize = 5;

/// The `a11y-audit` skill.
pub struct A11yAuditSkill {
    config: A11yConfig,
    origins: Origins,
    issues: Arc<dyn IssueStore>,
    client: reqwest::Client,
    /// Browser mode's Chromium, started by the first run that needs it.
    chromium: Chromium,
}

impl std::fmt::Debug for A11yAuditSkill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A11yAuditSkill")
            .field("origins", &self.origins)
            .finish_non_exhaustive()
    }
}

impl A11yAuditSkill {
    /// The skill with these settings, recording findings in `issues`.
    pub fn new(config: A11yConfig, issues: Arc<dyn IssueStore>) -> Result<A11yAuditSkill, String> {
        config.validate()?;
        // Every message is audited in the browser unless it says otherwise: without one,
        // the server would accept audits it can only fail.
        if config.default_mode == AuditMode::Browser {
            browser::find(config.chromium.as_deref())
                .map_err(|why| format!("skills.a11y-audit.default-mode = \"browser\": {why}"))?;
        }
        let origins = Origins::new(&config.allowed_origins);
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_millis(config.fetch_timeout_ms))
            .user_agent(concat!("fundi-a11y-audit/", env!("CARGO_PKG_VERSION")));
        let client = fundi_ops::resolver::guarded(client, config.allow_private_networks)
            .build()
            .map_err(|e| format!("a11y-audit: HTTP client: {e}"))?;
        let pages = config.browser_pages.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        Ok(A11yAuditSkill {
            chromium: Chromium::new(config.chromium.clone(), pages),
            config,
            origins,
            issues,
            client,
        })
    }

    /// How this skill reads what a message asks.
    pub(super) fn asking(&self) -> Asking<'_> {
        Asking {
            origins: &self.origins,
            max_pages: self.config.max_pages,
            default_mode: self.config.default_mode,
        }
    }

    fn limits(&self) -> Limits {
        Limits {
            max_bytes: self.config.max_page_bytes,
            max_elements: self.config.max_elements,
            max_depth: self.config.max_depth,
            max_attributes: self.config.max_attributes,
        }
    }

    /// Fetches an HTML page, following redirects that stay on allowed origins.
    async fn fetch(&self, url: &Url) -> Result<(Url, String), String> {
        let mut current = url.clone();
        for _ in 0..=MAX_REDIRECTS {
            if !self.origins.allows(&current) {
                return Err(format!(
                    "{current} is not on an allowed origin (skills.a11y-audit.allowed-origins)"
                ));
            }
            let mut response = self
                .client
                .get(current.clone())
                .header("accept", "text/html,application/xhtml+xml")
                .send()
                .await
                .map_err(|e| format!("fetching {current}: {e}"))?;
            let status = response.status();
            if status.is_redirection() {
                let location = response
                    .headers()
                    .get("location")
                    .and_then(|l| l.to_str().ok())
                    .ok_or_else(|| format!("{current} redirects without a Location"))?;
                current = current
                    .join(location)
                    .map_err(|e| format!("{current} redirects to a bad URL: {e}"))?;
                continue;
            }
            if !status.is_success() {
                return Err(format!("{current} answered HTTP {status}"));
            }
            let content_type = response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let is_html = content_type
                .as_deref()
                .is_none_or(|t| t.contains("text/html") || t.contains("application/xhtml+xml"));
            if !is_html {
                return Err(format!(
                    "{current} is not an HTML page (Content-Type {})",
                    content_type.unwrap_or_default()
                ));
            }
            let limit = self.config.max_page_bytes;
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| format!("reading {current}: {e}"))?
            {
                if body.len() + chunk.len() > limit {
                    return Err(format!(
                        "{current} is larger than {limit} bytes (skills.a11y-audit.max-page-bytes)"
                    ));
                }
                body.extend_from_slice(&chunk);
            }
            return Ok((current, decode(&body, content_type.as_deref())));
        }
        Err(format!("{url} redirects more than {MAX_REDIRECTS} times"))
    }

    /// Audits HTML on the runtime's CPU pool, within the page's time limit and the run's
    /// CPU budget. The outer error ends the run (canceled, budget spent); the inner one
    /// is this page's.
    async fn audit(
        &self,
        ctx: &SkillContext,
        html: String,
        url: String,
    ) -> Result<Result<(PageReport, Vec<String>), PageError>, SkillError> {
        let limits = self.limits();
        let time = Duration::from_millis(self.config.page_time_limit_ms);
        let audited = ctx
            .cpu(move |budget| audit(&html, &url, limits, &budget.within(time)))
            .await?;
        match audited {
            Err(PageError::Stopped(Exhausted::Canceled)) => Err(SkillError::Canceled),
            Err(PageError::Stopped(spent)) => Err(SkillError::Failed(spent.to_string())),
            page => Ok(page),
        }
    }

    async fn crawl(
        &self,
        start: Url,
        max_pages: usize,
        ctx: &SkillContext,
    ) -> Result<Vec<PageOutcome>, SkillError> {
        let mut crawl = Crawl::new(start, &self.origins, max_pages);
        while let Some(url) = crawl.next() {
            if ctx.is_cancelled() {
                return Err(SkillError::Canceled);
            }
            let fetched = tokio::select! {
                () = ctx.cancelled() => return Err(SkillError::Canceled),
                fetched = self.fetch(&url) => fetched,
            };
            let outcome = match fetched {
                Err(error) => PageOutcome::Failed {
                    url: url.to_string(),
                    error,
                },
                Ok((final_url, html)) => {
                    match self.audit(ctx, html, final_url.to_string()).await? {
                        Err(error) => PageOutcome::Failed {
                            url: final_url.to_string(),
                            error: error.to_string(),
                        },
                        Ok((report, links)) => {
                            crawl.add(&final_url, links.iter().map(String::as_str));
                            PageOutcome::Audited(report)
                        }
                    }
                }
            };
            crawl.record(outcome, ctx).await?;
        }
        Ok(crawl.outcomes())
    }

    /// Audits in the run's own browser context; what its pages were refused comes back
    /// with the outcomes.
    async fn rendered(
        &self,
        source: Source,
        ctx: &SkillContext,
    ) -> Result<(Vec<PageOutcome>, String, Option<BTreeMap<String, usize>>), SkillError> {
        let limit = Duration::from_millis(self.config.page_time_limit_ms);
        let (client, origins) = (self.client.clone(), self.origins.clone());
        let opening = self
            .chromium
            .session(client, origins, self.config.max_page_bytes);
        let mut session = tokio::select! {
            () = ctx.cancelled() => return Err(SkillError::Canceled),
            opened = opening => opened.map_err(SkillError::Failed)?,
        };
        let (outcomes, scope) = match source {
            Source::Inline { name, html } => {
                ctx.status(format!("auditing {name} in the browser"))
                    .await?;
                let outcome = rendered::inline(&mut session, &name, html, limit, ctx).await?;
                (vec![outcome], format!("inline:{name}"))
            }
            Source::Site { start, max_pages } => {
                let origins = &self.origins;
                let outcomes =
                    rendered::crawl(&session, start.clone(), max_pages, origins, limit, ctx)
                        .await?;
                (outcomes, start.to_string())
            }
        };
        Ok((outcomes, scope, Some(session.blocked())))
    }

    /// Records every violation as an issue; returns (new, updated).
    async fn record(
        &self,
        task_id: &TaskId,
        pages: &[&PageReport],
    ) -> Result<(usize, usize), SkillError> {
        let findings: Vec<NewIssue> = pages
            .iter()
            .flat_map(|page| {
                page.violations.iter().flat_map(move |rule| {
                    rule.nodes.iter().map(move |node| NewIssue {
                        fingerprint: fingerprint(&[SKILL_ID, &rule.id, &page.url, &node.target]),
                        source: SKILL_ID.into(),
                        rule: rule.id.to_string(),
                        severity: rule.impact.as_str().into(),
                        title: rule.help.to_string(),
                        location: page.url.clone(),
                        target: Some(node.target.clone()),
                        evidence: node.html.clone(),
                        remediation: format!("{} See {}", node.failure_summary, rule.help_url),
                        tags: rule.tags.iter().map(|t| t.to_string()).collect(),
                        task_id: task_id.clone(),
                    })
                })
            })
            .collect();
        findings::record(&*self.issues, findings).await
    }
}

#[async_trait]
impl Skill for A11yAuditSkill {
    /// The data part against the schema the card declares.
    fn check(&self, message: &fundi_runtime::Message) -> Result<(), fundi_runtime::InputRefused> {
        crate::schemas::check(SKILL_ID, message)
    }

    fn narrow(&self, original: &Message, narrowed: &Value) -> Result<(), InputRefused> {
        self.asking()
            .narrowing(original, narrowed)
            .map_err(InputRefused::from)
    }

    fn card(&self) -> SkillCard {
        let description = "Audits HTML pages against WCAG with axe-core's rule ids: inline \
                           HTML (text/html), an HTML file, or {\"url\", \"maxPages\"} on an \
                           allowed origin, crawling same-origin links. Answers with a JSON \
                           report and a summary, and records violations as issues.";
        SkillCard::new(SKILL_ID, description)
            .name("Accessibility audit")
            .tags(["accessibility", "wcag", "axe", "audit"])
            .examples([
                "Audit this page (attach the HTML as text/html)",
                "{\"url\": \"https://www.example.com/\", \"maxPages\": 5}",
            ])
            .input_modes(["text/html", "application/json"])
            .output_modes(["application/json", "text/plain"])
            .scope(SCOPE)
            // A re-run is a fresh audit, and issues are deduplicated: safe to run again.
            .resumable()
            .while_working(MessagePolicy::Interrupt)
            .input_schema(crate::schemas::of(SKILL_ID).unwrap_or_default())
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let asking = self.asking();
        let (source, mode) = (asking.source(&input.message)?, asking.mode(&input.message)?);
        let (outcomes, scope, blocked) = match (mode, source) {
            (AuditMode::Browser, source) => self.rendered(source, &ctx).await?,
            (AuditMode::Static, Source::Inline { name, html }) => {
                ctx.status(format!("auditing {name}")).await?;
                let url = format!("inline:{name}");
                let outcome = match self.audit(&ctx, html, url.clone()).await? {
                    Ok((report, _)) => PageOutcome::Audited(report),
                    Err(error) => return Err(SkillError::Rejected(format!("{url}: {error}"))),
                };
                ctx.progress(1.0, page_note(&outcome)).await?;
                (vec![outcome], url, None)
            }
            (AuditMode::Static, Source::Site { start, max_pages }) => {
                let outcomes = self.crawl(start.clone(), max_pages, &ctx).await?;
                (outcomes, start.to_string(), None)
            }
        };
        let pages: Vec<&PageReport> = outcomes
            .iter()
            .filter_map(|o| match o {
                PageOutcome::Audited(page) => Some(page),
                PageOutcome::Failed { .. } => None,
            })
            .collect();
        let errors: Vec<Value> = outcomes
            .iter()
            .filter_map(|o| match o {
                PageOutcome::Failed { url, error } => Some(json!({"url": url, "error": error})),
                PageOutcome::Audited(_) => None,
            })
            .collect();
        if pages.is_empty() {
            let why = errors
                .first()
                .and_then(|e| e["error"].as_str())
                .unwrap_or("nothing to audit");
            return Err(SkillError::Failed(format!(
                "no page could be audited: {why}"
            )));
        }
        let (new, updated) = self.record(&input.task_id, &pages).await?;
        let summary = summarize(&pages);
        let text = summary_text(&scope, &pages, &summary, errors.len(), new, updated);
        let rules = match mode {
            AuditMode::Static => "axe-core 4.10".to_owned(),
            AuditMode::Browser => format!("axe-core {}", axe_version()),
        };
        let mut report = json!({
            "tool": {"name": "fundi a11y-audit", "version": env!("CARGO_PKG_VERSION"),
                     "ruleIds": rules},
            "mode": mode.as_str(),
            "pages": pages,
            "errors": errors,
            "summary": summary,
            "issues": {"new": new, "updated": updated},
        });
        if let Some(blocked) = blocked {
            report["blocked"] = json!(blocked);
        }
        let artifact = Artifact::new(
            "a11y-report",
            "Accessibility report",
            vec![Part::data(report).with_media_type("application/json")],
        );
        Ok(SkillOutput {
            message: Some(Message::agent(vec![Part::text(text)])),
            artifacts: vec![artifact],
        })
    }
}
