//! Push-notification configs and their delivery cursors: stored beside the tasks, in the
//! same store, so that a restart resumes every delivery where it stood.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::StoreError;
use crate::model::TaskId;

/// How a push body is shaped: chosen by the dialect the config was created in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PushFormat {
    /// A2A v1.0: one `StreamResponse` per event.
    StreamResponse,
    /// A2A v0.3: the task as it stands, per event.
    V03Task,
}

/// `Authorization: <scheme> <credentials>` on every delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushAuthentication {
    /// An HTTP authentication scheme, e.g. `Bearer`.
    pub scheme: String,
    /// The credentials that follow it (none: no Authorization header is sent).
    #[serde(default)]
    pub credentials: String,
}

/// A webhook registered for a task (A2A `TaskPushNotificationConfig`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfig {
    /// The task.
    pub task_id: TaskId,
    /// The config's id, unique within the task.
    pub id: String,
    /// Where events are POSTed.
    pub url: String,
    /// Sent as `X-A2A-Notification-Token`.
    #[serde(default)]
    pub token: Option<String>,
    /// Sent as `Authorization`.
    #[serde(default)]
    pub authentication: Option<PushAuthentication>,
    /// The body's shape.
    pub format: PushFormat,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

/// Where a config's delivery stands.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushCursor {
    /// Every event up to this sequence number has been delivered (or skipped).
    pub delivered_seq: u64,
    /// Set when delivery gave up: the config is parked until an operator replays it.
    #[serde(default)]
    pub dead: Option<DeadLetter>,
    /// The task ended and everything was delivered: nothing more will come.
    #[serde(default)]
    pub finished: bool,
}

/// Why delivery to a config was given up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeadLetter {
    /// The first event not delivered (later ones wait behind it, to keep the order).
    pub seq: u64,
    /// Attempts made for that event.
    pub attempts: u32,
    /// The last failure.
    pub last_error: String,
    /// The first failed attempt.
    pub first_failure: DateTime<Utc>,
    /// When delivery was given up.
    pub dead_at: DateTime<Utc>,
}

/// A config with its cursor.
#[derive(Debug, Clone, PartialEq)]
pub struct PushEntry {
    /// The config.
    pub config: PushConfig,
    /// Its delivery state.
    pub cursor: PushCursor,
}

/// Storage for push configs and delivery cursors.
#[async_trait]
pub trait PushStore: Send + Sync + 'static {
    /// Stores `config` (replacing one with the same task and id) with delivery starting
    /// after event `start_after`, durably (as the store's durability mode promises). A
    /// replaced config keeps its cursor.
    async fn put_config(&self, config: &PushConfig, start_after: u64) -> Result<(), StoreError>;

    /// One config of a task.
    async fn config(&self, task: &TaskId, id: &str) -> Result<Option<PushConfig>, StoreError>;

    /// A task's configs, by id.
    async fn configs(&self, task: &TaskId) -> Result<Vec<PushConfig>, StoreError>;

    /// Removes a config and its cursor; false if there was none.
    async fn delete_config(&self, task: &TaskId, id: &str) -> Result<bool, StoreError>;

    /// A config's cursor (absent for a config stored without one: start from the start).
    async fn cursor(&self, task: &TaskId, id: &str) -> Result<Option<PushCursor>, StoreError>;

    /// Moves a cursor; ignored if the config has been deleted meanwhile. Not flushed on
    /// its own: after a crash a cursor may be behind, so an event may be delivered twice.
    async fn set_cursor(
        &self,
        task: &TaskId,
        id: &str,
        cursor: &PushCursor,
    ) -> Result<(), StoreError>;

    /// Every config whose delivery is not finished (dead ones included).
    async fn unfinished(&self) -> Result<Vec<PushEntry>, StoreError>;

    /// Takes the config's delivery for this node (a store several nodes share: one node
    /// delivers a config at a time, and only its cursor moves count); false when another
    /// node holds it. A store with one node always takes it.
    async fn claim_delivery(&self, _task: &TaskId, _id: &str) -> Result<bool, StoreError> {
        Ok(true)
    }

    /// Lets go of the config's delivery (its worker here ended).
    async fn release_delivery(&self, _task: &TaskId, _id: &str) -> Result<(), StoreError> {
        Ok(())
    }

    /// Unfinished, undead configs whose delivery no node holds (its node died): to be
    /// claimed and delivered here. A store with one node has none.
    async fn orphaned(&self) -> Result<Vec<PushEntry>, StoreError> {
        Ok(Vec::new())
    }

    /// How often to look for orphaned deliveries; `None` (the default): never.
    fn orphan_interval(&self) -> Option<std::time::Duration> {
        None
    }
}
