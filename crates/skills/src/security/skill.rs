//! The `security-scan` skill: passive checks of an allowed target (and light active ones
//! when asked), a score and grade, findings recorded as issues. What an approver may
//! narrow a scan to is `narrowing`; what a message asks to scan, `plan`.

mod narrowing;
mod plan;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use fundi_ops::issues::{IssueStore, NewIssue, fingerprint};
use fundi_runtime::{
    Artifact, InputRefused, Message, MessagePolicy, Part, Skill, SkillCard, SkillContext,
    SkillError, SkillInput, SkillOutput, TaskId,
};
use reqwest::{Method, Url};
use serde_json::{Value, json};

use crate::findings;
use crate::origins::Origins;

use super::checks::{active, content, cookies, cors, headers, transport};
use super::config::SecurityConfig;
use super::finding::{Bonus, Finding, grade, score};
use super::grades::observatory_grade;
use super::http::{Fetcher, Response};
use super::landing;
use super::observatory::PreloadList;
use plan::Plan;

/// The skill's id.
pub const SKILL_ID: &str = "security-scan";
/// The scope a caller needs.
pub const SCOPE: &str = "fundi:security";
/// Redirects followed for a scanned path (each must stay on allowed origins).
const MAX_REDIRECTS: usize = 5;

/// The `security-scan` skill.
pub struct SecurityScanSkill {
    config: SecurityConfig,
    /// The extra CA roots, read from their files once.
    roots: Vec<reqwest::Certificate>,
    origins: Origins,
    issues: Arc<dyn IssueStore>,
    preload: Arc<PreloadList>,
}

impl std::fmt::Debug for SecurityScanSkill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecurityScanSkill")
            .field("origins", &self.origins)
            .finish_non_exhaustive()
    }
}

impl SecurityScanSkill {
    /// The skill with these settings, recording findings in `issues`.
    pub fn new(
        config: SecurityConfig,
        issues: Arc<dyn IssueStore>,
    ) -> Result<SecurityScanSkill, String> {
        config.validate()?;
        // Fail at start, not at the first scan, if a CA file is unreadable.
        let roots = Fetcher::load_roots(&config)?;
        let origins = Origins::new(&config.allowed_origins);
        let preload = match &config.hsts_preload_list {
            Some(path) => PreloadList::read(path)
                .map_err(|e| format!("skills.security-scan.hsts-preload-list: {e}"))?,
            None => PreloadList::default(),
        };
        Ok(SecurityScanSkill {
            config,
            roots,
            origins,
            issues,
            preload: Arc::new(preload),
        })
    }

    fn allowed(&self, url: &Url) -> bool {
        self.origins.allows(url)
    }

    /// GET, following redirects that stay on allowed origins; the last response (a
    /// redirect, when the chain leaves them or never settles) and what went wrong.
    async fn get(
        &self,
        fetcher: &Fetcher,
        url: &Url,
    ) -> Result<(Response, Option<String>), String> {
        let mut current = url.clone();
        let mut hops = 0;
        loop {
            let response = fetcher.request(Method::GET, &current, &[]).await?;
            let next = if (300..400).contains(&response.status) {
                response
                    .header("location")
                    .and_then(|l| current.join(l).ok())
            } else {
                None
            };
            let Some(next) = next else {
                return Ok((response, None));
            };
            if !self.allowed(&next) {
                let note = format!("{current} redirects to {next}, outside the allowed origins");
                return Ok((response, Some(note)));
            }
            if hops == MAX_REDIRECTS {
                let note = format!("{url} redirects more than {MAX_REDIRECTS} times");
                return Ok((response, Some(note)));
            }
            hops += 1;
            current = next;
        }
    }

    async fn record(
        &self,
        task_id: &TaskId,
        base: &Url,
        findings: &[Finding],
    ) -> Result<(usize, usize), SkillError> {
        let origin = base.origin().ascii_serialization();
        let issues: Vec<NewIssue> = findings
            .iter()
            .map(|finding| NewIssue {
                fingerprint: fingerprint(&[SKILL_ID, finding.id, &origin, &finding.target]),
                source: SKILL_ID.into(),
                rule: finding.id.into(),
                severity: finding.severity.as_str().into(),
                title: finding.title.clone(),
                location: finding.url.clone(),
                target: Some(finding.target.clone()),
                evidence: finding.evidence.clone(),
                remediation: finding.remediation.into(),
                tags: finding
                    .cwe
                    .map(|c| vec![format!("CWE-{c}")])
                    .unwrap_or_default(),
                task_id: task_id.clone(),
            })
            .collect();
        findings::record(&*self.issues, issues).await
    }
}

