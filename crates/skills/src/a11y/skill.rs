//! The `a11y-audit` skill: takes inline HTML or a URL on an allowed origin (crawling
//! same-origin links up to a limit), audits each page, records violations as issues, and
//! answers with a JSON report and a short summary.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use fundi_ops::issues::{IssueStore, NewIssue, fingerprint};
use fundi_runtime::cpu::Exhausted;
use fundi_runtime::{
    Artifact, InputRefused, Message, MessagePolicy, Part, PartContent, Skill, SkillCard,
    SkillContext, SkillError, SkillInput, SkillOutput, TaskId,
};
use reqwest::Url;
use serde_json::{Value, json};

use crate::findings;
use crate::origins::Origins;

use super::audit::{PageReport, audit, decode};
use super::config::A11yConfig;
use super::page::{Limits, PageError};

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
}

impl std::fmt::Debug for A11yAuditSkill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A11yAuditSkill")
            .field("origins", &self.origins)
            .finish_non_exhaustive()
    }
}

/// What a message asks to audit.
#[derive(Debug)]
pub(super) enum Source {
    Inline { name: String, html: String },
    Site { start: Url, max_pages: usize },
}

/// One audited page, or why it could not be.
enum PageOutcome {
    Audited(PageReport),
    Failed { url: String, error: String },
}

impl A11yAuditSkill {
    /// The skill with these settings, recording findings in `issues`.
    pub fn new(config: A11yConfig, issues: Arc<dyn IssueStore>) -> Result<A11yAuditSkill, String> {
        config.validate()?;
        let origins = Origins::new(&config.allowed_origins);
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_millis(config.fetch_timeout_ms))
            .user_agent(concat!("fundi-a11y-audit/", env!("CARGO_PKG_VERSION")));
        let client = fundi_ops::resolver::guarded(client, config.allow_private_networks)
            .build()
            .map_err(|e| format!("a11y-audit: HTTP client: {e}"))?;
        Ok(A11yAuditSkill {
            config,
            origins,
            issues,
            client,
        })
    }

    fn limits(&self) -> Limits {
        Limits {
            max_bytes: self.config.max_page_bytes,
            max_elements: self.config.max_elements,
            max_depth: self.config.max_depth,
            max_attributes: self.config.max_attributes,
        }
    }

    fn allowed(&self, url: &Url) -> bool {
        self.origins.allows(url)
    }

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
        if !self.allowed(&start) {
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
            max_pages: max_pages.min(self.config.max_pages),
        })
    }

    /// Fetches an HTML page, following redirects that stay on allowed origins.
    async fn fetch(&self, url: &Url) -> Result<(Url, String), String> {
        let mut current = url.clone();
        for _ in 0..=MAX_REDIRECTS {
            if !self.allowed(&current) {
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
        let mut queue = VecDeque::from([start.clone()]);
        let mut seen: HashSet<String> = HashSet::from([start.to_string()]);
        let mut outcomes = Vec::new();
        while let Some(url) = queue.pop_front() {
            if outcomes.len() >= max_pages {
                break;
            }
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
                            for link in links {
                                let Ok(mut next) = final_url.join(&link) else {
                                    continue;
                                };
                                next.set_fragment(None);
                                let same_origin = next.origin() == start.origin();
                                if same_origin
                                    && self.allowed(&next)
                                    && seen.insert(next.to_string())
                                {
                                    queue.push_back(next);
                                }
                            }
                            PageOutcome::Audited(report)
                        }
                    }
                }
            };
            outcomes.push(outcome);
            let done = outcomes.len();
            let total = max_pages.min(done + queue.len()).max(done);
            ctx.progress(done as f64 / total as f64, page_note(&outcomes[done - 1]))
                .await?;
        }
        Ok(outcomes)
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
                        fingerprint: fingerprint(&[SKILL_ID, rule.id, &page.url, &node.target]),
                        source: SKILL_ID.into(),
                        rule: rule.id.into(),
                        severity: rule.impact.as_str().into(),
                        title: rule.help.into(),
                        location: page.url.clone(),
                        target: Some(node.target.clone()),
                        evidence: node.html.clone(),
                        remediation: format!("{} See {}", node.failure_summary, rule.help_url),
                        tags: rule.tags.iter().map(|t| (*t).to_owned()).collect(),
                        task_id: task_id.clone(),
                    })
                })
            })
            .collect();
        findings::record(&*self.issues, findings).await
    }
}

