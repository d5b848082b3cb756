//! Scheduled runs: a due schedule submits one ordinary task owned by its creator and
//! authorised by the scopes its client holds at the firing; missed firings run once; a
//! restart (even one between a firing's submission and its record) neither loses nor
//! doubles a firing; paused schedules do not fire.

use fundi_runtime::Access;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use fundi_ops::schedules::{
    Creator, MemoryScheduleStore, NewSchedule, Schedule, ScheduleStore, Scheduler, ScopeAuthority,
    ScopesNow,
};
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    Grants, ListRequest, Runtime, RuntimeConfig, RuntimeError, RuntimeHandle, Skill, SkillCard,
    SkillContext, SkillError, SkillInput, SkillOutput, StoreError, TaskState,
};
use fundi_store_sled::SledScheduleStore;
use fundi_store_sled::testing::open_sled;
use serde_json::{Value, json};

/// A skill that needs `fundi:audit` and answers with its input.
#[derive(Clone)]
struct Audit;

#[async_trait]
impl Skill for Audit {
    fn card(&self) -> SkillCard {
        SkillCard::new("audit", "answers with its input").scope("fundi:audit")
    }

    async fn run(&self, input: SkillInput, _ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let data = input.message.data().cloned().unwrap_or(Value::Null);
        Ok(SkillOutput::text(format!("audited {data}")))
    }
}

