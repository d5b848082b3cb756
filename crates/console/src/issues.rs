//! The issues page (operators): what the auditing skills found, by source, severity and
//! status, worst first, each with the heal task that holds it and that task's state.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use fundi_ops::issues::{Issue, IssueStatus};
use fundi_runtime::Access;
use maud::{Markup, html};
use serde::Deserialize;

use crate::gate::require_admin;
use crate::page::{Problem, Section, page, respond};
use crate::tasks::encode;
use crate::viewer::Viewer;
use crate::words::link;
use crate::words::{badge, clip, when};
use fundi_gateway::AppState;
use fundi_gateway::operations::fixes::HEAL_SKILL;

/// Severities from worst to least, over both auditing skills' scales.
const SEVERITY_ORDER: [&str; 8] = [
    "critical", "high", "serious", "medium", "moderate", "low", "minor", "info",
];
const STATUSES: [&str; 4] = ["open", "fix-proposed", "fixed", "resolved"];

#[derive(Debug, Default, Deserialize)]
pub(super) struct Filter {
    #[serde(default)]
    source: String,
    #[serde(default)]
    severity: String,
    #[serde(default)]
    status: String,
}

pub(super) async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(filter): Query<Filter>,
) -> Result<Response, Problem> {
    require_admin(&viewer)?;
    let Some(store) = state.issues() else {
        return Err(Problem::new(
            StatusCode::NOT_FOUND,
            "Not kept",
            "No issue store is configured on this server.",
        ));
    };
    let status = match filter.status.trim() {
        "" => None,
        name => Some(IssueStatus::parse(name).ok_or_else(|| {
            Problem::bad_form(format!(
                "there is no issue status {name:?}: open, fix-proposed, fixed or resolved"
            ))
        })?),
    };
    let source = Some(filter.source.trim()).filter(|s| !s.is_empty());
    let severity = filter.severity.trim();
    let mut issues = store.issues(source).await.map_err(|error| {
        tracing::error!(%error, "listing issues for the console");
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Something went wrong",
            "The issue store could not be read.",
        )
    })?;
    issues.retain(|i| status.is_none_or(|s| i.status == s));
    issues.retain(|i| severity.is_empty() || i.finding.severity == severity);
    issues.sort_by_key(|i| (rank(&i.finding.severity), std::cmp::Reverse(i.last_seen)));
    let heals = heal_skill(&state, &viewer).is_some();
    let mut rows = Vec::with_capacity(issues.len());
    for issue in &issues {
        let heal = match &issue.heal {
            Some(link) => state
                .runtime()
                .get(&link.task_id, Some(0), Access::Any)
                .await
                .ok()
                .map(|t| t.status.state),
            None => None,
        };
        rows.push(row(issue, heal, heals.then(|| viewer.csrf())));
    }
    let body = html! {
        form class="filters" method="get" action="/console/issues" {
            label for="source" { "Source" }
            input id="source" name="source" type="text" value=(filter.source);
            label for="severity" { "Severity" }
            select id="severity" name="severity" {
                option value="" selected[severity.is_empty()] { "any" }
                @for s in SEVERITY_ORDER { option value=(s) selected[severity == s] { (s) } }
            }
            label for="status" { "Status" }
            select id="status" name="status" {
                option value="" selected[status.is_none()] { "any" }
                @for s in STATUSES { option value=(s) selected[filter.status.trim() == s] { (s) } }
            }
            button type="submit" { "Filter" }
        }
        p { (issues.len()) " issues." }
        @if !rows.is_empty() {
            table class="report" {
                thead { tr { th scope="col" { "Severity" } th scope="col" { "Issue" } th scope="col" { "Where" }
                             th scope="col" { "Status" } th scope="col" { "Seen" } th scope="col" { "Heal task" } } }
                tbody { @for row in rows { (row) } }
            }
        }
    };
    Ok(respond(
        StatusCode::OK,
        page("Issues", Some(&viewer), Section::Issues, body),
    ))
}

fn rank(severity: &str) -> usize {
    SEVERITY_ORDER
        .iter()
        .position(|s| *s == severity)
        .unwrap_or(SEVERITY_ORDER.len())
}

/// The heal skill's id, when this server runs it and `viewer` holds its scope.
pub(super) fn heal_skill(state: &AppState, viewer: &Viewer) -> Option<&'static str> {
    let card = state
        .runtime()
        .skills()
        .iter()
        .find(|c| c.id == HEAL_SKILL)?;
    viewer
        .grants()
        .allows(card.required_scope.as_deref())
        .then_some(HEAL_SKILL)
}

/// The origin of a finding's location (`https://site.example/`), when it is a URL: the
/// site a heal most likely fixes.
fn origin_of(location: &str) -> String {
    match reqwest::Url::parse(location) {
        Ok(url) if url.has_host() => format!("{}/", url.origin().ascii_serialization()),
        _ => String::new(),
    }
}

/// One issue's row; `csrf`, when the viewer may heal, adds the form that starts a heal.
fn row(issue: &Issue, heal: Option<fundi_runtime::TaskState>, csrf: Option<&str>) -> Markup {
    let finding = &issue.finding;
    let id = issue.id();
    html! {
        tr {
            td { span class={ "severity " (finding.severity) } { (finding.severity) } }
            td { (finding.title) br; code { (finding.source) " · " (finding.rule) } br;
                 "id " code { (id) } }
            td { (link(&finding.location))
                 @if let Some(target) = &finding.target { br; code { (clip(target, 80)) } } }
            td { (issue.status.as_str()) }
            td { (issue.occurrences) " times, last " (when(issue.last_seen)) }
            td {
                @if let Some(link) = &issue.heal {
                    a href={ "/console/tasks/" (encode(link.task_id.as_str())) } { code { (link.task_id.as_str()) } }
                    @if let Some(state) = heal { " " (badge(state)) }
                    @if let Some(branch) = &link.branch { br; "branch " code { (branch) } }
                } @else if let Some(csrf) = csrf {
                    form class="heal" method="post" action={ "/console/issues/" (encode(id)) "/heal" } {
                        input type="hidden" name="csrf" value=(csrf);
                        label for={ "repository-" (id) } { "Repository" }
                        input id={ "repository-" (id) } name="repository" type="text" required;
                        label for={ "site-" (id) } { "Site the repository serves" }
                        input id={ "site-" (id) } name="site" type="text" value=(origin_of(&finding.location));
                        label for={ "root-" (id) } { "Site root in it (optional)" }
                        input id={ "root-" (id) } name="root" type="text";
                        button type="submit" aria-label={ "Heal issue " (id) } { "Heal this" }
                    }
                } @else { "none" }
            }
        }
    }
}