fn page_note(outcome: &PageOutcome) -> String {
    match outcome {
        PageOutcome::Audited(page) => format!(
            "audited {}: {} violations, {} to review",
            page.url,
            page.violation_count(),
            page.incomplete_count()
        ),
        PageOutcome::Failed { url, error } => format!("could not audit {url}: {error}"),
    }
}

#[async_trait]
impl Skill for A11yAuditSkill {
    /// The data part against the schema the card declares.
    fn check(&self, message: &fundi_runtime::Message) -> Result<(), fundi_runtime::InputRefused> {
        crate::schemas::check(SKILL_ID, message)
    }

    fn narrow(&self, original: &Message, narrowed: &Value) -> Result<(), InputRefused> {
        self.narrowing(original, narrowed)
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
        let source = self.source(&input.message)?;
        let (outcomes, scope) = match source {
            Source::Inline { name, html } => {
                ctx.status(format!("auditing {name}")).await?;
                let url = format!("inline:{name}");
                let outcome = match self.audit(&ctx, html, url.clone()).await? {
                    Ok((report, _)) => PageOutcome::Audited(report),
                    Err(error) => return Err(SkillError::Rejected(format!("{url}: {error}"))),
                };
                ctx.progress(1.0, page_note(&outcome)).await?;
                (vec![outcome], url)
            }
            Source::Site { start, max_pages } => {
                let outcomes = self.crawl(start.clone(), max_pages, &ctx).await?;
                (outcomes, start.to_string())
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
        let report = json!({
            "tool": {"name": "fundi a11y-audit", "version": env!("CARGO_PKG_VERSION"),
                     "ruleIds": "axe-core 4.10"},
            "pages": pages,
            "errors": errors,
            "summary": summary,
            "issues": {"new": new, "updated": updated},
        });
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

fn summarize(pages: &[&PageReport]) -> Value {
    let mut by_impact: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_rule: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut violations, mut incomplete, mut passes) = (0, 0, 0);
    for page in pages {
        for rule in &page.violations {
            *by_impact.entry(rule.impact.as_str()).or_default() += rule.nodes.len();
            *by_rule.entry(rule.id).or_default() += rule.nodes.len();
            violations += rule.nodes.len();
        }
        incomplete += page.incomplete_count();
        passes += page.passes.iter().map(|p| p.count).sum::<usize>();
    }
    json!({
        "pages": pages.len(),
        "violations": violations,
        "incomplete": incomplete,
        "passes": passes,
        "byImpact": by_impact,
        "byRule": by_rule,
    })
}

fn summary_text(
    scope: &str,
    pages: &[&PageReport],
    summary: &Value,
    failed_pages: usize,
    new: usize,
    updated: usize,
) -> String {
    let violations = summary["violations"].as_u64().unwrap_or(0);
    let mut text = format!(
        "Audited {} page{} of {scope}: {violations} violation{}",
        pages.len(),
        if pages.len() == 1 { "" } else { "s" },
        if violations == 1 { "" } else { "s" },
    );
    if let Some(by_impact) = summary["byImpact"].as_object()
        && !by_impact.is_empty()
    {
        let order = ["critical", "serious", "moderate", "minor"];
        let parts: Vec<String> = order
            .iter()
            .filter_map(|i| by_impact.get(*i).map(|n| format!("{n} {i}")))
            .collect();
        text.push_str(&format!(" ({})", parts.join(", ")));
    }
    text.push_str(&format!(
        ", {} check{} to review by hand.",
        summary["incomplete"],
        if summary["incomplete"] == 1 { "" } else { "s" }
    ));
    if let Some(by_rule) = summary["byRule"].as_object()
        && !by_rule.is_empty()
    {
        let mut rules: Vec<(&String, u64)> = by_rule
            .iter()
            .map(|(k, v)| (k, v.as_u64().unwrap_or(0)))
            .collect();
        rules.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let top: Vec<String> = rules
            .iter()
            .take(3)
            .map(|(id, n)| format!("{id} ({n})"))
            .collect();
        text.push_str(&format!(" Most frequent: {}.", top.join(", ")));
    }
    if failed_pages > 0 {
        text.push_str(&format!(
            " {failed_pages} page(s) could not be audited (see the report)."
        ));
    }
    text.push_str(&format!(" Issues: {new} new, {updated} seen before."));
    text
}
