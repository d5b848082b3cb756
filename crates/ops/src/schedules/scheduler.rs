//! The scheduler: keeps the schedules, and fires what is due.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{Mutex, Notify};
use tokio_util::sync::CancellationToken;

use super::{Creator, CronSpec, Firing, NewSchedule, Schedule, ScheduleStore, ScopeAuthority};
use fundi_runtime::RuntimeError;
use fundi_runtime::RuntimeHandle;

/// The longest the firing loop sleeps without looking again (so that a changed clock
/// is noticed).
const LONGEST_NAP: Duration = Duration::from_secs(60);

/// How long the firing loop waits after a failure of the store or the runtime.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// Schedules, their store, and the runtime their firings are submitted to. Cheap to
/// clone.
#[derive(Clone)]
pub struct Scheduler {
    inner: Arc<Inner>,
}

struct Inner {
    runtime: RuntimeHandle,
    store: Arc<dyn ScheduleStore>,
    authority: Arc<dyn ScopeAuthority>,
    /// Wakes the firing loop when a schedule is created or resumed.
    changed: Notify,
    /// One change of the schedules at a time: a pause or a delete never crosses a
    /// firing of the same schedule.
    writing: Mutex<()>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler").finish_non_exhaustive()
    }
}

impl Scheduler {
    /// Schedules kept in `store`, fired into `runtime`; `authority` says what a
    /// schedule's client holds at each firing.
    pub fn new(
        runtime: RuntimeHandle,
        store: Arc<dyn ScheduleStore>,
        authority: Arc<dyn ScopeAuthority>,
    ) -> Scheduler {
        Scheduler {
            inner: Arc::new(Inner {
                runtime,
                store,
                authority,
                changed: Notify::new(),
                writing: Mutex::new(()),
            }),
        }
    }

    /// Creates a schedule for `creator`, after checking that the expression parses,
    /// the skill exists, the creator may run it, and the message it will send is
    /// acceptable.
    pub async fn create(
        &self,
        new: NewSchedule,
        creator: Creator,
    ) -> Result<Schedule, RuntimeError> {
        let spec = CronSpec::parse(&new.cron, new.time_zone.as_deref())
            .map_err(RuntimeError::InvalidInput)?;
        self.inner
            .runtime
            .check_skill(&new.skill, &creator.grants)?;
        if new.data.is_none() && new.text.as_deref().is_none_or(str::is_empty) {
            return Err(RuntimeError::InvalidInput(
                "a schedule needs data (the skill's input) or text to send".into(),
            ));
        }
        let id = format!("sch-{}", uuid::Uuid::now_v7());
        let now = Utc::now();
        super::firing::message(&id, &new, now).validate()?;
        let next_fire = spec.next_after(now).ok_or_else(|| {
            RuntimeError::InvalidInput(format!("cron {:?} never fires", new.cron))
        })?;
        let schedule = Schedule {
            id,
            zone: spec.zone().to_owned(),
            spec: new,
            owner: creator.owner,
            client: creator.client,
            scopes: creator
                .grants
                .list()
                .map(|held| held.into_iter().map(str::to_owned).collect()),
            paused: false,
            created_at: now,
            next_fire,
            fired: 0,
            skipped: 0,
            last: None,
        };
        let _writing = self.inner.writing.lock().await;
        self.inner.store.put(&schedule).await?;
        self.inner.changed.notify_one();
        tracing::info!(schedule = %schedule.id, skill = %schedule.spec.skill, next = %next_fire, "schedule created");
        Ok(schedule)
    }

    /// Every schedule, by id.
    pub async fn list(&self) -> Result<Vec<Schedule>, RuntimeError> {
        Ok(self.inner.store.list().await?)
    }

    /// One schedule.
    pub async fn get(&self, id: &str) -> Result<Schedule, RuntimeError> {
        self.inner
            .store
            .get(id)
            .await?
            .ok_or_else(|| RuntimeError::ScheduleNotFound(id.to_owned()))
    }

    /// Pauses a schedule (`true`: it fires no more) or resumes it (`false`: it fires
    /// next at its first time after now; what fell due while paused is not made up).
    pub async fn set_paused(&self, id: &str, paused: bool) -> Result<Schedule, RuntimeError> {
        let _writing = self.inner.writing.lock().await;
        let mut schedule = self.get(id).await?;
        if schedule.paused == paused {
            return Ok(schedule);
        }
        schedule.paused = paused;
        if !paused {
            let spec = CronSpec::parse(&schedule.spec.cron, Some(&schedule.zone))
                .map_err(RuntimeError::InvalidInput)?;
            schedule.next_fire = spec.next_after(Utc::now()).ok_or_else(|| {
                RuntimeError::InvalidInput(format!("cron {:?} never fires", schedule.spec.cron))
            })?;
        }
        self.inner.store.put(&schedule).await?;
        self.inner.changed.notify_one();
        tracing::info!(schedule = %id, paused, "schedule paused or resumed");
        Ok(schedule)
    }

