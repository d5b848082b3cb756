//! Push notifications: the config methods, durable per-config delivery workers, dead
//! letters and their replay. Configs and cursors live in the runtime's store
//! ([`PushStore`]); the workers follow each task's event log.

mod adopt;
mod cursor;
mod deliver;
mod resting;
mod settings;
mod ssrf;
mod wire;
mod workers;

use fundi_runtime::Access;
use std::sync::Arc;

use fundi_runtime::store::{PushConfig, PushEntry, PushStore, Standing};
use fundi_runtime::{StoreError, TaskId, TaskService};

use crate::setup::SetupError;
use adopt::{adopt_every, restart_unfinished};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use workers::Workers;

use crate::auth::Caller;
use crate::dialect::{Dialect, Method};
use crate::error::ApiError;
use crate::params::decode;

pub use settings::PushSettings;

/// The wait before the deliveries to resume are read again after a failed read.
const RESUME_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// What the workers share.
pub(crate) struct Shared {
    runtime: Arc<dyn TaskService>,
    store: Arc<dyn PushStore>,
    settings: PushSettings,
    policy: Arc<ssrf::Policy>,
    client: reqwest::Client,
}

/// Push notifications for one runtime: config methods and delivery.
pub struct PushService {
    shared: Arc<Shared>,
    workers: Workers,
}

impl std::fmt::Debug for PushService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushService")
            .field("settings", &self.shared.settings)
            .finish_non_exhaustive()
    }
}

/// A config checked for shape and address, not yet attached to its task.
pub(crate) struct Prepared(PushConfig);

