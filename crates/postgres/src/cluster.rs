//! `Cluster` on PostgreSQL, for nodes sharing a schema with leases: who runs a task
//! (its lease), requests handed to that node through the `requests` table (the holder
//! takes them, `FOR UPDATE SKIP LOCKED`, and writes its answer beside them), and
//! signals of other nodes' events. NOTIFY wakes the reader (see `listener`); the
//! tables hold what is said, so that nothing depends on a notification arriving.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::Pool;
use fundi_runtime::TaskId;
use fundi_runtime::store::{Cluster, Holder, Incoming, StoreError};
use serde_json::Value;
use tokio::sync::{Notify, mpsc, watch};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::lease::{Leases, lease_end};
use crate::listener::{Hearer, channel, listen_in_background};

mod held;
mod requests;
mod run_slots;
use crate::errors::{db, pool_error};

/// This node among the nodes sharing the schema.
pub(crate) struct Nodes {
    me: Weak<Nodes>,
    pool: Pool,
    pub(crate) channel: String,
    tasks: String,
    node_leases: String,
    requests: String,
    watchers_table: String,
    run_slots: String,
    run_slot_wants: String,
    /// Skills whose slot rows this process has made sure of.
    slots_ready: Mutex<std::collections::HashSet<(String, usize)>>,
    leases: Arc<Leases>,
    pub(crate) connect: tokio_postgres::Config,
    pub(crate) tls: Option<MakeRustlsConnect>,
    /// Followers of tasks run elsewhere, by task.
    watchers: Mutex<HashMap<String, watch::Sender<()>>>,
    /// Callers waiting for their requests' answers, by request.
    waiters: Mutex<HashMap<i64, Arc<Notify>>>,
    /// Requests for this node may be waiting.
    requests_waiting: Notify,
    incoming: Mutex<Option<mpsc::Receiver<Incoming>>>,
    handing: mpsc::Sender<Incoming>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Nodes {
    pub(crate) fn start(
        pool: Pool,
        schema: &str,
        leases: Arc<Leases>,
        connect: tokio_postgres::Config,
        tls: Option<MakeRustlsConnect>,
    ) -> Arc<Nodes> {
        let (handing, incoming) = mpsc::channel(1024);
        let nodes = Arc::new_cyclic(|me| Nodes {
            me: me.clone(),
            pool,
            channel: channel(schema),
            tasks: format!("{schema}.tasks"),
            node_leases: format!("{schema}.node_leases"),
            requests: format!("{schema}.requests"),
            watchers_table: format!("{schema}.watchers"),
            run_slots: format!("{schema}.run_slots"),
            run_slot_wants: format!("{schema}.run_slot_wants"),
            slots_ready: Mutex::default(),
            leases,
            connect,
            tls,
            watchers: Mutex::default(),
            waiters: Mutex::default(),
            requests_waiting: Notify::new(),
            incoming: Mutex::new(Some(incoming)),
            handing,
        });
        listen_in_background(&nodes);
        Nodes::keep_watching(&nodes);
        nodes
    }

    /// Every third of a lease: the tasks still followed here stay registered, the others
    /// are let go, registrations of dead nodes are removed, and so are requests nobody
    /// collected.
    fn keep_watching(nodes: &Arc<Nodes>) {
        let nodes: Weak<Nodes> = Arc::downgrade(nodes);
        tokio::spawn(async move {
            loop {
                let Some(current) = nodes.upgrade() else {
                    return;
                };
                let every = current.leases.config.ttl / 3;
                if let Err(error) = current.renew_watchers().await {
                    tracing::warn!(%error, "could not renew this node's followed tasks");
                }
                if let Err(error) = current.forget_stale_requests().await {
                    tracing::warn!(%error, "could not remove requests nobody collected");
                }
                drop(current);
                tokio::time::sleep(every).await;
            }
        });
    }

    async fn renew_watchers(&self) -> Result<(), StoreError> {
        let gone: Vec<String> = {
            let mut watchers = lock(&self.watchers);
            let gone = watchers
                .iter()
                .filter(|(_, watcher)| watcher.receiver_count() == 0)
                .map(|(task, _)| task.clone())
                .collect::<Vec<_>>();
            for task in &gone {
                watchers.remove(task);
            }
            gone
        };
        let client = self.pool.get().await.map_err(pool_error)?;
        client
            .execute(
                &format!(
                    "WITH gone AS (
                        DELETE FROM {w} WHERE (node = $1 AND task_id = ANY($2))
                            OR (node <> $1 AND expires < clock_timestamp())
                     )
                     UPDATE {w} SET expires = {until} WHERE node = $1 AND NOT task_id = ANY($2)",
                    w = self.watchers_table,
                    until = lease_end(3)
                ),
                &[&self.leases.config.node, &gone, &self.leases.ttl_ms()],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    /// What the listening session heard.
    pub(crate) fn heard(&self, payload: &str) {
        if let Some(task) = payload.strip_prefix("e:") {
            if let Some(watcher) = lock(&self.watchers).get(task) {
                watcher.send_replace(());
            }
        } else if let Some(node) = payload.strip_prefix("r:") {
            if node == self.leases.config.node {
                self.requests_waiting.notify_one();
            }
        } else if let Some(id) = payload.strip_prefix("a:")
            && let Ok(id) = id.parse::<i64>()
            && let Some(waiter) = lock(&self.waiters).get(&id)
        {
            waiter.notify_one();
        }
    }

    /// Every reader looks again (the session was opened again: it may have missed some).
    pub(crate) fn wake_all(&self) {
        lock(&self.watchers).retain(|_, watcher| watcher.send(()).is_ok());
        for waiter in lock(&self.waiters).values() {
            waiter.notify_one();
        }
        self.requests_waiting.notify_one();
    }
}

impl Hearer for Nodes {
    fn session(&self) -> (tokio_postgres::Config, Option<MakeRustlsConnect>, String) {
        (self.connect.clone(), self.tls.clone(), self.channel.clone())
    }

    fn wake_all(&self) {
        Nodes::wake_all(self);
    }

    fn heard(&self, payload: &str) {
        Nodes::heard(self, payload);
    }
}

#[async_trait]
impl Cluster for Nodes {
    async fn holder(&self, id: &TaskId) -> Result<Holder, StoreError> {
        // Asked of the database, not of the leases this node remembers: a lease taken
        // over while its task rested here (waiting for input) is not written here again,
        // so this node cannot know it lost it.
        let client = self.pool.get().await.map_err(pool_error)?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT lease_node, terminal, lease_epoch FROM {} WHERE id = $1",
                    self.tasks
                ),
                &[&id.as_str()],
            )
            .await
            .map_err(db)?;
        Ok(match row {
            None => Holder::Here,
            Some(row) if row.get::<_, bool>(1) => Holder::Here,
            Some(row) => match row.get::<_, Option<String>>(0) {
                Some(node) if node == self.leases.config.node => {
                    // One process per node id: the epoch stored is this process's.
                    self.leases.hold(id.as_str(), row.get(2));
                    Holder::Here
                }
                Some(_) => {
                    self.leases.release(id.as_str());
                    Holder::Elsewhere
                }
                None => Holder::Elsewhere,
            },
        })
    }

