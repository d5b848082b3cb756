//! The run's report: per phase, its faults, probe figures, chaos events and verdict
//! against the SLO; the run's verdict; a text summary; and the SLO breaches as issues.

use std::collections::BTreeMap;

use fundi_ops::issues::{NewIssue, fingerprint};
use fundi_runtime::TaskId;
use serde_json::{Value, json};

use super::ledger::Totals;
use super::plan::{Phase, Plan};
use super::probe::Figures;

/// The skill's id, as issues name their source.
const SOURCE: &str = "chaos-run";

/// A phase's figures missing what its SLO asks.
#[derive(Debug, Clone)]
pub(crate) struct Breach {
    pub(crate) phase: String,
    /// `slo-success-rate` or `slo-p99`.
    pub(crate) rule: &'static str,
    pub(crate) text: String,
}

/// A phase's verdict: `pass`, `fail`, or `none` (no SLO).
fn judge(phase: &Phase, figures: Option<&Figures>) -> (&'static str, Vec<Breach>) {
    let (Some(slo), Some(figures)) = (phase.slo, figures) else {
        return ("none", Vec::new());
    };
    let mut breaches = Vec::new();
    let mut breach = |rule, text: String| {
        breaches.push(Breach {
            phase: phase.name.clone(),
            rule,
            text,
        })
    };
    if let Some(wanted) = slo.success_rate {
        match figures.success_rate() {
            Some(got) if got >= wanted => {}
            Some(got) => breach(
                "slo-success-rate",
                format!(
                    "success rate {:.1}% in phase {} is below the SLO of {:.1}%",
                    got * 100.0,
                    phase.name,
                    wanted * 100.0
                ),
            ),
            None => breach(
                "slo-success-rate",
                format!(
                    "no probe ran in phase {} to measure its success rate",
                    phase.name
                ),
            ),
        }
    }
    if let Some(wanted) = slo.p99_ms {
        match figures.percentile(99.0) {
            Some(got) if got <= wanted as f64 => {}
            Some(got) => breach(
                "slo-p99",
                format!(
                    "p99 latency {got:.0} ms in phase {} is above the SLO of {wanted} ms",
                    phase.name
                ),
            ),
            // With no success at all, the success rate says so already.
            None if slo.success_rate.is_some() => {}
            None => breach(
                "slo-p99",
                format!(
                    "no probe succeeded in phase {} to measure its p99",
                    phase.name
                ),
            ),
        }
    }
    match breaches.is_empty() {
        true => ("pass", breaches),
        false => ("fail", breaches),
    }
}

/// What a run measured, put together.
pub(crate) struct Outcome {
    pub(crate) report: Value,
    pub(crate) breaches: Vec<Breach>,
    pub(crate) verdict: &'static str,
}

/// The report of a finished run.
pub(crate) fn build(
    plan: &Plan,
    proxy: &str,
    seed: u64,
    figures: Option<&[Figures]>,
    totals: &Totals,
    connections: u64,
) -> Outcome {
    let mut breaches = Vec::new();
    let mut judged = false;
    let phases: Vec<Value> = plan
        .phases
        .iter()
        .enumerate()
        .map(|(i, phase)| {
            let figures = figures.map(|f| &f[i]);
            let (verdict, found) = judge(phase, figures);
            judged |= verdict != "none";
            let chaos = totals.chaos.get(i).cloned().unwrap_or_default();
            let value = json!({
                "name": phase.name,
                "durationMs": phase.duration.as_millis() as u64,
                "faults": phase.faults.iter().map(|f| f.to_json()).collect::<Vec<_>>(),
                "probe": figures.map(Figures::to_json),
                "chaosEvents": {"total": chaos.values().sum::<u64>(), "byFault": chaos},
                "slo": phase.slo.map(|s| json!({"successRate": s.success_rate, "p99Ms": s.p99_ms})),
                "verdict": verdict,
                "breaches": found.iter().map(|b| b.text.as_str()).collect::<Vec<_>>(),
            });
            breaches.extend(found);
            value
        })
        .collect();
    let verdict = match (judged, breaches.is_empty()) {
        (false, _) => "none",
        (true, true) => "pass",
        (true, false) => "fail",
    };
    let report = json!({
        "target": plan.target.to_string(),
        "proxy": proxy,
        "mode": if plan.target.is_http() { "http" } else { "tcp" },
        "seed": seed,
        "durationMs": plan.duration().as_millis() as u64,
        "verdict": verdict,
        "phases": phases,
        "connections": connections,
        "chaosEvents": {
            "total": totals.chaos.iter().flat_map(|c| c.values()).sum::<u64>(),
            "logged": totals.logged,
            "notLogged": totals.not_logged,
        },
        "genuineErrors": {"byKind": totals.genuine, "samples": totals.samples},
    });
    Outcome {
        report,
        breaches,
        verdict,
    }
}

/// The report in a few lines.
pub(crate) fn summary(
    plan: &Plan,
    outcome: &Outcome,
    figures: Option<&[Figures]>,
    totals: &Totals,
) -> String {
    let mut text = format!(
        "Chaos run against {} ({} phase{}, {} s): verdict {}.",
        plan.target,
        plan.phases.len(),
        if plan.phases.len() == 1 { "" } else { "s" },
        plan.duration().as_secs(),
        outcome.verdict
    );
    for (i, phase) in plan.phases.iter().enumerate() {
        let events: u64 = totals.chaos.get(i).map_or(0, |c| c.values().sum());
        let probes = figures.map_or("no probe".into(), |f| f[i].line());
        text.push_str(&format!(
            "\n- {}: {probes}; {events} chaos events",
            phase.name
        ));
    }
    for breach in &outcome.breaches {
        text.push_str(&format!("\nSLO breach: {}.", breach.text));
    }
    let genuine: u64 = totals.genuine.values().sum();
    if genuine > 0 {
        text.push_str(&format!(
            "\n{genuine} genuine errors of the proxy or the target (not injected): see the \
             report's genuineErrors."
        ));
    }
    text
}

/// The breaches as issues, one per target, phase and SLO (deduplicated across runs).
pub(crate) fn issues(plan: &Plan, breaches: &[Breach], task_id: &TaskId) -> Vec<NewIssue> {
    let target = plan.target.to_string();
    let faults: BTreeMap<&str, &Phase> = plan.phases.iter().map(|p| (p.name.as_str(), p)).collect();
    breaches
        .iter()
        .map(|breach| {
            let injected: Vec<&str> = faults
                .get(breach.phase.as_str())
                .map(|p| p.faults.iter().map(|f| f.kind.name()).collect())
                .unwrap_or_default();
            NewIssue {
                fingerprint: fingerprint(&[SOURCE, breach.rule, &target, &breach.phase]),
                source: SOURCE.into(),
                rule: breach.rule.into(),
                severity: "medium".into(),
                title: format!("{target}: {}", breach.text),
                location: target.clone(),
                target: Some(format!("phase {}", breach.phase)),
                evidence: match injected.is_empty() {
                    true => "no fault was injected in this phase".into(),
                    false => format!("faults injected: {}", injected.join(", ")),
                },
                remediation: "See how the target and its clients handle these faults: \
                              timeouts shorter than the SLO, retries with backoff, circuit \
                              breakers, spare capacity."
                    .into(),
                tags: vec!["slo".into(), "resilience".into()],
                task_id: task_id.clone(),
            }
        })
        .collect()
}
