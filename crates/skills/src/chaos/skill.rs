//! The `chaos-run` skill: a proxy in front of an allowed target that injects the faults
//! of each phase of a bounded plan, probe traffic through it, and a report per phase.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use fundi_ops::chaos::ChaosLog;
use fundi_ops::issues::IssueStore;
use fundi_runtime::{
    Artifact, InputRefused, Message, Part, Skill, SkillCard, SkillContext, SkillError, SkillInput,
    SkillOutput,
};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::config::ChaosConfig;
use super::ledger::Ledger;
use super::link::Shared;
use super::plan::Plan;
use super::probe::{Figures, Prober};
use super::proxy::Proxy;
use super::report;
use crate::findings;

/// The skill's id.
pub const SKILL_ID: &str = "chaos-run";
/// The scope a caller needs (auditing does not let a caller inject faults).
pub const SCOPE: &str = "fundi:chaos";
/// How often a phase's live figures are posted.
const LIVE_EVERY: Duration = Duration::from_secs(1);

/// The `chaos-run` skill.
pub struct ChaosRunSkill {
    config: ChaosConfig,
    issues: Arc<dyn IssueStore>,
    log: Arc<dyn ChaosLog>,
}

impl std::fmt::Debug for ChaosRunSkill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChaosRunSkill")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ChaosRunSkill {
    /// The skill with these settings, recording SLO breaches in `issues` and every
    /// injected fault in `log`.
    pub fn new(
        config: ChaosConfig,
        issues: Arc<dyn IssueStore>,
        log: Arc<dyn ChaosLog>,
    ) -> Result<ChaosRunSkill, String> {
        config.validate()?;
        Ok(ChaosRunSkill {
            config,
            issues,
            log,
        })
    }

    /// Runs the phases one after the other, posting live figures, until the plan ends
    /// (or the run is canceled, or the proxy breaks).
    async fn drive(
        &self,
        plan: &Plan,
        proxy: &Proxy,
        prober: Option<&Prober>,
        ledger: &Ledger,
        ctx: &SkillContext,
    ) -> Result<(), SkillError> {
        let total = plan.duration().as_secs_f64().max(f64::EPSILON);
        let started = Instant::now();
        let fraction = || (started.elapsed().as_secs_f64() / total).min(1.0);
        let count = plan.phases.len();
        for (i, phase) in plan.phases.iter().enumerate() {
            if i > 0 {
                proxy.enter(i);
            }
            let faults: Vec<&str> = phase.faults.iter().map(|f| f.name.as_str()).collect();
            let faults = match faults.is_empty() {
                true => "no faults".to_owned(),
                false => faults.join(", "),
            };
            ctx.progress(
                fraction(),
                format!("phase {} ({}/{count}) started: {faults}", phase.name, i + 1),
            )
            .await?;
            let end = Instant::now() + phase.duration;
            let mut live = tokio::time::interval_at(Instant::now() + LIVE_EVERY, LIVE_EVERY);
            loop {
                tokio::select! {
                    () = ctx.cancelled() => return Err(SkillError::Canceled),
                    why = proxy.broken() => return Err(SkillError::Failed(why)),
                    () = tokio::time::sleep_until(end) => break,
                    _ = live.tick() => {
                        let figures = prober.map_or("no probe".into(), |p| p.figures(i).line());
                        let text = format!(
                            "phase {}: {figures}; {} chaos events",
                            phase.name,
                            ledger.chaos_in(i)
                        );
                        ctx.post_progress(fraction(), text).await?;
                    }
                }
            }
        }
        Ok(())
    }

    fn narrowing(&self, original: &Message, narrowed: &Value) -> Result<(), String> {
        let asked = Plan::read(original, &self.config)?;
        let narrow = Plan::parse(narrowed, &self.config)?;
        if narrow.target != asked.target || narrow.listen != asked.listen {
            return Err(format!(
                "a narrowed plan keeps the target {} and the listen address {}",
                asked.target, asked.listen
            ));
        }
        for phase in &narrow.phases {
            let Some(was) = asked.phases.iter().find(|p| p.name == phase.name) else {
                return Err(format!(
                    "phase {:?} is not in the plan asked for",
                    phase.name
                ));
            };
            if phase.duration > was.duration {
                return Err(format!(
                    "phase {:?} lasts longer than the {} ms asked for",
                    phase.name,
                    was.duration.as_millis()
                ));
            }
            for fault in &phase.faults {
                let within = was.faults.iter().any(|w| {
                    w.kind == fault.kind && w.stream == fault.stream && fault.toxicity <= w.toxicity
                });
                if !within {
                    return Err(format!(
                        "phase {:?}: the {} fault is not one asked for (same attributes and \
                         stream, toxicity no higher)",
                        phase.name, fault.name
                    ));
                }
            }
        }
        match (&narrow.probe, &asked.probe) {
            (None, _) => Ok(()),
            (Some(probe), Some(was)) if probe.rate <= was.rate && probe.kind == was.kind => Ok(()),
            _ => Err("the probe may only be dropped or slowed down".into()),
        }
    }
}

