//! `Runtime::builder()`: the store, skills and settings, checked, and the runtime
//! started on them (its supervisor, then recovery of what a previous run left).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use ractor::Actor;
use tokio::sync::watch;

use super::intake::Intake;
use super::tasks::Tasks;
use super::{Inner, RuntimeHandle};
use crate::actors::{CardTerms, LiveCount, Slots, Supervisor, SupervisorArgs};
use crate::config::RuntimeConfig;
use crate::cpu::CpuPool;
use crate::error::RuntimeError;
use crate::recovery::Resumer;
use crate::recovery_plan::RecoveryReport;
use crate::skill::Skill;
use crate::store::{MemoryStore, TaskStore};
use crate::telemetry;
use crate::wakes::Wakes;

/// Entry point: `Runtime::builder()`.
#[derive(Debug)]
pub struct Runtime;

impl Runtime {
    /// A builder with no skills, an in-memory store and default settings.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            store: None,
            skills: Vec::new(),
            config: RuntimeConfig::default(),
        }
    }
}

/// Collects the store, skills and settings, then starts the runtime.
pub struct RuntimeBuilder {
    store: Option<Arc<dyn TaskStore>>,
    skills: Vec<Arc<dyn Skill>>,
    config: RuntimeConfig,
}

impl RuntimeBuilder {
    /// Where tasks are kept (default: a [`MemoryStore`]).
    pub fn store(mut self, store: impl TaskStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// Like [`RuntimeBuilder::store`], for a store that is already shared.
    pub fn shared_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Registers a skill (ids must be unique).
    pub fn skill(mut self, skill: impl Skill) -> Self {
        self.skills.push(Arc::new(skill));
        self
    }

    /// Like [`RuntimeBuilder::skill`], for a skill that is already shared.
    pub fn shared_skill(mut self, skill: Arc<dyn Skill>) -> Self {
        self.skills.push(skill);
        self
    }

    /// Settings (default: [`RuntimeConfig::default`]).
    pub fn config(mut self, config: RuntimeConfig) -> Self {
        self.config = config;
        self
    }

    /// Starts the supervisor, recovers the tasks a previous run left unfinished, and
    /// returns the handle. New submissions are accepted once recovery has decided every
    /// stored non-terminal task (resumed runs go on in the background).
    pub async fn start(self) -> Result<RuntimeHandle, RuntimeError> {
        self.config.validate().map_err(RuntimeError::InvalidInput)?;
        let mut skills = HashMap::new();
        let mut cards = Vec::new();
        let mut terms = HashMap::new();
        for skill in self.skills {
            let card = skill.card();
            let term = CardTerms {
                while_working: card.while_working,
                resumable: card.resumable,
            };
            terms.insert(card.id.clone(), term);
            if skills.insert(card.id.clone(), skill).is_some() {
                return Err(RuntimeError::InvalidInput(format!(
                    "two skills have the id {:?}",
                    card.id
                )));
            }
            cards.push(card);
        }
        if let Some(default) = &self.config.default_skill
            && !skills.contains_key(default)
        {
            return Err(RuntimeError::InvalidInput(format!(
                "runtime.default-skill {default:?} is not a registered skill"
            )));
        }
        let store = self
            .store
            .unwrap_or_else(|| Arc::new(MemoryStore::new()) as Arc<dyn TaskStore>);
        // Timed once here, not in each writer (see `telemetry::TimedStore`).
        let store = telemetry::TimedStore::wrap(store);
        let config = Arc::new(self.config);
        let skills = Arc::new(skills);
        let (live_count, live_watch) = watch::channel(LiveCount::default());
        let slots = Arc::new(Slots::new(&config, skills.keys(), store.cluster()));
        let cpu = Arc::new(CpuPool::new(config.cpu_workers));
        let wakes = Arc::new(Wakes::default());
        let args = SupervisorArgs {
            store: store.clone(),
            skills: skills.clone(),
            terms: Arc::new(terms),
            config: config.clone(),
            live_count,
            slots: slots.clone(),
            cpu: cpu.clone(),
            wakes: wakes.clone(),
        };
        let (supervisor, _) = Actor::spawn(None, Supervisor, args)
            .await
            .map_err(|e| RuntimeError::Unavailable(format!("supervisor did not start: {e}")))?;
        telemetry::metrics().announce();
        let gauges = {
            let (live, slots, cpu) = (live_watch.clone(), slots.clone(), cpu.clone());
            telemetry::live_gauges(
                move || live.borrow().live,
                move || slots.waiting(),
                move || cpu.busy(),
            )
        };
        let resumer = Resumer::new(
            store.clone(),
            supervisor.clone(),
            slots.clone(),
            config.clone(),
            &cards,
        );
        let inner = Inner {
            tasks: Tasks::new(store, supervisor, config.clone()),
            intake: Intake::new(skills, cards, config.clone()),
            claims: Arc::default(),
            resumer,
            config,
            accepting: AtomicBool::new(true),
            slots,
            cpu,
            live: live_watch,
            recovery: std::sync::OnceLock::new(),
            wakes,
            _gauges: gauges,
        };
        let handle = RuntimeHandle {
            inner: Arc::new(inner),
        };
        let report = handle.inner.resumer.recover().await?;
        tracing::info!(
            resumed = report.resumed,
            failed = report.failed,
            waiting = report.waiting_for_input,
            idle = report.idle,
            "recovery finished"
        );
        let _ = handle.inner.recovery.set(report);
        if let Some(incoming) = handle.store().cluster().and_then(|c| c.incoming()) {
            super::tasks::serve_incoming(handle.downgrade(), incoming);
        }
        if let Some(every) = handle.store().takeover_interval() {
            take_over_every(&handle, every);
        }
        if let Some(cluster) = handle.store().cluster() {
            super::standing::follow_standing(handle.downgrade(), cluster.standing());
        }
        Ok(handle)
    }
}

/// Asks the store for tasks to take over every `every`, until shutdown.
fn take_over_every(handle: &RuntimeHandle, every: std::time::Duration) {
    let inner = std::sync::Arc::downgrade(&handle.inner);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(inner) = inner.upgrade() else {
                return;
            };
            let handle = RuntimeHandle { inner };
            if !handle.is_accepting() {
                return;
            }
            if handle.is_cut_off() {
                continue;
            }
            match handle.inner.resumer.take_over().await {
                Ok(report) if report != RecoveryReport::default() => tracing::info!(
                    resumed = report.resumed,
                    failed = report.failed,
                    waiting = report.waiting_for_input,
                    idle = report.idle,
                    "took over tasks of a node that stopped renewing their leases"
                ),
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "could not take over tasks; trying again")
                }
            }
        }
    });
}
