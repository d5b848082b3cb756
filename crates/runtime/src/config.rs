//! Runtime settings. The binary reads them from `config/fundi.toml` and the environment;
//! embedders build them in code.

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::SkillId;

/// How the runtime runs tasks. Start from `RuntimeConfig::default()` and set what
/// differs: a setting added later breaks no embedder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct RuntimeConfig {
    /// Skill for messages that name none (message metadata `skill`). Default: none, unless
    /// exactly one skill is registered, which is then used.
    pub default_skill: Option<SkillId>,
    /// Runs of one skill at a time; more tasks wait in `submitted`, first come first
    /// served. Default: 64.
    pub max_concurrent_runs: usize,
    /// Per-skill overrides of `max-concurrent-runs`, by skill id. Default: none.
    pub skill_concurrency: HashMap<SkillId, usize>,
    /// How long a canceled skill may take to stop before it is aborted, in ms.
    /// Default: 5000.
    pub cancel_grace_ms: u64,
    /// Live events buffered per task for subscribers; one that falls further behind is
    /// served from the store instead. Default: 1024.
    pub subscriber_buffer: usize,
    /// Longest wait for an internal actor to answer, in ms. Default: 30000.
    pub actor_call_timeout_ms: u64,
    /// CPU-heavy skill work (`SkillContext::cpu`) running at once, over all tasks; more
    /// waits for a worker. 0: one less than the cores, at least one, so that requests
    /// and actors always keep a core. Default: 0.
    pub cpu_workers: usize,
    /// Time one run's CPU-heavy work may spend on the workers, in ms, summed over the
    /// run; past it the work stops and the task fails saying so. Default: 300000.
    pub cpu_budget_ms: u64,
    /// How long a new task's first message is remembered, in seconds: the same owner
    /// sending a message with the same `messageId` within it gets the task that message
    /// created, not a second one. 0: off. Default: 86400 (24 h).
    pub dedup_window_s: u64,
    /// Approval gates, by skill id: `"required"` (a new task waits for an approver
    /// before anything runs) or `"none"`. Default: `chaos-run = "required"`.
    pub approvals: HashMap<String, ApprovalMode>,
    /// How long a gated task waits for an approver before it is rejected, in seconds.
    /// Default: 86400 (24 h).
    pub approval_timeout_s: u64,
    /// Whether the approver must be someone other than the user who asked. Default:
    /// false.
    pub approver_must_differ: bool,
    /// How long a task that waits for a person (for input, of a resumable skill, or for
    /// an approver) keeps its actor once nothing happens to it, in ms; then it is parked:
    /// stored, with no actor, until a message, a cancel, a decision or a subscriber
    /// wakes it. 0: never parked. Default: 60000.
    pub park_after_ms: u64,
    /// With several nodes on one store: how long a node may keep a run slot the store
    /// gave it, in ms, handing it to its next runs of the skill rather than giving it
    /// back when each run ends (a run then costs the database no slot row of its
    /// own). A slot no run takes within a tenth of that goes back, and no slot of a
    /// skill is kept while another node waits for one. 0: every run gives its slot
    /// back as it ends. Default: 1000.
    pub hold_run_slots_ms: u64,
}

/// Whether a skill's new tasks wait for an approver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// They run at once.
    None,
    /// They wait for an approver.
    Required,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            default_skill: None,
            max_concurrent_runs: 64,
            skill_concurrency: HashMap::new(),
            cancel_grace_ms: 5_000,
            subscriber_buffer: 1_024,
            actor_call_timeout_ms: 30_000,
            cpu_workers: 0,
            cpu_budget_ms: 300_000,
            dedup_window_s: 86_400,
            approvals: HashMap::from([("chaos-run".to_owned(), ApprovalMode::Required)]),
            approval_timeout_s: 86_400,
            approver_must_differ: false,
            park_after_ms: 60_000,
            hold_run_slots_ms: 1_000,
        }
    }
}

impl RuntimeConfig {
    /// The concurrency limit of a skill (at least 1).
    pub fn concurrency_of(&self, skill: &str) -> usize {
        self.skill_concurrency
            .get(skill)
            .copied()
            .unwrap_or(self.max_concurrent_runs)
            .max(1)
    }

    pub(crate) fn cancel_grace(&self) -> Duration {
        Duration::from_millis(self.cancel_grace_ms)
    }

    pub(crate) fn cpu_budget(&self) -> Duration {
        Duration::from_millis(self.cpu_budget_ms)
    }

    pub(crate) fn dedup_window(&self) -> Duration {
        Duration::from_secs(self.dedup_window_s)
    }

    /// Whether new tasks of `skill` wait for an approver.
    pub fn requires_approval(&self, skill: &str) -> bool {
        self.approvals.get(skill) == Some(&ApprovalMode::Required)
    }

    pub(crate) fn approval_timeout(&self) -> Duration {
        Duration::from_secs(self.approval_timeout_s)
    }

    /// How long a task at rest keeps its actor; `None`: for ever.
    pub(crate) fn hold_run_slots(&self) -> Duration {
        Duration::from_millis(self.hold_run_slots_ms)
    }

    pub(crate) fn park_after(&self) -> Option<Duration> {
        (self.park_after_ms > 0).then(|| Duration::from_millis(self.park_after_ms))
    }

    pub(crate) fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.actor_call_timeout_ms.max(1))
    }

    /// Checks values that serde cannot; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_concurrent_runs == 0 {
            return Err("runtime.max-concurrent-runs must be at least 1".into());
        }
        if let Some((skill, _)) = self.skill_concurrency.iter().find(|(_, n)| **n == 0) {
            return Err(format!(
                "runtime.skill-concurrency.{skill} must be at least 1"
            ));
        }
        if self.cpu_budget_ms == 0 {
            return Err("runtime.cpu-budget-ms must be at least 1".into());
        }
        if self.approval_timeout_s == 0 {
            return Err("runtime.approval-timeout-s must be at least 1".into());
        }
        if self.subscriber_buffer == 0 {
            return Err("runtime.subscriber-buffer must be at least 1".into());
        }
        Ok(())
    }
}