#[async_trait]
impl Skill for ChaosRunSkill {
    fn card(&self) -> SkillCard {
        let description = "Puts a fault-injecting proxy in front of an allowed target (host:port, \
                          or an http(s) origin) for a bounded plan of phases: Toxiproxy's \
                          toxics (latency, bandwidth, slow_close, timeout, reset_peer, slicer, \
                          limit_data), down, and for HTTP targets injected errors and delayed \
                          headers or bodies. Publishes the proxy's address at once, probes \
                          through it, reports each phase against the SLO, records breaches as \
                          issues and every injected fault as a chaos event.";
        let example = "{\"target\": \"127.0.0.1:5432\", \"plan\": [{\"name\": \"baseline\", \
                 \"durationMs\": 5000}, {\"name\": \"fault\", \"durationMs\": 10000, \
                 \"faults\": [{\"type\": \"latency\", \"attributes\": {\"latency\": 200}}]}], \
                 \"probe\": {\"kind\": \"tcp\"}, \"slo\": {\"successRate\": 0.99}}";
        // A fault injected before a crash is not injected again after it: not resumable.
        SkillCard::new(SKILL_ID, description)
            .name("Chaos run")
            .tags(["chaos", "resilience", "proxy"])
            .example(example)
            .input_modes(["application/json"])
            .output_modes(["application/json", "text/plain"])
            .scope(SCOPE)
            .input_schema(crate::schemas::of(SKILL_ID).unwrap_or_default())
    }

    fn check(&self, message: &Message) -> Result<(), InputRefused> {
        crate::schemas::check(SKILL_ID, message)?;
        Plan::read(message, &self.config)
            .map(drop)
            .map_err(InputRefused::from)
    }

    fn narrow(&self, original: &Message, narrowed: &Value) -> Result<(), InputRefused> {
        self.narrowing(original, narrowed)
            .map_err(InputRefused::from)
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let plan = Plan::read(&input.message, &self.config).map_err(SkillError::Rejected)?;
        let seed = plan.seed.unwrap_or_else(rand::random);
        let http = match plan.target.is_http() {
            true => Some(
                reqwest::Client::builder()
                    .no_proxy()
                    .redirect(reqwest::redirect::Policy::none())
                    .connect_timeout(Duration::from_secs(10))
                    .build()
                    .map_err(|e| SkillError::Failed(format!("the proxy's HTTP client: {e}")))?,
            ),
            false => None,
        };
        let names = plan.phases.iter().map(|p| p.name.clone()).collect();
        let (ledger, writer) = Ledger::start(
            Some(ctx.clone()),
            self.log.clone(),
            input.task_id.clone(),
            names,
            self.config.max_events,
        );
        let phases = plan.phases.clone().into();
        // The listener opens at most once at a time: with several nodes, only while this
        // one still holds the task.
        ctx.ensure_still_held().await?;
        let proxy = Proxy::start(plan.listen, self.config.max_connections, |stage| Shared {
            phases,
            target: plan.target.clone(),
            ledger: ledger.clone(),
            stage,
            seed,
            http,
        })
        .await
        .map_err(SkillError::Failed)?;
        let address = proxy.local().to_string();
        let prober = match &plan.probe {
            Some(probe) => Some(
                Prober::start(
                    probe.clone(),
                    proxy.local(),
                    proxy.stages(),
                    plan.phases.len(),
                )
                .map_err(SkillError::Failed)?,
            ),
            None => None,
        };
        let published = ctx.artifact(proxy_artifact(&plan, &address)).await;
        let driven = match published {
            Ok(()) => {
                self.drive(&plan, &proxy, prober.as_ref(), &ledger, &ctx)
                    .await
            }
            Err(error) => Err(error),
        };
        // Probes in flight finish through the proxy at the plan's end; on a cancel or a
        // failure they are dropped with it, at once.
        let figures: Option<Vec<Figures>> = match (&driven, prober) {
            (Ok(()), Some(prober)) => Some(prober.finish().await),
            _ => None,
        };
        let connections = proxy.connections();
        proxy.shutdown().await;
        let logged = writer.finish().await;
        driven?;
        logged.map_err(SkillError::Failed)?;

        let totals = ledger.totals();
        let outcome = report::build(
            &plan,
            &address,
            seed,
            figures.as_deref(),
            &totals,
            connections,
        );
        let text = report::summary(&plan, &outcome, figures.as_deref(), &totals);
        let issues = report::issues(&plan, &outcome.breaches, &input.task_id);
        let (new, updated) = findings::record(&*self.issues, issues).await?;
        let mut report = outcome.report;
        report["issues"] = json!({"new": new, "updated": updated});
        let artifact = Artifact::new(
            "chaos-report",
            "Chaos report",
            vec![Part::data(report).with_media_type("application/json")],
        );
        Ok(SkillOutput {
            message: Some(Message::agent(vec![Part::text(text)])),
            artifacts: vec![artifact],
        })
    }
}

/// The proxy's address, published as soon as it listens so that outside clients can be
/// pointed through it.
fn proxy_artifact(plan: &Plan, address: &str) -> Artifact {
    let url = plan.target.is_http().then(|| format!("http://{address}"));
    let data = json!({
        "listen": address,
        "url": url,
        "target": plan.target.to_string(),
        "phases": plan.phases.iter().map(|p| json!({
            "name": p.name, "durationMs": p.duration.as_millis() as u64})).collect::<Vec<_>>(),
    });
    Artifact::new(
        "chaos-proxy",
        "Chaos proxy",
        vec![Part::data(data).with_media_type("application/json")],
    )
}
