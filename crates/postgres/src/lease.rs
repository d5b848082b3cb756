//! Leases, for several nodes on one schema: each unfinished task is leased to one node
//! (node id, epoch, expiry). The node renews the leases it holds every third of their
//! time; its commits are fenced by the epoch it holds, so a node that lost a lease
//! cannot write the task. A task whose lease expired (its node died, or lost the
//! database) is claimed by another node, `FOR UPDATE SKIP LOCKED`, with the epoch one
//! higher, and recovered there as after a restart. The database's clock is the only
//! clock: nodes' own clocks never decide who holds what.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use deadpool_postgres::Pool;
use fundi_runtime::store::StoreError;

use crate::errors::{db, pool_error};

/// Whose leases a store takes, and for how long ([`LeaseConfig::new`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseConfig {
    /// This node's id: unique among the nodes on the schema, and the same across its
    /// restarts (a restarted node takes its own tasks back at once, fencing a former
    /// self that may still run).
    pub node: String,
    /// How long a lease lasts unless renewed: how long a dead node's tasks wait before
    /// another node takes them over.
    pub ttl: Duration,
}

impl LeaseConfig {
    /// Leases of node `node`, each lasting `ttl` unless renewed.
    pub fn new(node: impl Into<String>, ttl: Duration) -> LeaseConfig {
        LeaseConfig {
            node: node.into(),
            ttl,
        }
    }
}

/// The unfinished tasks one node holds (for an operator: `fundi doctor`).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeLeases {
    /// The node; `None`: tasks nobody holds (written without leases, or waiting to be
    /// claimed).
    pub node: Option<String>,
    /// How many unfinished tasks it holds.
    pub tasks: u64,
    /// When the last of those leases runs out, by the database's clock.
    pub expires: Option<chrono::DateTime<chrono::Utc>>,
    /// Whether every one of them has run out (the node stopped renewing them).
    pub expired: bool,
}

/// The leases this node holds, by task, with their epochs.
pub(crate) struct Leases {
    pub(crate) config: LeaseConfig,
    held: Mutex<HashMap<String, i64>>,
    /// Renewal stopped: the node handed its work back (or, in tests, stands in for a
    /// node that lost the database).
    paused: AtomicBool,
}

/// SQL for when a lease taken now runs out, its length in milliseconds being parameter
/// `$n`: the database's clock decides, never a node's.
pub(crate) fn lease_end(n: usize) -> String {
    format!("clock_timestamp() + ${n}::bigint * interval '1 millisecond'")
}

/// Most tasks one takeover claims (the rest are claimed at the next).
pub(crate) const CLAIM_BATCH: i64 = 256;

impl Leases {
    pub(crate) fn new(config: LeaseConfig) -> Result<Arc<Leases>, StoreError> {
        if config.node.trim().is_empty() {
            return Err(StoreError::database(
                "a lease needs a node id that is not empty",
            ));
        }
        if config.ttl < Duration::from_millis(100) {
            return Err(StoreError::database(format!(
                "a lease must last at least 100 ms, not {:?}",
                config.ttl
            )));
        }
        Ok(Arc::new(Leases {
            config,
            held: Mutex::default(),
            paused: AtomicBool::new(false),
        }))
    }

    pub(crate) fn ttl_ms(&self) -> i64 {
        self.config.ttl.as_millis() as i64
    }

    /// The epoch held for `id`; -1 (no epoch matches) when none is.
    pub(crate) fn epoch(&self, id: &str) -> i64 {
        self.lock().get(id).copied().unwrap_or(-1)
    }

    pub(crate) fn hold(&self, id: &str, epoch: i64) {
        self.lock().insert(id.to_owned(), epoch);
    }

    pub(crate) fn release(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Stops renewing (this node hands its work back, or, in tests, stands in for a
    /// node cut off from the database).
    pub(crate) fn stop_renewing(&self) {
        self.paused.store(true, Ordering::Release);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, i64>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Renews this node's leases (tasks and push deliveries) every third of their time,
    /// while the store lives.
    pub(crate) fn renew_in_background(leases: &Arc<Leases>, pool: Pool, schema: String) {
        let leases: Weak<Leases> = Arc::downgrade(leases);
        tokio::spawn(async move {
            loop {
                let Some(current) = leases.upgrade() else {
                    return;
                };
                let every = current.config.ttl / 3;
                if !current.paused.load(Ordering::Acquire)
                    && let Err(error) = renew(&pool, &schema, &current).await
                {
                    tracing::warn!(%error, "could not renew this node's task leases");
                }
                drop(current);
                tokio::time::sleep(every).await;
            }
        });
    }
}

async fn renew(pool: &Pool, schema: &str, leases: &Leases) -> Result<(), StoreError> {
    let client = pool.get().await.map_err(pool_error)?;
    // The tasks this node runs, the push deliveries it makes and the run slots it
    // holds, in one statement.
    client
        .execute(
            &format!(
                "WITH tasks AS (
                    UPDATE {schema}.tasks SET lease_expires = {until}
                    WHERE lease_node = $1 AND NOT terminal
                 ), slots AS (
                    UPDATE {schema}.run_slots SET expires = {until} WHERE node = $1
                 )
                 UPDATE {schema}.push_configs SET lease_expires = {until}
                 WHERE lease_node = $1 AND NOT finished",
                until = lease_end(2)
            ),
            &[&leases.config.node, &leases.ttl_ms()],
        )
        .await
        .map_err(db)?;
    Ok(())
}
