//! What a run answers: each page's outcome, the summary over the pages, and the text
//! a person reads.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::audit::PageReport;

/// One audited page, or why it could not be.
pub(super) enum PageOutcome {
    Audited(PageReport),
    Failed { url: String, error: String },
}

pub(super) fn page_note(outcome: &PageOutcome) -> String {
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

pub(super) fn summarize(pages: &[&PageReport]) -> Value {
    let mut by_impact: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_rule: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut violations, mut incomplete, mut passes) = (0, 0, 0);
    for page in pages {
        for rule in &page.violations {
            *by_impact.entry(rule.impact.as_str()).or_default() += rule.nodes.len();
            *by_rule.entry(&rule.id).or_default() += rule.nodes.len();
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

pub(super) fn summary_text(
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