    async fn forward(
        &self,
        id: &TaskId,
        request: Value,
        timeout: Duration,
    ) -> Result<Value, StoreError> {
        self.hand_over(id, request, timeout).await
    }

    async fn claim_run_slot(&self, skill: &str, limit: usize) -> Result<Option<u32>, StoreError> {
        self.claim_slot(skill, limit).await
    }

    async fn release_run_slot(&self, skill: &str, slot: u32) -> Result<(), StoreError> {
        self.release_slot(skill, slot).await
    }

    fn run_slot_wanted_elsewhere(&self, skill: &str) -> bool {
        self.leases.slot_wanted_elsewhere(skill)
    }

    fn incoming(&self) -> Option<mpsc::Receiver<Incoming>> {
        let taken = lock(&self.incoming).take();
        if taken.is_some()
            && let Some(me) = self.me.upgrade()
        {
            // Requests are taken only once someone serves them.
            Nodes::take_in_background(&me, self.leases.config.ttl / 3);
        }
        taken
    }

    fn standing(&self) -> watch::Receiver<fundi_runtime::store::Standing> {
        self.leases.standing()
    }

    async fn check_held(&self, id: &TaskId) -> Result<(), StoreError> {
        self.check_lease(id).await
    }

    async fn watch(&self, id: &TaskId) -> Result<watch::Receiver<()>, StoreError> {
        if let Some(watcher) = lock(&self.watchers).get(id.as_str()) {
            return Ok(watcher.subscribe());
        }
        // Registered before the caller reads the events: every commit after this one
        // notifies (one already under way may not; the caller looks again in a while).
        let client = self.pool.get().await.map_err(pool_error)?;
        client
            .execute(
                &format!(
                    "INSERT INTO {} (task_id, node, expires) VALUES ($1, $2, {until}) \
                     ON CONFLICT (task_id, node) DO UPDATE SET expires = EXCLUDED.expires",
                    self.watchers_table,
                    until = lease_end(3)
                ),
                &[
                    &id.as_str(),
                    &self.leases.config.node,
                    &self.leases.ttl_ms(),
                ],
            )
            .await
            .map_err(db)?;
        Ok(lock(&self.watchers)
            .entry(id.as_str().to_owned())
            .or_insert_with(|| watch::channel(()).0)
            .subscribe())
    }
}
