//! `TaskStore` on PostgreSQL: a task's row (its record as JSON, and the columns that
//! listing filters and orders by), its events, and new tasks' first messages. A write
//! is one statement that checks the version the writer read (see `statements`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use deadpool_postgres::Pool;
use fundi_runtime::store::{
    Creation, ListPage, ListQuery, QuarantinedTask, StoreError, TaskRecord, TaskStore,
    first_message,
};
use fundi_runtime::{TaskEvent, TaskId};

use crate::cluster::Nodes;
use crate::columns::{decode_column, owner_key};
use crate::commit::{Commits, Outcome};
use crate::connect::{PostgresConfig, connect, lock};
use crate::database::Database;
use crate::errors::{db, pool_error};
use crate::first_messages::FirstMessages;
use crate::lease::{Leases, NodeLeases, take_node_lease};
use crate::migrations::migrate;
use crate::statements::{HotStatements, SlotChange};
use crate::{lease_claims, listing, quarantine, snapshot};

/// Tasks and their events in PostgreSQL.
#[derive(Clone)]
pub struct PostgresStore {
    /// The pool and the schema.
    pub(crate) db: Database,
    /// The session holding the schema's lock, when exclusive.
    _holder: Option<std::sync::Arc<tokio_postgres::Client>>,
    /// The statements of every commit and read, written once for the schema.
    pub(crate) hot: std::sync::Arc<HotStatements>,
    /// The leases this node holds, with several nodes on the schema.
    pub(crate) leases: Option<std::sync::Arc<Leases>>,
    /// This node among the others, with several nodes on the schema.
    pub(crate) nodes: Option<std::sync::Arc<Nodes>>,
    /// Its commits, sent together when they wait together (see `commit`).
    pub(crate) commits: std::sync::Arc<Commits>,
    /// Its first-message lookups, likewise (see `first_messages`).
    pub(crate) first_messages: std::sync::Arc<FirstMessages>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("schema", &self.db.schema())
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects, and brings the schema to this build's version (refusing a newer one).
    pub async fn open(config: &PostgresConfig) -> Result<PostgresStore, StoreError> {
        let (pool, connect, tls) = connect(config)?;
        let leases = config.lease.clone().map(Leases::new).transpose()?;
        let holder = match config.exclusive {
            true => Some(std::sync::Arc::new(
                lock(config, &connect, tls.as_ref()).await?,
            )),
            false => None,
        };
        let mut client = pool.get().await.map_err(pool_error)?;
        migrate(&mut client, &config.schema).await?;
        if let Some(leases) = &leases {
            take_node_lease(&**client, &config.schema, leases).await?;
        }
        drop(client);
        let nodes = leases.as_ref().map(|leases| {
            Leases::renew_in_background(leases, pool.clone(), config.schema.clone());
            Nodes::start(pool.clone(), &config.schema, leases.clone(), connect, tls)
        });
        let hot = std::sync::Arc::new(HotStatements::new(&config.schema, leases.is_some()));
        Ok(PostgresStore::assemble(
            config, pool, holder, hot, leases, nodes,
        ))
    }

    /// Opens the store to look at it, changing nothing (no migration, no lock, no
    /// lease), while nodes may run on it: the schema must be at this build's version.
    pub async fn inspect(config: &PostgresConfig) -> Result<PostgresStore, StoreError> {
        let (pool, _, _) = connect(config)?;
        let client = pool.get().await.map_err(pool_error)?;
        crate::migrations::check_current(&client, &config.schema).await?;
        drop(client);
        let hot = std::sync::Arc::new(HotStatements::new(&config.schema, false));
        Ok(PostgresStore::assemble(config, pool, None, hot, None, None))
    }

    /// Who holds the unfinished tasks, by node.
    pub async fn node_leases(&self) -> Result<Vec<NodeLeases>, StoreError> {
        lease_claims::node_leases(&self.db).await
    }