/// Client scopes a test can change between firings.
#[derive(Default)]
struct Clients(Mutex<BTreeMap<String, Vec<&'static str>>>);

impl Clients {
    fn set(&self, client: &str, scopes: Vec<&'static str>) {
        self.0.lock().unwrap().insert(client.into(), scopes);
    }

    fn remove(&self, client: &str) {
        self.0.lock().unwrap().remove(client);
    }
}

#[async_trait]
impl ScopeAuthority for Clients {
    async fn scopes_now(&self, client: &str) -> ScopesNow {
        match self.0.lock().unwrap().get(client) {
            Some(scopes) => ScopesNow::Held(Grants::scopes(scopes.iter().copied())),
            None => ScopesNow::Gone,
        }
    }
}

fn ann() -> Creator {
    Creator {
        owner: Some("ann".into()),
        client: Some("ops".into()),
        grants: Grants::scopes(["fundi:audit"]),
    }
}

fn nightly() -> NewSchedule {
    NewSchedule {
        skill: "audit".into(),
        cron: "0 3 * * *".into(),
        time_zone: Some("Europe/Berlin".into()),
        data: Some(json!({"url": "https://staging.test/"})),
        text: None,
    }
}

async fn runtime_in_memory() -> RuntimeHandle {
    Runtime::builder().skill(Audit).start().await.unwrap()
}

fn scheduler_for(
    runtime: &RuntimeHandle,
    store: Arc<dyn ScheduleStore>,
) -> (Scheduler, Arc<Clients>) {
    let clients = Arc::new(Clients::default());
    clients.set("ops", vec!["fundi:audit"]);
    let scheduler = Scheduler::new(runtime.clone(), store, clients.clone());
    (scheduler, clients)
}

/// Ann's tasks, newest first.
async fn tasks_of_ann(runtime: &RuntimeHandle) -> Vec<fundi_runtime::Task> {
    let request = ListRequest::new(fundi_runtime::TaskOwner::user("ann")).page_size(100);
    runtime.list(request).await.unwrap().tasks
}

#[tokio::test]
async fn a_due_schedule_submits_one_task_owned_by_its_creator() {
    let runtime = runtime_in_memory().await;
    let (scheduler, _) = scheduler_for(&runtime, Arc::new(MemoryScheduleStore::new()));
    let schedule = scheduler.create(nightly(), ann()).await.unwrap();
    let due = schedule.next_fire;
    assert_eq!(schedule.zone, "Europe/Berlin");
    assert!(due > Utc::now());

    let early = scheduler
        .fire_due(due - Duration::seconds(1))
        .await
        .unwrap();
    assert!(early.is_empty(), "nothing is due before its time");
    let firings = scheduler.fire_due(due).await.unwrap();
    assert_eq!(firings.len(), 1);
    let task_id = firings[0].task_id.clone().expect("a task");
    assert_eq!(firings[0].due, due);

    let done = wait_for_state(&runtime, &task_id, TaskState::Completed).await;
    assert_eq!(
        status_text(&done),
        r#"audited {"url":"https://staging.test/"}"#
    );
    let first = &done.history[0];
    assert_eq!(
        first.metadata.as_ref().unwrap()["schedule"]["id"],
        json!(schedule.id)
    );
    assert!(
        runtime
            .get(&task_id, None, Access::Owner("bob"))
            .await
            .is_err(),
        "the task is ann's, invisible to others"
    );
    runtime
        .get(&task_id, None, Access::Owner("ann"))
        .await
        .unwrap();

    assert!(
        scheduler.fire_due(due).await.unwrap().is_empty(),
        "once per time"
    );
    let after = scheduler.get(&schedule.id).await.unwrap();
    assert_eq!(after.fired, 1);
    assert_eq!(after.skipped, 0);
    assert_eq!(
        after.next_fire,
        due + Duration::days(1),
        "the next night, 03:00 Berlin"
    );
    assert_eq!(after.last.unwrap().task_id, Some(task_id));
    assert_eq!(tasks_of_ann(&runtime).await.len(), 1);
}

#[tokio::test]
async fn firings_missed_while_down_run_once_and_the_rest_are_counted() {
    let runtime = runtime_in_memory().await;
    let (scheduler, _) = scheduler_for(&runtime, Arc::new(MemoryScheduleStore::new()));
    let mut hourly = nightly();
    hourly.cron = "0 * * * *".into();
    let schedule = scheduler.create(hourly, ann()).await.unwrap();
    let now = schedule.next_fire + Duration::minutes(5 * 60 + 30);

    let firings = scheduler.fire_due(now).await.unwrap();
    assert_eq!(firings.len(), 1, "one firing for the whole gap");
    assert_eq!(firings[0].due, schedule.next_fire, "the first missed time");
    let after = scheduler.get(&schedule.id).await.unwrap();
    assert_eq!(after.skipped, 5, "the five other missed hours are counted");
    assert_eq!(after.next_fire, schedule.next_fire + Duration::hours(6));
    assert_eq!(tasks_of_ann(&runtime).await.len(), 1);
}

#[tokio::test]
async fn the_scopes_at_the_firing_decide_and_a_refused_firing_is_recorded() {
    let runtime = runtime_in_memory().await;
    let (scheduler, clients) = scheduler_for(&runtime, Arc::new(MemoryScheduleStore::new()));
    let mut minutely = nightly();
    minutely.cron = "* * * * *".into();
    let schedule = scheduler.create(minutely, ann()).await.unwrap();
    let mut due = schedule.next_fire;

    clients.set("ops", vec!["fundi:other"]);
    let refused = scheduler.fire_due(due).await.unwrap();
    assert_eq!(refused[0].task_id, None);
    let error = refused[0].error.clone().unwrap();
    assert!(error.contains("fundi:audit"), "names the scope: {error}");

    due += Duration::minutes(1);
    clients.remove("ops");
    let gone = scheduler.fire_due(due).await.unwrap();
    let error = gone[0].error.clone().unwrap();
    assert!(
        error.contains("\"ops\"") && error.contains("no longer exists"),
        "{error}"
    );

    due += Duration::minutes(1);
    clients.set("ops", vec!["fundi:admin"]);
    let fired = scheduler.fire_due(due).await.unwrap();
    assert!(fired[0].task_id.is_some(), "admin holds every skill");
    let after = scheduler.get(&schedule.id).await.unwrap();
    assert_eq!(after.fired, 1, "only the firing that made a task counts");
    assert_eq!(tasks_of_ann(&runtime).await.len(), 1);
}

#[tokio::test]
async fn a_paused_schedule_does_not_fire_and_resumes_from_now() {
    let runtime = runtime_in_memory().await;
    let (scheduler, _) = scheduler_for(&runtime, Arc::new(MemoryScheduleStore::new()));
    let mut minutely = nightly();
    minutely.cron = "* * * * *".into();
    let schedule = scheduler.create(minutely, ann()).await.unwrap();
    let paused = scheduler.set_paused(&schedule.id, true).await.unwrap();
    assert!(paused.paused);
    let later = schedule.next_fire + Duration::hours(1);
    assert!(scheduler.fire_due(later).await.unwrap().is_empty());

    let resumed = scheduler.set_paused(&schedule.id, false).await.unwrap();
    assert!(!resumed.paused);
    assert!(
        resumed.next_fire > Utc::now(),
        "what fell due while paused is not made up"
    );
    assert!(resumed.next_fire <= Utc::now() + Duration::minutes(1));

    scheduler.delete(&schedule.id).await.unwrap();
    assert!(scheduler.fire_due(later).await.unwrap().is_empty());
    assert!(matches!(
        scheduler.get(&schedule.id).await,
        Err(RuntimeError::ScheduleNotFound(_))
    ));
    assert!(matches!(
        scheduler.delete(&schedule.id).await,
        Err(RuntimeError::ScheduleNotFound(_))
    ));
    assert!(tasks_of_ann(&runtime).await.is_empty());
}

#[tokio::test]
async fn a_schedule_that_could_never_fire_well_is_refused_at_creation() {
    let runtime = runtime_in_memory().await;
    let (scheduler, _) = scheduler_for(&runtime, Arc::new(MemoryScheduleStore::new()));
    let refused = |new: NewSchedule, creator: Creator| {
        let scheduler = scheduler.clone();
        async move {
            scheduler
                .create(new, creator)
                .await
                .unwrap_err()
                .to_string()
        }
    };
    let mut unknown = nightly();
    unknown.skill = "nope".into();
    let error = refused(unknown, ann()).await;
    assert!(
        error.contains("\"nope\"") && error.contains("audit"),
        "{error}"
    );

    let mut bad_cron = nightly();
    bad_cron.cron = "0 3 * *".into();
    assert!(refused(bad_cron, ann()).await.contains("5 fields"));

    let mut bad_zone = nightly();
    bad_zone.time_zone = Some("Berlin".into());
    assert!(refused(bad_zone, ann()).await.contains("IANA"));

    let mut empty = nightly();
    empty.data = None;
    assert!(refused(empty, ann()).await.contains("needs data"));

    let mut outsider = ann();
    outsider.grants = Grants::scopes(["fundi:other"]);
    assert!(refused(nightly(), outsider).await.contains("fundi:audit"));
    assert!(
        scheduler.list().await.unwrap().is_empty(),
        "nothing was stored"
    );
}

/// A schedule store whose writes fail while `failing` is set: a crash between a
/// firing's submission and its record, as the scheduler sees it.
struct FailingWrites {
    inner: SledScheduleStore,
    failing: Mutex<bool>,
}

#[async_trait]
impl ScheduleStore for FailingWrites {
    async fn put(&self, schedule: &Schedule) -> Result<(), StoreError> {
        if *self.failing.lock().unwrap() {
            return Err(StoreError::io(
                "writing a schedule",
                std::io::Error::other("writes fail in this test"),
            ));
        }
        self.inner.put(schedule).await
    }

    async fn get(&self, id: &str) -> Result<Option<Schedule>, StoreError> {
        self.inner.get(id).await
    }

    async fn list(&self) -> Result<Vec<Schedule>, StoreError> {
        self.inner.list().await
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        self.inner.delete(id).await
    }
}

/// A runtime on the sled store in `dir`, with deduplication of first messages off: a
/// firing is not doubled whatever `runtime.dedup-window-s` says.
async fn start_on(dir: &std::path::Path) -> (RuntimeHandle, Arc<fundi_store_sled::SledStore>) {
    let sled = Arc::new(open_sled(dir).await);
    let mut config = RuntimeConfig::default();
    config.dedup_window_s = 0;
    let runtime = Runtime::builder()
        .skill(Audit)
        .config(config)
        .shared_store(sled.clone())
        .start()
        .await
        .unwrap();
    (runtime, sled)
}

async fn stop(runtime: RuntimeHandle, sled: Arc<fundi_store_sled::SledStore>) {
    runtime.shutdown(std::time::Duration::from_secs(5)).await;
    drop(runtime);
    drop(sled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_neither_loses_nor_doubles_a_firing() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, sled) = start_on(dir.path()).await;
    let store = Arc::new(FailingWrites {
        inner: SledScheduleStore::new(sled.clone()),
        failing: Mutex::new(false),
    });
    let (scheduler, _) = scheduler_for(&runtime, store.clone());
    let schedule = scheduler.create(nightly(), ann()).await.unwrap();
    let due: DateTime<Utc> = schedule.next_fire;

    // The firing's task is submitted, but its record is not written.
    *store.failing.lock().unwrap() = true;
    assert!(scheduler.fire_due(due).await.is_err());
    let submitted = tasks_of_ann(&runtime).await;
    assert_eq!(submitted.len(), 1);
    wait_for_state(&runtime, &submitted[0].id, TaskState::Completed).await;
    drop(scheduler);
    drop(store);
    stop(runtime, sled).await;

    // After the restart, the schedule is still due at that time, and firing it finds
    // the task it made instead of making another, even a day later.
    let (runtime, sled) = start_on(dir.path()).await;
    let store = Arc::new(SledScheduleStore::new(sled.clone()));
    let (scheduler, _) = scheduler_for(&runtime, store);
    let kept = scheduler.get(&schedule.id).await.unwrap();
    assert_eq!(kept.next_fire, due, "the firing is not lost");
    let firings = scheduler.fire_due(due + Duration::hours(25)).await.unwrap();
    assert_eq!(firings.len(), 1);
    assert_eq!(
        firings[0].task_id,
        Some(submitted[0].id.clone()),
        "not doubled"
    );
    assert_eq!(tasks_of_ann(&runtime).await.len(), 1);
    let after = scheduler.get(&schedule.id).await.unwrap();
    assert_eq!(after.skipped, 1, "the night missed while down is counted");
    assert_eq!(after.next_fire, due + Duration::days(2));
    drop(scheduler);
    stop(runtime, sled).await;

    // And what was recorded survives a restart too.
    let (runtime, sled) = start_on(dir.path()).await;
    let store = Arc::new(SledScheduleStore::new(sled.clone()));
    let (scheduler, _) = scheduler_for(&runtime, store);
    assert_eq!(scheduler.get(&schedule.id).await.unwrap(), after);
    drop(scheduler);
    stop(runtime, sled).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_firing_loop_fires_each_time_as_it_comes() {
    let runtime = runtime_in_memory().await;
    let (scheduler, _) = scheduler_for(&runtime, Arc::new(MemoryScheduleStore::new()));
    let mut every_second = nightly();
    every_second.cron = "* * * * * *".into();
    let stop = tokio_util::sync::CancellationToken::new();
    let looping = scheduler.start(stop.clone());
    let schedule = scheduler.create(every_second, ann()).await.unwrap();

    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while scheduler.get(&schedule.id).await.unwrap().fired < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the schedule did not fire twice"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    stop.cancel();
    looping.await.unwrap();
    let fired = scheduler.get(&schedule.id).await.unwrap().fired as usize;
    let tasks = tasks_of_ann(&runtime).await;
    assert_eq!(tasks.len(), fired, "one task per firing");
    let mut ids: Vec<_> = tasks
        .iter()
        .map(|t| t.history[0].message_id.clone())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), fired, "each firing is its own time");
}
