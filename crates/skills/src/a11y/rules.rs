//! The rules, with axe-core's ids, impacts, tags and help texts, so that results compare
//! with the tool the industry uses. Each rule looks at the page and records, per
//! element it applies to, a pass, a violation, or "needs review" (incomplete).

mod aria;
mod color;
mod forms;
mod outline;
mod structure;
mod table;
mod tables;
mod text_alternatives;

pub(crate) use table::RULES;

use std::time::Instant;

use fundi_runtime::cpu::Budget;

use serde::Serialize;

use super::page::{Page, PageError};

/// How much a violation hurts (axe-core's scale).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Impact {
    /// Minor.
    Minor,
    /// Moderate.
    Moderate,
    /// Serious.
    Serious,
    /// Critical.
    Critical,
}

impl Impact {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Impact::Minor => "minor",
            Impact::Moderate => "moderate",
            Impact::Serious => "serious",
            Impact::Critical => "critical",
        }
    }
}

/// What a rule is.
#[derive(Debug)]
pub struct RuleInfo {
    /// axe-core's rule id.
    pub id: &'static str,
    /// axe-core's impact.
    pub impact: Impact,
    /// axe-core's tags (category, WCAG level and success criterion, best-practice).
    pub tags: &'static [&'static str],
    /// axe-core's help text.
    pub help: &'static str,
}

impl RuleInfo {
    /// Deque University's page for the rule.
    pub fn help_url(&self) -> String {
        format!("https://dequeuniversity.com/rules/axe/4.10/{}", self.id)
    }
}

/// One element's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeResult {
    /// A CSS selector for the element.
    pub target: String,
    /// Its markup (shortened).
    pub html: String,
    /// What is wrong, or what needs review.
    pub failure_summary: String,
}

/// What one rule found on a page.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Elements that fail.
    pub violations: Vec<NodeResult>,
    /// How many elements pass.
    pub passes: usize,
    /// Elements a person must check.
    pub incomplete: Vec<NodeResult>,
}

/// A rule's view of the page while it runs.
pub(crate) struct Check<'p, 'a> {
    pub(crate) page: &'p Page<'a>,
    out: Outcome,
}

impl Check<'_, '_> {
    pub(crate) fn pass(&mut self) {
        self.out.passes += 1;
    }

    pub(crate) fn fail(&mut self, i: usize, message: impl Into<String>) {
        let node = self.node(i, message.into());
        self.out.violations.push(node);
    }

    pub(crate) fn review(&mut self, i: usize, message: impl Into<String>) {
        let node = self.node(i, message.into());
        self.out.incomplete.push(node);
    }

    /// Pass or fail by a condition.
    pub(crate) fn expect(&mut self, i: usize, ok: bool, message: impl FnOnce() -> String) {
        if ok {
            self.pass();
        } else {
            self.fail(i, message());
        }
    }

    fn node(&self, i: usize, message: String) -> NodeResult {
        NodeResult {
            target: self.page.selector(i),
            html: self.page.snippet(i),
            failure_summary: message,
        }
    }
}

/// What a rule is: a look at the page through a `Check`.
pub(crate) type RuleFn = fn(&mut Check<'_, '_>);

/// Runs every rule on the page, looking at the budget before each.
pub(crate) fn run_all(
    page: &Page<'_>,
    budget: &Budget,
) -> Result<Vec<(&'static RuleInfo, Outcome)>, PageError> {
    let mut results = Vec::with_capacity(RULES.len());
    for (info, rule) in RULES {
        budget.check().map_err(PageError::from_budget)?;
        let mut check = Check {
            page,
            out: Outcome::default(),
        };
        let started = Instant::now();
        rule(&mut check);
        tracing::trace!(
            rule = info.id,
            elapsed_us = started.elapsed().as_micros() as u64,
            "a11y rule ran"
        );
        results.push((info, check.out));
    }
    Ok(results)
}

/// Every rule, in the order they run.
pub fn all() -> impl Iterator<Item = &'static RuleInfo> {
    RULES.iter().map(|(info, _)| info)
}

/// The rule with this id.
pub fn info(id: &str) -> Option<&'static RuleInfo> {
    RULES
        .iter()
        .map(|(info, _)| info)
        .find(|info| info.id == id)
}