    /// The store on `pool`, its commits and lookups sharing its statements and leases.
    fn assemble(
        config: &PostgresConfig,
        pool: Pool,
        holder: Option<std::sync::Arc<tokio_postgres::Client>>,
        hot: std::sync::Arc<HotStatements>,
        leases: Option<std::sync::Arc<Leases>>,
        nodes: Option<std::sync::Arc<Nodes>>,
    ) -> PostgresStore {
        // A statement under way holds a connection: more than the pool would only wait.
        let at_once = config.statements_at_once.min(config.pool_size.max(1));
        let commits = Commits::new(
            pool.clone(),
            hot.clone(),
            leases.clone(),
            nodes.clone(),
            at_once,
        );
        let first_messages = FirstMessages::new(pool.clone(), hot.clone(), at_once);
        PostgresStore {
            db: Database::new(pool, config.schema.clone()),
            _holder: holder,
            hot,
            leases,
            nodes,
            commits: std::sync::Arc::new(commits),
            first_messages: std::sync::Arc::new(first_messages),
        }
    }
}

/// What tests ask of a store beyond `TaskStore` (with the `test-util` feature).
#[cfg(feature = "test-util")]
impl PostgresStore {
    /// Stops renewing this node's leases, as a node cut off from the database would:
    /// other nodes take its tasks over once the leases run out.
    pub fn pause_lease_renewal(&self) {
        if let Some(leases) = &self.leases {
            leases.stop_renewing();
        }
    }

    /// Renews this node's leases again after [`Self::pause_lease_renewal`], as a node
    /// that reaches the database again would.
    pub fn resume_lease_renewal(&self) {
        if let Some(leases) = &self.leases {
            leases.resume_renewing();
        }
    }

    /// The most commits of several tasks this store has sent in one statement.
    pub fn most_commits_sent_at_once(&self) -> usize {
        self.commits.most_sent_at_once()
    }

    /// The most statements of commits this store has had under way at once.
    pub fn most_commit_statements_under_way(&self) -> usize {
        self.commits.most_under_way()
    }

    /// The most first-message lookups this store has made in one statement.
    pub fn most_lookups_sent_at_once(&self) -> usize {
        self.first_messages.most_sent_at_once()
    }

    /// A connection from the store's own pool, to look at what its sessions see.
    pub async fn testing_client(&self) -> deadpool_postgres::Object {
        self.db
            .client()
            .await
            .unwrap_or_else(|e| panic!("a pooled connection: {e}"))
    }
}

/// How many times a new task's commit is sent while its first message's entry is
/// claimed by transactions that then roll back, in all.
const CLAIM_SENDS: usize = 3;

/// A refused creation that PostgreSQL's answers cannot name the reason of: a write that
/// creates no task, or a first message whose entry kept changing under it.
fn taken_without_first(record: &TaskRecord) -> StoreError {
    StoreError::database(format!(
        "task {}: its first message was indexed for another task, which could not be read",
        record.id()
    ))
}