impl PushService {
    /// A service delivering the events of `runtime`'s tasks, with configs kept in
    /// `store` (the same store as the tasks). Workers stop when `shutdown` is cancelled.
    /// Call [`PushService::resume`] once to pick up deliveries a previous run left.
    pub fn new(
        runtime: impl TaskService,
        store: Arc<dyn PushStore>,
        settings: PushSettings,
        shutdown: CancellationToken,
    ) -> Result<PushService, SetupError> {
        settings.validate()?;
        let policy = Arc::new(ssrf::Policy::new(&settings));
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(ssrf::GuardedResolver {
                policy: policy.clone(),
            }))
            .no_proxy()
            .connect_timeout(std::time::Duration::from_millis(settings.timeout_ms))
            .user_agent(concat!("fundi/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|source| SetupError::HttpClient {
                what: "push",
                source,
            })?;
        let shared = Arc::new(Shared {
            runtime: Arc::new(runtime),
            store,
            settings,
            policy,
            client,
        });
        let workers = Workers::new(shutdown);
        // A task whose delivery rests gets an actor again: its workers start. Weak: the
        // runtime keeps its hooks, and the service keeps the runtime.
        let (weak, woken) = (Arc::downgrade(&shared), workers.clone());
        shared.runtime.on_wake(Arc::new(move |task_id| {
            if let Some(shared) = weak.upgrade() {
                woken.wake(&shared, task_id);
            }
        }));
        Ok(PushService { shared, workers })
    }

    /// Resumes every delivery a previous run left unfinished (dead letters stay parked),
    /// in the background: they are read, then looked at a few at a time (see
    /// `Workers::resume`), so that a server with many waiting tasks' deliveries serves
    /// while it reads them. With several nodes on the store, looks now and then for
    /// deliveries a dead node left too.
    pub fn resume(&self) {
        let (shared, workers) = (self.shared.clone(), self.workers.clone());
        tokio::spawn(async move {
            let entries = loop {
                match unfinished(&shared, false).await {
                    Ok(entries) => break entries,
                    Err(error) => {
                        tracing::error!(%error, "could not read the push deliveries to resume; trying again");
                        tokio::select! {
                            () = workers.shutdown.cancelled() => return,
                            () = tokio::time::sleep(RESUME_RETRY) => {}
                        }
                    }
                }
            };
            tracing::info!(deliveries = entries.len(), "resuming push deliveries");
            workers.resume(&shared, entries);
        });
        if let Some(every) = self.shared.store.orphan_interval() {
            adopt_every(self.shared.clone(), self.workers.clone(), every);
        }
    }

    /// Follows this node's standing (a store several nodes share): cut off from the
    /// database, every delivery stops here (another node takes it over once its lease
    /// runs out, from the cursor stored); holding it again, a worker starts for every
    /// unfinished delivery, and takes it only if it is still this node's.
    pub fn follow_standing(&self, mut standing: tokio::sync::watch::Receiver<Standing>) {
        let (shared, workers) = (self.shared.clone(), self.workers.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = workers.shutdown.cancelled() => return,
                    changed = standing.changed() => if changed.is_err() { return },
                }
                let now = *standing.borrow_and_update();
                workers.stop_all();
                if now == Standing::Holding {
                    restart_unfinished(&shared, &workers).await;
                }
            }
        });
    }

    /// How many deliveries rest until their task wakes: the task parked (it has no
    /// actor), so no worker follows it, and the runtime's wake hook starts one again.
    pub fn resting_deliveries(&self) -> usize {
        self.workers.resting()
    }

    /// Configs whose delivery was given up, with why.
    pub async fn dead_letters(&self) -> Result<Vec<PushEntry>, StoreError> {
        unfinished(&self.shared, true).await
    }

    /// Delivers a dead-lettered config again from its first undelivered event. False if
    /// there is no such dead letter.
    pub async fn replay(&self, task_id: &TaskId, id: &str) -> Result<bool, StoreError> {
        let store = &self.shared.store;
        let (Some(config), Some(mut cursor)) = (
            store.config(task_id, id).await?,
            store.cursor(task_id, id).await?,
        ) else {
            return Ok(false);
        };
        if cursor.dead.take().is_none() {
            return Ok(false);
        }
        // Taken first: with several nodes, only the delivering node moves the cursor.
        if !store.claim_delivery(task_id, id).await? {
            return Ok(false);
        }
        store.set_cursor(task_id, id, &cursor).await?;
        self.start(config);
        Ok(true)
    }

    fn start(&self, config: PushConfig) {
        self.workers.start(&self.shared, config);
    }

    fn stop(&self, task_id: &TaskId, id: &str) {
        self.workers.stop(task_id, id);
    }

    /// Checks a config given with a message (`configuration.taskPushNotificationConfig`)
    /// before the message is submitted. `existing` is the task the message continues.
    pub(crate) async fn prepare(
        &self,
        fields: Value,
        dialect: Dialect,
        existing: Option<&TaskId>,
    ) -> Result<Prepared, ApiError> {
        const PREFIX: &str = "configuration.taskPushNotificationConfig.";
        let fields: wire::ConfigFields = decode(fields).map_err(|e| e.prefixed(PREFIX))?;
        let named = fields.id.as_deref().is_some_and(|id| !id.is_empty());
        // The task id (and a default config id) are filled in once the task exists.
        let placeholder = existing.cloned().unwrap_or_else(|| TaskId::from("pending"));
        let mut config = wire::build(&placeholder, fields, dialect, PREFIX)?;
        if existing.is_none() && !named {
            config.id = String::new();
        }
        self.check_address(&config, PREFIX).await?;
        if let Some(task_id) = existing {
            self.check_room(task_id, &config.id).await?;
        }
        Ok(Prepared(config))
    }

    /// Attaches a prepared config to the task its message created or continued; delivery
    /// starts after event `start_after`.
    pub(crate) async fn attach_prepared(
        &self,
        prepared: Prepared,
        task_id: &TaskId,
        start_after: u64,
    ) -> Result<(), ApiError> {
        let mut config = prepared.0;
        if config.id.is_empty() {
            config.id = task_id.to_string();
        }
        config.task_id = task_id.clone();
        self.attach(config, start_after).await.map(drop)
    }

    async fn check_address(&self, config: &PushConfig, prefix: &str) -> Result<(), ApiError> {
        self.shared
            .policy
            .check_url(&config.url)
            .await
            .map(drop)
            .map_err(|why| ApiError::invalid_params(format!("{prefix}url"), why))
    }

    async fn check_room(&self, task_id: &TaskId, id: &str) -> Result<(), ApiError> {
        let existing = self
            .shared
            .store
            .configs(task_id)
            .await
            .map_err(ApiError::internal)?;
        let limit = self.shared.settings.max_configs_per_task;
        if existing.len() >= limit && !existing.iter().any(|c| c.id == id) {
            return Err(ApiError::invalid_params(
                "id",
                format!(
                    "task {task_id} already has {limit} push notification configs (push.max-configs-per-task)"
                ),
            ));
        }
        Ok(())
    }

    async fn attach(&self, config: PushConfig, start_after: u64) -> Result<PushConfig, ApiError> {
        self.check_room(&config.task_id, &config.id).await?;
        self.shared
            .store
            .put_config(&config, start_after)
            .await
            .map_err(ApiError::internal)?;
        self.start(config.clone());
        Ok(config)
    }

    /// The four config methods, for the task's owner only.
    pub(crate) async fn call(
        &self,
        caller: &Caller,
        method: Method,
        params: Value,
        dialect: Dialect,
    ) -> Result<Value, ApiError> {
        let runtime = &self.shared.runtime;
        let access = Access::Owner(caller.user.as_str());
        let store = &self.shared.store;
        match method {
            Method::CreatePushConfig => {
                let (task_id, fields) = wire::create_params(params, dialect)?;
                let prefix = match dialect {
                    Dialect::V1 => "",
                    Dialect::V03 => "pushNotificationConfig.",
                };
                let config = wire::build(&task_id, fields, dialect, prefix)?;
                self.check_address(&config, prefix).await?;
                // Ownership first: another user's task is "not found".
                let snapshot = runtime.snapshot(&task_id, Some(0), access).await?;
                let config = self.attach(config, snapshot.seq).await?;
                Ok(wire::encode(&config, dialect))
            }
            Method::GetPushConfig => {
                let at = wire::ref_params(params, dialect)?;
                runtime.snapshot(&at.task_id, Some(0), access).await?;
                let id = at.id.unwrap_or_else(|| at.task_id.to_string());
                match store
                    .config(&at.task_id, &id)
                    .await
                    .map_err(ApiError::internal)?
                {
                    Some(config) => Ok(wire::encode(&config, dialect)),
                    None => Err(ApiError::push_config_not_found(at.task_id.as_str(), &id)),
                }
            }
            Method::ListPushConfigs => {
                let task_id = wire::list_params(params, dialect)?;
                runtime.snapshot(&task_id, Some(0), access).await?;
                let configs: Vec<Value> = store
                    .configs(&task_id)
                    .await
                    .map_err(ApiError::internal)?
                    .iter()
                    .map(|c| wire::encode(c, dialect))
                    .collect();
                Ok(match dialect {
                    Dialect::V1 => json!({"configs": configs, "nextPageToken": ""}),
                    Dialect::V03 => Value::Array(configs),
                })
            }
            Method::DeletePushConfig => {
                let at = wire::ref_params(params, dialect)?;
                runtime.snapshot(&at.task_id, Some(0), access).await?;
                let id = at.id.ok_or_else(|| {
                    ApiError::invalid_params(
                        match dialect {
                            Dialect::V1 => "id",
                            Dialect::V03 => "pushNotificationConfigId",
                        },
                        "is required",
                    )
                })?;
                // Stop first, so that no delivery starts after the answer.
                self.stop(&at.task_id, &id);
                store
                    .delete_config(&at.task_id, &id)
                    .await
                    .map_err(ApiError::internal)?;
                Ok(match dialect {
                    Dialect::V1 => json!({}),
                    Dialect::V03 => Value::Null,
                })
            }
            _ => Err(ApiError::internal("not a push method")),
        }
    }
}

/// The deliveries left unfinished: those given up (`dead_letters`) or the others.
async fn unfinished(shared: &Shared, dead_letters: bool) -> Result<Vec<PushEntry>, StoreError> {
    let entries = shared.store.unfinished().await?.into_iter();
    Ok(entries
        .filter(|entry| entry.cursor.dead.is_some() == dead_letters)
        .collect())
}
