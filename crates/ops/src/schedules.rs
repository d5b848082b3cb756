//! Scheduled runs: recurring work an operator sets up once (a nightly security scan of
//! staging, a weekly audit of the docs site). Each firing submits an ordinary task owned
//! by the schedule's creator, authorised by the scopes its client holds at the time of
//! firing. Schedules are stored beside the tasks; the guarantees (no firing lost or
//! doubled across a restart, one firing for a run of missed ones) are in
//! docs/schedules.md.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use fundi_runtime::Grants;
use fundi_runtime::model::{SkillId, TaskId};
use fundi_runtime::store::StoreError;

mod cron;
mod firing;
mod in_memory;
mod scheduler;

pub use cron::CronSpec;
pub use in_memory::MemoryScheduleStore;
pub use scheduler::Scheduler;

/// What an operator asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewSchedule {
    /// The skill each firing runs.
    pub skill: SkillId,
    /// A cron expression: five fields (minute hour day-of-month month day-of-week), or
    /// six with seconds first.
    pub cron: String,
    /// The IANA time zone the expression is read in (`Europe/Berlin`); UTC when absent.
    #[serde(default)]
    pub time_zone: Option<String>,
    /// The data part of each firing's message (the skill's input).
    #[serde(default)]
    pub data: Option<Value>,
    /// The text part of each firing's message.
    #[serde(default)]
    pub text: Option<String>,
}

/// Who creates a schedule: its tasks' owner, the client it acts through, and the scopes
/// that client held at creation.
#[derive(Debug, Clone, PartialEq)]
pub struct Creator {
    /// The end user who owns the tasks the schedule submits.
    pub owner: Option<String>,
    /// The client application the user acts through.
    pub client: Option<String>,
    /// What the client held when the schedule was created.
    pub grants: Grants,
}

/// A stored schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Schedule {
    /// Its id (`sch-` and a UUID).
    pub id: String,
    /// What was asked for.
    #[serde(flatten)]
    pub spec: NewSchedule,
    /// The time zone the expression is read in (the default filled in).
    pub zone: String,
    /// The owner of the tasks it submits.
    pub owner: Option<String>,
    /// The client it acts through.
    pub client: Option<String>,
    /// The client's scopes at creation (`None`: every scope, an in-process caller); used
    /// at a firing only when the client's current scopes cannot be known (JWT clients).
    pub scopes: Option<Vec<String>>,
    /// A paused schedule does not fire.
    pub paused: bool,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it fires next (for a paused one: when it would have).
    pub next_fire: DateTime<Utc>,
    /// How many firings submitted a task.
    pub fired: u64,
    /// Firings missed while fundi was not running (or the schedule was behind), beyond
    /// the one that ran for them.
    pub skipped: u64,
    /// Its latest firing.
    pub last: Option<Firing>,
}

/// One firing of a schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Firing {
    /// The time it was due.
    pub due: DateTime<Utc>,
    /// When it ran.
    pub at: DateTime<Utc>,
    /// The task it submitted.
    pub task_id: Option<TaskId>,
    /// Why it submitted none (the client lost the skill's scope, the skill is gone...).
    pub error: Option<String>,
}

impl Schedule {
    /// The scopes a firing acts with, from what `authority` says of the client now.
    pub(crate) async fn grants_now(
        &self,
        authority: &dyn ScopeAuthority,
    ) -> Result<Grants, String> {
        let recorded = || match &self.scopes {
            None => Grants::All,
            Some(scopes) => Grants::scopes(scopes.iter().cloned()),
        };
        let Some(client) = &self.client else {
            return Ok(recorded());
        };
        match authority.scopes_now(client).await {
            ScopesNow::Held(grants) => Ok(grants),
            ScopesNow::Unknown => Ok(recorded()),
            ScopesNow::Gone => Err(format!(
                "the client {client:?} that created the schedule no longer exists"
            )),
        }
    }
}

/// What a client holds now, as the credentials' keeper knows it.
#[derive(Debug, Clone, PartialEq)]
pub enum ScopesNow {
    /// These scopes.
    Held(Grants),
    /// The client is no longer known: its schedules fire no more tasks.
    Gone,
    /// Its scopes come with each of its requests (a JWT): the scopes recorded when the
    /// schedule was created stand.
    Unknown,
}

/// Who can say what a client holds at a firing, without a request from it.
#[async_trait]
pub trait ScopeAuthority: Send + Sync + 'static {
    /// The scopes `client` holds now.
    async fn scopes_now(&self, client: &str) -> ScopesNow;
}

/// An authority that knows no client: firings act with the scopes recorded at creation.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecordedScopes;

#[async_trait]
impl ScopeAuthority for RecordedScopes {
    async fn scopes_now(&self, _client: &str) -> ScopesNow {
        ScopesNow::Unknown
    }
}

/// Where schedules are kept.
#[async_trait]
pub trait ScheduleStore: Send + Sync + 'static {
    /// Stores a schedule (new or changed), durably as the store's mode says.
    async fn put(&self, schedule: &Schedule) -> Result<(), StoreError>;

    /// One schedule by id.
    async fn get(&self, id: &str) -> Result<Option<Schedule>, StoreError>;

    /// Every schedule, by id.
    async fn list(&self) -> Result<Vec<Schedule>, StoreError>;

    /// Removes a schedule; false if there was none.
    async fn delete(&self, id: &str) -> Result<bool, StoreError>;

    /// Takes the schedule's firing due at its `next_fire` for this node (a store several
    /// nodes share: one node fires each firing); false when another node has taken it,
    /// or the schedule moved on. A claim lapses if its node dies before it records the
    /// firing (`put`). A store with one node always takes it.
    async fn claim_firing(&self, _schedule: &Schedule) -> Result<bool, StoreError> {
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(client: Option<&str>, scopes: Option<Vec<&str>>) -> Schedule {
        Schedule {
            client: client.map(str::to_owned),
            scopes: scopes.map(|s| s.into_iter().map(str::to_owned).collect()),
            ..crate::testing::schedule("sch-1", Utc::now())
        }
    }

    #[tokio::test]
    async fn without_a_word_from_the_credentials_the_recorded_scopes_stand() {
        let recorded = schedule(Some("ci"), Some(vec!["fundi:audit"]));
        assert_eq!(
            recorded.grants_now(&RecordedScopes).await,
            Ok(Grants::scopes(["fundi:audit"]))
        );
        let in_process = schedule(None, None);
        assert_eq!(
            in_process.grants_now(&RecordedScopes).await,
            Ok(Grants::All)
        );
    }
}