#[async_trait]
impl TaskStore for PostgresStore {
    async fn write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        let written = self
            .commits
            .write(record, expected_version, events, SlotChange::None, None);
        written.await.map(drop)
    }

    async fn create_with_run_slot(
        &self,
        record: &TaskRecord,
        events: &[TaskEvent],
        limit: usize,
    ) -> Result<Option<u32>, StoreError> {
        match self.create_task(record, events, Some(limit), None).await? {
            Creation::Written(slot) => Ok(slot),
            _ => Ok(None),
        }
    }

    async fn create_task(
        &self,
        record: &TaskRecord,
        events: &[TaskEvent],
        run_slot: Option<usize>,
        window: Option<std::time::Duration>,
    ) -> Result<Creation, StoreError> {
        let slot = match run_slot {
            Some(_) if self.nodes.is_none() => return Err(StoreError::no_shared_slots()),
            Some(limit) => SlotChange::Take { limit },
            None => SlotChange::None,
        };
        // The first message is claimed in the task's own commit: no lookup before it.
        for _ in 0..CLAIM_SENDS {
            let had = match self.commits.write(record, 0, events, slot, window).await? {
                Outcome::Written(slot) => return Ok(Creation::Written(slot)),
                Outcome::NoSlot => return Ok(Creation::NoSlot),
                Outcome::Taken(had) => had,
            };
            // None: indexed by another transaction as the commit ran, which holds the
            // answer now.
            let had = match had {
                found @ Some(_) => found,
                None => {
                    let (owner, message_id, _) =
                        first_message(record, events).ok_or_else(|| taken_without_first(record))?;
                    self.created_by(owner, message_id).await?
                }
            };
            if let Some((task, at)) = had {
                return Ok(Creation::Taken(task, at));
            }
            // That transaction rolled back: the message is free again.
        }
        Err(taken_without_first(record))
    }

    async fn write_giving_back_run_slot(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
        slot: u32,
    ) -> Result<(), StoreError> {
        let given_back = SlotChange::GiveBack { slot };
        let written = self
            .commits
            .write(record, expected_version, events, given_back, None);
        written.await.map(drop)
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        let client = self.db.client().await?;
        let read = client
            .prepare_cached(&self.hot.get_task)
            .await
            .map_err(db)?;
        let row = client.query_opt(&read, &[&id.as_str()]).await.map_err(db)?;
        row.map(|row| snapshot::decode(&row, 0)).transpose()
    }

    async fn created_by(
        &self,
        owner: Option<&str>,
        message_id: &str,
    ) -> Result<Option<(TaskId, DateTime<Utc>)>, StoreError> {
        // Asked for every new message: gathered with the others (`first_messages`).
        self.first_messages
            .task(owner_key(owner), message_id.to_owned())
            .await
    }

    async fn events(
        &self,
        id: &TaskId,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<TaskEvent>, StoreError> {
        let client = self.db.client().await?;
        // Read by every subscriber that catches up: prepared once per connection.
        let read = client
            .prepare_cached(&format!(
                "SELECT event FROM {} WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                self.db.table("events")
            ))
            .await
            .map_err(db)?;
        let rows = client
            .query(&read, &[&id.as_str(), &(after_seq as i64), &(limit as i64)])
            .await
            .map_err(db)?;
        rows.into_iter().map(|row| decode_column(&row, 0)).collect()
    }

    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        listing::list(&self.db, query).await
    }

    async fn remove_ended_before(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize, StoreError> {
        listing::remove_ended(&self.db, before, limit).await
    }

    async fn active(&self) -> Result<Vec<TaskRecord>, StoreError> {
        if let Some(leases) = &self.leases {
            return lease_claims::claim_at_start(&self.db, leases).await;
        }
        let client = self.db.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT id, {} FROM {} WHERE NOT terminal ORDER BY id",
                    snapshot::columns("", &self.db.table("events")),
                    self.db.table("tasks")
                ),
                &[],
            )
            .await
            .map_err(db)?;
        drop(client);
        let mut active = Vec::with_capacity(rows.len());
        for row in &rows {
            active.extend(quarantine::record_or_set_aside(&self.db, row, 0, 1).await?);
        }
        Ok(active)
    }

    async fn quarantined(&self) -> Result<Vec<QuarantinedTask>, StoreError> {
        quarantine::quarantined(&self.db).await
    }

    async fn set_aside(&self, id: &TaskId, error: &StoreError) -> Result<(), StoreError> {
        quarantine::set_aside(&self.db, id, error).await
    }

    async fn take_over(&self) -> Result<Vec<TaskRecord>, StoreError> {
        match &self.leases {
            Some(leases) => lease_claims::claim_expired(&self.db, leases).await,
            None => Ok(Vec::new()),
        }
    }

    async fn reclaim(&self) -> Result<Vec<TaskRecord>, StoreError> {
        match &self.leases {
            Some(leases) => lease_claims::reclaim_own(&self.db, leases).await,
            None => Ok(Vec::new()),
        }
    }

    fn takeover_interval(&self) -> Option<std::time::Duration> {
        // A dead node's tasks wait at most half a lease more than the lease itself.
        self.leases.as_ref().map(|l| l.config.ttl / 2)
    }

    async fn hand_back(&self) -> Result<(), StoreError> {
        match &self.leases {
            Some(leases) => lease_claims::hand_back(&self.db, leases).await,
            None => Ok(()),
        }
    }

    fn cluster(&self) -> Option<std::sync::Arc<dyn fundi_runtime::store::Cluster>> {
        self.nodes
            .clone()
            .map(|nodes| nodes as std::sync::Arc<dyn fundi_runtime::store::Cluster>)
    }
}
