//! `TaskStore` on PostgreSQL: a task's row (its record as JSON, and the columns that
//! listing filters and orders by), its events, and new tasks' first messages. A write
//! is one statement that checks the version the writer read (see `statements`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::time::Duration;

use deadpool_postgres::{Pool, Runtime};
use fundi_runtime::store::{
    ListPage, ListQuery, QuarantinedTask, StoreError, TaskRecord, TaskStore,
};
use fundi_runtime::{TaskEvent, TaskId};
use tokio_postgres::NoTls;

use crate::cluster::Nodes;
use crate::columns::{decode_column, owner_key};
use crate::errors::{db, pool_error};
use crate::lease::{LeaseConfig, Leases};
use crate::migrations::migrate;
use crate::queues::{CommitQueue, Lookups};
use crate::statements::{HotStatements, SlotChange};
use crate::tls::connector;
use tokio_postgres_rustls::MakeRustlsConnect;

/// Where the store is. Made by [`PostgresConfig::new`]; the other settings are set on
/// it, so that one added later breaks nobody.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PostgresConfig {
    /// A `postgres://` URL (or key=value connection string). With `sslmode=require`
    /// the connection is TLS, its certificate verified (see `ca_file`); otherwise plain.
    pub url: String,
    /// A PEM file of CA certificates trusted for the server's certificate, beside the
    /// public roots (a private CA, a cloud provider's); only with `sslmode=require`.
    pub ca_file: Option<std::path::PathBuf>,
    /// The schema its tables live in (created if missing): letters, digits and `_`.
    pub schema: String,
    /// Most connections open at once.
    pub pool_size: usize,
    /// Longest one statement may run before the server cancels it (PostgreSQL's
    /// `statement_timeout`, set on every connection); `None` leaves the server's own.
    pub statement_timeout: Option<std::time::Duration>,
    /// Whether this store must be the only one open on the schema (a server node: two
    /// nodes on one schema would both recover and run the same tasks). The lock is a
    /// session advisory lock, let go when the store is dropped or its process dies.
    /// With `lease`, the lock is the node id's instead: one process per node id.
    pub exclusive: bool,
    /// Leases, for several nodes on one schema (see `LeaseConfig`); `None`: this store's
    /// node is the schema's only one.
    pub lease: Option<LeaseConfig>,
}

impl PostgresConfig {
    /// The store at `url`, in schema `public`, with at most 16 connections, the
    /// server's own statement timeout, not exclusive, without leases.
    pub fn new(url: impl Into<String>) -> PostgresConfig {
        PostgresConfig {
            url: url.into(),
            ca_file: None,
            schema: "public".into(),
            pool_size: 16,
            statement_timeout: None,
            exclusive: false,
            lease: None,
        }
    }
}

/// Tasks and their events in PostgreSQL.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    schema: String,
    /// The session holding the schema's lock, when exclusive.
    _holder: Option<std::sync::Arc<tokio_postgres::Client>>,
    /// The statements of every commit and read, written once for the schema.
    pub(crate) hot: std::sync::Arc<HotStatements>,
    /// The leases this node holds, with several nodes on the schema.
    pub(crate) leases: Option<std::sync::Arc<Leases>>,
    /// This node among the others, with several nodes on the schema.
    pub(crate) nodes: Option<std::sync::Arc<Nodes>>,
    /// Commits waiting to be sent together (see `commit::batch`).
    pub(crate) commits: std::sync::Arc<CommitQueue>,
    /// First-message lookups waiting to be sent together (see `first_messages`).
    pub(crate) lookups: std::sync::Arc<Lookups>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// A session of its own that holds the schema's advisory lock, or why not.
async fn lock(
    config: &PostgresConfig,
    connect: &tokio_postgres::Config,
    tls: Option<&MakeRustlsConnect>,
) -> Result<tokio_postgres::Client, StoreError> {
    let client = match tls {
        Some(tls) => {
            let (client, connection) = connect.connect(tls.clone()).await.map_err(db)?;
            tokio::spawn(holding(connection));
            client
        }
        None => {
            let (client, connection) = connect.connect(NoTls).await.map_err(db)?;
            tokio::spawn(holding(connection));
            client
        }
    };
    let key = match &config.lease {
        Some(lease) => format!("fundi store {} node {}", config.schema, lease.node),
        None => format!("fundi store {}", config.schema),
    };
    let held: bool = client
        .query_one("SELECT pg_try_advisory_lock(hashtext($1))", &[&key])
        .await
        .map_err(db)?
        .get(0);
    match held {
        true => Ok(client),
        false => Err(StoreError::database(match &config.lease {
            Some(lease) => format!(
                "another fundi process is node {:?} on schema {}: give each node an id of its own",
                lease.node, config.schema
            ),
            None => format!(
                "another fundi node is using schema {} of this database: stop that one, give \
                 this one another store.postgres.schema, or run both as nodes of one cluster \
                 (set store.postgres.node-id on each)",
                config.schema
            ),
        })),
    }
}