#[async_trait]
impl Skill for SecurityScanSkill {
    /// The data part against the schema the card declares.
    fn check(&self, message: &fundi_runtime::Message) -> Result<(), fundi_runtime::InputRefused> {
        crate::schemas::check(SKILL_ID, message)
    }

    fn narrow(&self, original: &Message, narrowed: &Value) -> Result<(), InputRefused> {
        self.narrowing(original, narrowed)
            .map_err(InputRefused::from)
    }

    fn card(&self) -> SkillCard {
        SkillCard::new(
            SKILL_ID,
            "Checks an allowed web target's HTTP security: TLS, HSTS, CSP, \
                          framing, cookies, CORS, disclosure, HTTPS redirection, mixed content \
                          and SRI; with \"active\": true also exposed files, directory \
                          listings, TRACE and open redirects. Gives the HTTP Observatory's grade, \
                          computed by its published method, and fundi's own risk grade, and \
                          records findings as issues.",
        )
        .name("Security scan")
        .tags(["security", "http", "headers", "tls"])
        .examples(["{\"url\": \"https://app.example.com/\", \"paths\": [\"/\", \"/login\"]}"])
        .input_modes(["application/json"])
        .output_modes(["application/json", "text/plain"])
        .required_scope(Some(SCOPE.into()))
        .resumable()
        .while_working(MessagePolicy::Interrupt)
        .input_schema(crate::schemas::of(SKILL_ID).unwrap_or_default())
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let plan = self.plan(&input.message)?;
        let fetcher = Fetcher::new(&self.config, &self.roots).map_err(SkillError::Failed)?;
        let mut findings: Vec<Finding> = Vec::new();
        let mut bonuses: Vec<Bonus> = Vec::new();
        let mut errors: Vec<Value> = Vec::new();
        let groups = if plan.active { 5.0 } else { 4.0 };

        // Transport: fetch every path (TLS problems show up here), then HTTP → HTTPS.
        let mut pages = Vec::new();
        for url in &plan.paths {
            let fetched = tokio::select! {
                () = ctx.cancelled() => return Err(SkillError::Canceled),
                fetched = self.get(&fetcher, url) => fetched,
            };
            match fetched {
                Ok((response, note)) => {
                    if let Some(note) = note {
                        errors.push(json!({"url": url.as_str(), "error": note}));
                    }
                    pages.push(response);
                }
                Err(error) => errors.push(json!({"url": url.as_str(), "error": error})),
            }
        }
        transport::tls(fetcher.tls_problem(), &plan.base, &mut findings);
        let Some(first) = pages.first().cloned() else {
            let why = errors
                .first()
                .and_then(|e| e["error"].as_str())
                .unwrap_or("no response");
            return Err(SkillError::Failed(format!(
                "could not reach {}: {why}",
                plan.base
            )));
        };
        if plan.base.scheme() == "http" {
            transport::plain_http(&first, &mut findings);
        } else {
            let checked =
                transport::http_redirect(&fetcher, &plan.base, |u| self.allowed(u), &mut findings)
                    .await;
            if !checked {
                errors.push(json!({"url": plan.base.as_str(),
                    "error": "HTTP→HTTPS redirection not checked: the http:// origin is not allowed"}));
            }
        }
        ctx.progress(1.0 / groups, "transport checked (TLS, HTTPS)")
            .await?;

        // Headers and cookies of every page.
        for page in pages.iter() {
            headers::check(page, &mut findings, &mut bonuses);
            cookies::check(page, &mut findings);
        }
        ctx.progress(2.0 / groups, "headers and cookies checked")
            .await?;

        if ctx.is_cancelled() {
            return Err(SkillError::Canceled);
        }
        cors::check(&fetcher, &first.url, &mut findings).await;
        ctx.progress(3.0 / groups, "CORS checked").await?;

        // Probes go where the scan landed (an http:// entry that redirects to https://
        // answers every probe with that redirect).
        let bases = landing::probe_bases(&plan.base, &pages);
        // Parsing a target's pages is CPU work, on the runtime's pool within its budget.
        let found = ctx
            .cpu(move |budget| {
                let mut found = Vec::new();
                for page in pages.iter() {
                    content::check_page(page, &mut found, budget);
                }
                found
            })
            .await?;
        findings.extend(found);
        for base in &bases {
            content::error_page(&fetcher, base, &mut findings).await;
        }
        ctx.progress(
            4.0 / groups,
            "content checked (mixed content, SRI, error pages)",
        )
        .await?;

        let mut active_budget_left = None;
        if plan.active {
            let mut budget = active::Budget::new(
                &fetcher,
                self.config.max_active_requests,
                self.config.active_requests_per_second,
            );
            for base in &bases {
                let paths = landing::rebased(&plan.paths, base);
                tokio::select! {
                    () = ctx.cancelled() => return Err(SkillError::Canceled),
                    () = active::check(&mut budget, base, &paths, &mut findings) => {}
                }
            }
            active_budget_left = Some(budget.left());
            ctx.progress(1.0, "active checks done").await?;
        }

        // One finding per check and target (the same header on every page counts once).
        let mut seen = HashSet::new();
        findings.retain(|f| seen.insert((f.id, f.target.clone())));
        findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.id.cmp(b.id)));
        let mut bonus_seen = HashSet::new();
        bonuses.retain(|b| bonus_seen.insert(b.id));
        let total = score(&findings, &bonuses);
        let letter = grade(total);
        let make_fetcher = || Fetcher::new(&self.config, &self.roots);
        let observatory = observatory_grade(
            &make_fetcher,
            &plan.base,
            plan.ports,
            &|u: &Url| self.allowed(u),
            self.preload.clone(),
            &ctx,
        )
        .await?;
        let (new, updated) = self.record(&input.task_id, &plan.base, &findings).await?;
        let mut by_severity: BTreeMap<&str, usize> = BTreeMap::new();
        for finding in &findings {
            *by_severity.entry(finding.severity.as_str()).or_default() += 1;
        }
        let mut text = summary(&plan, total, letter, &findings, &by_severity, new, updated);
        text.push_str(&observatory.summary());
        let report = json!({
            "target": plan.base.as_str(),
            "paths": plan.paths.iter().map(Url::as_str).collect::<Vec<_>>(),
            "active": plan.active,
            "probed": bases.iter().map(Url::as_str).collect::<Vec<_>>(),
            "score": total,
            "grade": letter,
            "risk": {"score": total, "grade": letter},
            "observatory": observatory,
            "findings": findings,
            "bonuses": bonuses,
            "bySeverity": by_severity,
            "requests": fetcher.log(),
            "activeRequestsLeft": active_budget_left,
            "errors": errors,
            "issues": {"new": new, "updated": updated},
        });
        let artifact = Artifact::new(
            "security-report",
            "Security report",
            vec![Part::data(report).with_media_type("application/json")],
        );
        Ok(SkillOutput {
            message: Some(Message::agent(vec![Part::text(text)])),
            artifacts: vec![artifact],
        })
    }
}

fn summary(
    plan: &Plan,
    total: i32,
    letter: &str,
    findings: &[Finding],
    by_severity: &BTreeMap<&str, usize>,
    new: usize,
    updated: usize,
) -> String {
    let counts: Vec<String> = ["high", "medium", "low", "info"]
        .iter()
        .filter_map(|s| by_severity.get(s).map(|n| format!("{n} {s}")))
        .collect();
    let mut text = format!(
        "Scanned {} ({} path{}, {}): grade {letter} ({total}/100). ",
        plan.base.origin().ascii_serialization(),
        plan.paths.len(),
        if plan.paths.len() == 1 { "" } else { "s" },
        if plan.active {
            "passive and active"
        } else {
            "passive"
        },
    );
    if counts.is_empty() {
        text.push_str("No findings.");
    } else {
        text.push_str(&format!("Findings: {}.", counts.join(", ")));
        let worst: Vec<&str> = findings.iter().take(3).map(|f| f.id).collect();
        text.push_str(&format!(" Worst: {}.", worst.join(", ")));
    }
    text.push_str(&format!(" Issues: {new} new, {updated} seen before."));
    text
}
