//! axe-core in the page: the pinned build that ships with fundi (`assets/axe-core`,
//! Mozilla Public License 2.0, unmodified), injected into the rendered page and run
//! there; its results read into fundi's report, rule ids, impacts and tags as axe-core
//! gives them.

use std::borrow::Cow;

use serde::Deserialize;

use super::super::audit::{PageReport, PassCount, RuleReport};
use super::super::rules::{Impact, NodeResult};

/// axe-core's minified build, as published on npm.
pub(super) const SOURCE: &str = include_str!("../../../assets/axe-core/axe.min.js");

/// The version of [`SOURCE`], from its banner (`/*! axe v4.14.1`).
pub fn version() -> &'static str {
    SOURCE
        .strip_prefix("/*! axe v")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("unknown")
}

/// Runs axe-core on the document and answers with its results, the page's title and its
/// links, as one JSON text.
pub(super) const RUN: &str = r#"(async () => {
  const results = await axe.run(document, {
    resultTypes: ['violations', 'incomplete'],
    elementRef: false,
  });
  const shape = (rules) => rules.map((r) => ({
    id: r.id, impact: r.impact, tags: r.tags, help: r.help, helpUrl: r.helpUrl,
    nodes: r.nodes.map((n) => ({
      target: n.target.map((t) => Array.isArray(t) ? t.join(' >>> ') : String(t)).join(' '),
      html: n.html, failureSummary: n.failureSummary || '',
    })),
  }));
  return JSON.stringify({
    title: document.title,
    url: location.href,
    links: Array.from(document.querySelectorAll('a[href], area[href]'), (a) => a.href),
    violations: shape(results.violations),
    incomplete: shape(results.incomplete),
    passes: results.passes.map((r) => ({ id: r.id, count: r.nodes.length })),
    inapplicable: results.inapplicable.map((r) => r.id),
  });
})()"#;

/// What [`RUN`] answers.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(in crate::a11y) struct Rendered {
    title: String,
    /// Where the page is now (a client-side route may have changed it).
    pub(in crate::a11y) url: String,
    /// Its links, absolute.
    pub(in crate::a11y) links: Vec<String>,
    violations: Vec<Rule>,
    incomplete: Vec<Rule>,
    passes: Vec<Passed>,
    inapplicable: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: String,
    impact: Option<String>,
    tags: Vec<String>,
    help: String,
    help_url: String,
    nodes: Vec<Node>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Node {
    target: String,
    html: String,
    failure_summary: String,
}

#[derive(Debug, Deserialize)]
struct Passed {
    id: String,
    count: usize,
}

impl Rendered {
    /// The page's report: `url` is the address audited (or `inline:<name>`).
    pub(in crate::a11y) fn report(self, url: String) -> PageReport {
        let rules = |rules: Vec<Rule>| -> Vec<RuleReport> {
            rules
                .into_iter()
                .filter(|rule| !rule.nodes.is_empty())
                .map(|rule| RuleReport {
                    impact: impact(rule.impact.as_deref()),
                    id: Cow::Owned(rule.id),
                    tags: rule.tags.into_iter().map(Cow::Owned).collect(),
                    help: Cow::Owned(rule.help),
                    help_url: rule.help_url,
                    nodes: rule
                        .nodes
                        .into_iter()
                        .map(|node| NodeResult {
                            target: node.target,
                            html: node.html,
                            failure_summary: node.failure_summary,
                        })
                        .collect(),
                })
                .collect()
        };
        PageReport {
            url,
            title: Some(self.title).filter(|t| !t.trim().is_empty()),
            violations: rules(self.violations),
            incomplete: rules(self.incomplete),
            passes: self
                .passes
                .into_iter()
                .filter(|p| p.count > 0)
                .map(|p| PassCount {
                    id: Cow::Owned(p.id),
                    count: p.count,
                })
                .collect(),
            inapplicable: self.inapplicable.into_iter().map(Cow::Owned).collect(),
        }
    }
}

/// axe-core's impact; a rule with none (it needs review and says nothing) counts as minor.
fn impact(name: Option<&str>) -> Impact {
    match name {
        Some("critical") => Impact::Critical,
        Some("serious") => Impact::Serious,
        Some("moderate") => Impact::Moderate,
        _ => Impact::Minor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_build_names_its_version() {
        assert!(version().starts_with("4."), "{}", version());
    }

    #[test]
    fn axe_results_read_into_the_report() {
        let rendered: Rendered = serde_json::from_value(serde_json::json!({
            "title": "Shop", "url": "https://shop.example/#/cart", "links": [],
            "violations": [{"id": "image-alt", "impact": "critical", "tags": ["wcag2a"],
                "help": "Images must have alternative text", "helpUrl": "https://x/image-alt",
                "nodes": [{"target": "img", "html": "<img src=a.png>", "failureSummary": "Fix"}]}],
            "incomplete": [{"id": "color-contrast", "impact": null, "tags": [], "help": "h",
                "helpUrl": "u", "nodes": []}],
            "passes": [{"id": "document-title", "count": 1}],
            "inapplicable": ["video-caption"],
        }))
        .unwrap();
        let report = rendered.report("https://shop.example/".into());
        assert_eq!(report.title.as_deref(), Some("Shop"));
        assert_eq!(report.violations[0].id, "image-alt");
        assert_eq!(report.violations[0].impact, Impact::Critical);
        assert_eq!(report.violations[0].nodes[0].target, "img");
        // A rule with no element is no finding.
        assert!(report.incomplete.is_empty());
        assert_eq!(report.passes[0].id, "document-title");
        assert_eq!(report.inapplicable, vec!["video-caption"]);
    }
}