/// Drives the session holding the store's lock until it ends.
async fn holding<C>(connection: C)
where
    C: std::future::Future<Output = Result<(), tokio_postgres::Error>>,
{
    if let Err(error) = connection.await {
        tracing::error!(%error, "the PostgreSQL session holding the store's lock ended");
    }
}

/// The pool of connections `config` asks for, with what opens another one.
fn connect(
    config: &PostgresConfig,
) -> Result<(Pool, tokio_postgres::Config, Option<MakeRustlsConnect>), StoreError> {
    if !valid_schema(&config.schema) {
        return Err(StoreError::database(format!(
            "store.postgres.schema {:?} must be lower-case letters, digits and _, at most 63",
            config.schema
        )));
    }
    let mut connect: tokio_postgres::Config = config
        .url
        .parse()
        .map_err(|e| StoreError::database(format!("store.postgres.url: {e}")))?;
    if let Some(timeout) = config.statement_timeout {
        // A startup option, so it holds on every pooled connection from its start.
        let options = connect.get_options().unwrap_or_default().to_owned();
        connect.options(format!(
            "{options} -c statement_timeout={}",
            timeout.as_millis()
        ));
    }
    // A connection that cannot be opened (the database is down, the link drops what it
    // is sent) fails in time rather than holding its caller: within a third of a lease
    // for a node of several, else 10 s; a URL's own connect_timeout wins.
    let open_within = config
        .lease
        .as_ref()
        .map_or(Duration::from_secs(10), |lease| {
            (lease.ttl / 3).max(Duration::from_millis(500))
        });
    if connect.get_connect_timeout().is_none() {
        connect.connect_timeout(open_within);
    }
    let tls = connector(&connect, config.ca_file.as_deref())?;
    let settings = deadpool_postgres::ManagerConfig::default();
    let manager = match &tls {
        Some(tls) => {
            deadpool_postgres::Manager::from_config(connect.clone(), tls.clone(), settings)
        }
        None => deadpool_postgres::Manager::from_config(connect.clone(), NoTls, settings),
    };
    let opened = std::sync::atomic::AtomicBool::new(false);
    let pool = Pool::builder(manager)
        .max_size(config.pool_size.max(1))
        .runtime(Runtime::Tokio1)
        .create_timeout(Some(open_within))
        .recycle_timeout(Some(open_within))
        .post_create(deadpool_postgres::Hook::sync_fn(move |_, _| {
            // Every connection after the first: the pool growing, or reconnecting after
            // connections were dropped (counted: a dashboard shows reconnect storms).
            if opened.swap(true, std::sync::atomic::Ordering::Relaxed) {
                crate::metrics::metrics().connection_opened();
            }
            Ok(())
        }))
        .build()
        .map_err(pool_error)?;
    Ok((pool, connect, tls))
}

fn valid_schema(schema: &str) -> bool {
    let mut chars = schema.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && schema.len() <= 63
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
        drop(client);
        let nodes = leases.as_ref().map(|leases| {
            Leases::renew_in_background(leases, pool.clone(), config.schema.clone());
            Nodes::start(pool.clone(), &config.schema, leases.clone(), connect, tls)
        });
        Ok(PostgresStore {
            pool,
            schema: config.schema.clone(),
            _holder: holder,
            hot: std::sync::Arc::new(HotStatements::new(&config.schema, leases.is_some())),
            leases,
            nodes,
            commits: Default::default(),
            lookups: Default::default(),
        })
    }

    /// Opens the store to look at it, changing nothing (no migration, no lock, no
    /// lease), while nodes may run on it: the schema must be at this build's version.
    pub async fn inspect(config: &PostgresConfig) -> Result<PostgresStore, StoreError> {
        let (pool, _, _) = connect(config)?;
        let client = pool.get().await.map_err(pool_error)?;
        crate::migrations::check_current(&client, &config.schema).await?;
        drop(client);
        Ok(PostgresStore {
            pool,
            schema: config.schema.clone(),
            _holder: None,
            hot: std::sync::Arc::new(HotStatements::new(&config.schema, false)),
            leases: None,
            nodes: None,
            commits: Default::default(),
            lookups: Default::default(),
        })
    }

    /// The task record in column `record_at` of `row`, or `None` when it cannot be
    /// decoded: then the task (its id in column `id_at`) is set aside, never a reason not
    /// to start; the others are recovered.
    pub(crate) async fn record_or_set_aside(
        &self,
        row: &tokio_postgres::Row,
        id_at: usize,
        record_at: usize,
    ) -> Result<Option<TaskRecord>, StoreError> {
        match decode_column::<TaskRecord>(row, record_at) {
            Ok(record) => Ok(Some(record)),
            Err(error) => {
                let id = TaskId::from(row.get::<_, String>(id_at));
                self.set_aside(&id, &error).await?;
                Ok(None)
            }
        }
    }

    pub(crate) fn table(&self, name: &str) -> String {
        format!("{}.{name}", self.schema)
    }

    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(pool_error)
    }
}