    /// Deletes a schedule; the tasks it submitted stay.
    pub async fn delete(&self, id: &str) -> Result<(), RuntimeError> {
        let _writing = self.inner.writing.lock().await;
        match self.inner.store.delete(id).await? {
            true => {
                tracing::info!(schedule = %id, "schedule deleted");
                Ok(())
            }
            false => Err(RuntimeError::ScheduleNotFound(id.to_owned())),
        }
    }

    /// Fires every schedule due at `now` (each once, however many of its times have
    /// passed), and returns the firings. The firing loop calls it with the clock's time;
    /// tests call it with theirs.
    pub async fn fire_due(&self, now: DateTime<Utc>) -> Result<Vec<Firing>, RuntimeError> {
        let mut firings = Vec::new();
        for listed in self.inner.store.list().await? {
            if listed.paused || listed.next_fire > now {
                continue;
            }
            let _writing = self.inner.writing.lock().await;
            // Read again under the lock: it may have been paused or deleted meanwhile.
            let schedule = match self.inner.store.get(&listed.id).await? {
                Some(schedule) if !schedule.paused && schedule.next_fire <= now => schedule,
                _ => continue,
            };
            // Another node sharing the store may be firing it.
            if self.inner.store.claim_firing(&schedule).await? {
                firings.push(self.fire(schedule, now).await?);
            }
        }
        Ok(firings)
    }

    async fn fire(
        &self,
        mut schedule: Schedule,
        now: DateTime<Utc>,
    ) -> Result<Firing, RuntimeError> {
        let inner = &self.inner;
        let firing = super::firing::fire(&inner.runtime, &*inner.authority, &schedule, now).await?;
        let outcome = match (&firing.task_id, &firing.error) {
            (Some(task), _) => {
                schedule.fired += 1;
                tracing::info!(schedule = %schedule.id, task = %task, due = %firing.due, "schedule fired");
                "submitted"
            }
            (None, error) => {
                tracing::warn!(schedule = %schedule.id, due = %firing.due, error = error.as_deref().unwrap_or(""), "schedule fired no task");
                "refused"
            }
        };
        count_firing(outcome);
        let next = CronSpec::parse(&schedule.spec.cron, Some(&schedule.zone));
        match next
            .as_ref()
            .ok()
            .and_then(|spec| spec.next_after(now).map(|at| (spec, at)))
        {
            Some((spec, next_fire)) => {
                let skipped = spec.count_between(firing.due, now);
                if skipped > 0 {
                    tracing::warn!(schedule = %schedule.id, skipped, "firings missed while fundi was down ran once");
                }
                schedule.skipped += skipped;
                schedule.next_fire = next_fire;
            }
            None => {
                // Kept, paused, with the reason, rather than firing in a loop or vanishing.
                tracing::warn!(schedule = %schedule.id, "schedule has no next firing; paused");
                schedule.paused = true;
            }
        }
        schedule.last = Some(firing.clone());
        inner.store.put(&schedule).await?;
        Ok(firing)
    }

    /// How long until the next active schedule is due (at most `LONGEST_NAP`).
    async fn until_next(&self) -> Result<Duration, RuntimeError> {
        let now = Utc::now();
        let next = self
            .inner
            .store
            .list()
            .await?
            .iter()
            .filter(|s| !s.paused)
            .map(|s| s.next_fire)
            .min();
        Ok(match next {
            None => LONGEST_NAP,
            Some(at) => (at - now).to_std().unwrap_or_default().min(LONGEST_NAP),
        })
    }

    /// Starts the firing loop: what is due now (firings missed while fundi was down
    /// included, once each) fires at once, then each schedule at its time, until `stop`.
    pub fn start(&self, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        let scheduler = self.clone();
        tokio::spawn(async move {
            loop {
                let fired = scheduler.fire_due(Utc::now()).await;
                let wait = match fired {
                    Ok(_) => scheduler.until_next().await,
                    Err(error) => Err(error),
                };
                let wait = wait.unwrap_or_else(|error| {
                    tracing::warn!(%error, "firing schedules; trying again shortly");
                    RETRY_AFTER
                });
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = scheduler.inner.changed.notified() => {}
                    () = tokio::time::sleep(wait) => {}
                }
            }
        })
    }
}

/// Counts a firing in `fundi.schedules.firings` by `outcome` (docs/observability.md); the
/// counter is made on first use from the global meter provider.
fn count_firing(outcome: &'static str) {
    static FIRINGS: std::sync::OnceLock<opentelemetry::metrics::Counter<u64>> =
        std::sync::OnceLock::new();
    FIRINGS
        .get_or_init(|| {
            opentelemetry::global::meter(fundi_runtime::telemetry::METER_NAME)
                .u64_counter("fundi.schedules.firings")
                .with_description("Firings of scheduled runs, by outcome (submitted, refused)")
                .with_unit("{firing}")
                .build()
        })
        .add(1, &[opentelemetry::KeyValue::new("outcome", outcome)]);
}
