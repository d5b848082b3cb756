//! Opening a store: where it is (`PostgresConfig`), its pool of connections (plain or
//! TLS, each with the statement timeout and a connect timeout), and the session that
//! holds the schema's lock when the store must be its only one.

use std::time::Duration;

use deadpool_postgres::{Pool, Runtime};
use fundi_runtime::store::StoreError;
use tokio_postgres::NoTls;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::errors::{db, pool_error};
use crate::lease::LeaseConfig;
use crate::tls::connector;

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
    /// Statements of one kind (commits; first-message lookups) under way at once, at
    /// most (at least one): requests that arrive meanwhile wait for one of them to end
    /// and go together in the next. The database's cost is mostly per statement, so
    /// fewer make larger statements and more sends per second from a database with few
    /// cores; more keep more of a large database's cores busy. More than `pool_size`
    /// counts as `pool_size`.
    pub statements_at_once: usize,
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
    /// The store at `url`, in schema `public`, with at most 16 connections and two
    /// statements of a kind at once, the server's own statement timeout, not
    /// exclusive, without leases.
    pub fn new(url: impl Into<String>) -> PostgresConfig {
        PostgresConfig {
            url: url.into(),
            ca_file: None,
            schema: "public".into(),
            pool_size: 16,
            statements_at_once: 2,
            statement_timeout: None,
            exclusive: false,
            lease: None,
        }
    }
}

/// A session of its own that holds the schema's advisory lock, or why not.
pub(crate) async fn lock(
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
pub(crate) fn connect(
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