#[async_trait]
impl TaskStore for PostgresStore {
    async fn write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        let written = self.write_record(record, expected_version, events, SlotChange::None);
        written.await.map(drop)
    }

    async fn create_with_run_slot(
        &self,
        record: &TaskRecord,
        events: &[TaskEvent],
        limit: usize,
    ) -> Result<Option<u32>, StoreError> {
        if self.nodes.is_none() {
            return Err(StoreError::no_shared_slots());
        }
        self.write_record(record, 0, events, SlotChange::Take { limit })
            .await
    }

    async fn write_giving_back_run_slot(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
        slot: u32,
    ) -> Result<(), StoreError> {
        let given_back = SlotChange::GiveBack { slot };
        let written = self.write_record(record, expected_version, events, given_back);
        written.await.map(drop)
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        let client = self.client().await?;
        let read = client
            .prepare_cached(&self.hot.get_task)
            .await
            .map_err(db)?;
        let row = client.query_opt(&read, &[&id.as_str()]).await.map_err(db)?;
        row.map(|row| decode_column(&row, 0)).transpose()
    }

    async fn created_by(
        &self,
        owner: Option<&str>,
        message_id: &str,
    ) -> Result<Option<(TaskId, DateTime<Utc>)>, StoreError> {
        // Asked for every new message: gathered with the others (`first_messages`).
        self.first_message_task(owner_key(owner), message_id.to_owned())
            .await
    }

    async fn events(
        &self,
        id: &TaskId,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<TaskEvent>, StoreError> {
        let client = self.client().await?;
        // Read by every subscriber that catches up: prepared once per connection.
        let read = client
            .prepare_cached(&format!(
                "SELECT event FROM {} WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                self.table("events")
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
        self.list_tasks(query).await
    }

    async fn remove_ended_before(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize, StoreError> {
        self.remove_ended(before, limit).await
    }

    async fn active(&self) -> Result<Vec<TaskRecord>, StoreError> {
        if let Some(leases) = &self.leases {
            return self.claim_at_start(leases).await;
        }
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT id, record FROM {} WHERE NOT terminal ORDER BY id",
                    self.table("tasks")
                ),
                &[],
            )
            .await
            .map_err(db)?;
        drop(client);
        let mut active = Vec::with_capacity(rows.len());
        for row in &rows {
            active.extend(self.record_or_set_aside(row, 0, 1).await?);
        }
        Ok(active)
    }

    async fn quarantined(&self) -> Result<Vec<QuarantinedTask>, StoreError> {
        self.quarantined_tasks().await
    }

    async fn take_over(&self) -> Result<Vec<TaskRecord>, StoreError> {
        match &self.leases {
            Some(leases) => self.claim_expired(leases).await,
            None => Ok(Vec::new()),
        }
    }

    async fn reclaim(&self) -> Result<Vec<TaskRecord>, StoreError> {
        match &self.leases {
            Some(leases) => self.reclaim_own(leases).await,
            None => Ok(Vec::new()),
        }
    }

    fn takeover_interval(&self) -> Option<std::time::Duration> {
        // A dead node's tasks wait at most half a lease more than the lease itself.
        self.leases.as_ref().map(|l| l.config.ttl / 2)
    }

    async fn hand_back(&self) -> Result<(), StoreError> {
        match &self.leases {
            Some(leases) => self.hand_back_leases(leases).await,
            None => Ok(()),
        }
    }

    fn cluster(&self) -> Option<std::sync::Arc<dyn fundi_runtime::store::Cluster>> {
        self.nodes
            .clone()
            .map(|nodes| nodes as std::sync::Arc<dyn fundi_runtime::store::Cluster>)
    }
}
