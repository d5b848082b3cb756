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
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::lease::Leases;
use crate::listener::{channel, listen_in_background};
use crate::store::{db, decode_column, pool_error};

/// Requests one round takes at most (the rest at the next).
const TAKE_BATCH: i64 = 256;

/// Longest a caller waits between reads of its request's answer when no signal comes.
const ANSWER_POLL: Duration = Duration::from_millis(500);

/// A request nobody answered or collected is removed after this long.
const REQUEST_KEPT: &str = "1 hour";

/// This node among the nodes sharing the schema.
pub(crate) struct Nodes {
    me: Weak<Nodes>,
    pool: Pool,
    pub(crate) channel: String,
    tasks: String,
    requests: String,
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
            requests: format!("{schema}.requests"),
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
        nodes
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

    /// Takes the requests for tasks this node holds (or that ended: any node answers
    /// for those) and hands them to the runtime, each answer written back as it comes.
    fn take_in_background(nodes: &Arc<Nodes>, every: Duration) {
        let nodes: Weak<Nodes> = Arc::downgrade(nodes);
        tokio::spawn(async move {
            loop {
                let Some(current) = nodes.upgrade() else {
                    return;
                };
                if let Err(error) = current.take().await {
                    tracing::warn!(%error, "could not take the requests other nodes sent");
                }
                let waiting = async { current.requests_waiting.notified().await };
                let _ = tokio::time::timeout(every, waiting).await;
            }
        });
    }

    async fn take(self: &Arc<Self>) -> Result<(), StoreError> {
        if self.handing.is_closed() {
            // The runtime stopped: what waits is left to the node that takes over.
            return Ok(());
        }
        let requests = &self.requests;
        let client = self.pool.get().await.map_err(pool_error)?;
        client
            .execute(
                &format!(
                    "DELETE FROM {requests} WHERE created < clock_timestamp() - interval '{REQUEST_KEPT}'"
                ),
                &[],
            )
            .await
            .map_err(db)?;
        let rows = client
            .query(
                &format!(
                    "UPDATE {requests} SET taken = true WHERE id IN (
                        SELECT r.id FROM {requests} r JOIN {tasks} t ON t.id = r.task_id
                        WHERE NOT r.taken AND (t.lease_node = $1 OR t.terminal)
                        ORDER BY r.id LIMIT {TAKE_BATCH} FOR UPDATE OF r SKIP LOCKED)
                     RETURNING id, task_id, body",
                    tasks = self.tasks
                ),
                &[&self.leases.config.node],
            )
            .await
            .map_err(db)?;
        drop(client);
        for row in &rows {
            let id: i64 = row.get(0);
            let task_id = TaskId::from(row.get::<_, String>(1));
            let request: Value = match decode_column(row, 2) {
                Ok(request) => request,
                Err(error) => {
                    tracing::warn!(request = id, %error, "a request from another node cannot be read");
                    continue;
                }
            };
            let (answer, answered) = oneshot::channel();
            let incoming = Incoming {
                task_id,
                request,
                answer,
            };
            if self.handing.send(incoming).await.is_err() {
                return Ok(());
            }
            let nodes = self.clone();
            tokio::spawn(async move {
                // Dropped unanswered (the runtime stopped): the caller's wait runs out.
                let Ok(answer) = answered.await else {
                    return;
                };
                if let Err(error) = nodes.answer(id, answer).await {
                    tracing::warn!(request = id, %error, "could not answer another node's request");
                }
            });
        }
        Ok(())
    }

    async fn answer(&self, id: i64, answer: Value) -> Result<(), StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        client
            .execute(
                &format!(
                    "WITH answered AS (UPDATE {} SET answer = $2 WHERE id = $1 RETURNING id)
                     SELECT pg_notify($3, 'a:' || id) FROM answered",
                    self.requests
                ),
                &[&id, &answer, &self.channel],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    /// The answer to request `id`, removed as it is read; `None` while there is none.
    async fn collect(&self, id: i64) -> Result<Option<Value>, StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        let row = client
            .query_opt(
                &format!(
                    "DELETE FROM {} WHERE id = $1 AND answer IS NOT NULL RETURNING answer",
                    self.requests
                ),
                &[&id],
            )
            .await
            .map_err(db)?;
        row.map(|row| decode_column(&row, 0)).transpose()
    }

    async fn withdraw(&self, id: i64) -> Result<(), StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        client
            .execute(
                &format!("DELETE FROM {} WHERE id = $1", self.requests),
                &[&id],
            )
            .await
            .map_err(db)?;
        Ok(())
    }
}

#[async_trait]
impl Cluster for Nodes {
    fn node(&self) -> &str {
        &self.leases.config.node
    }

    async fn holder(&self, id: &TaskId) -> Result<Holder, StoreError> {
        if self.leases.epoch(id.as_str()) >= 0 {
            return Ok(Holder::Here);
        }
        let client = self.pool.get().await.map_err(pool_error)?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT lease_node, terminal FROM {} WHERE id = $1",
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
                Some(node) if node == self.leases.config.node => Holder::Here,
                Some(node) => Holder::Elsewhere(node),
                None => Holder::Elsewhere("none".into()),
            },
        })
    }

    async fn forward(
        &self,
        id: &TaskId,
        request: Value,
        timeout: Duration,
    ) -> Result<Value, StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        let row = client
            .query_one(
                &format!(
                    "WITH sent AS (INSERT INTO {requests} (task_id, body) VALUES ($1, $2) RETURNING id),
                          holder AS (SELECT coalesce((SELECT lease_node FROM {tasks} WHERE id = $1), '') AS node)
                     SELECT sent.id, holder.node, pg_notify($3, 'r:' || holder.node)::text
                     FROM sent, holder",
                    requests = self.requests,
                    tasks = self.tasks
                ),
                &[&id.as_str(), &request, &self.channel],
            )
            .await
            .map_err(db)?;
        drop(client);
        let (request_id, node): (i64, String) = (row.get(0), row.get(1));
        let signal = Arc::new(Notify::new());
        lock(&self.waiters).insert(request_id, signal.clone());
        // A dead holder's task is served by the node that takes it over: the wait
        // covers the rest of its lease too.
        let waited = timeout + self.leases.config.ttl;
        let deadline = tokio::time::Instant::now() + waited;
        let answer = loop {
            match self.collect(request_id).await {
                Ok(Some(answer)) => break Ok(answer),
                Ok(None) => {}
                Err(error) => break Err(error),
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                let _ = self.withdraw(request_id).await;
                break Err(StoreError::Unanswered {
                    task_id: id.clone(),
                    holder: node,
                    waited,
                });
            }
            let wait = ANSWER_POLL.min(deadline - now);
            let _ = tokio::time::timeout(wait, signal.notified()).await;
        };
        lock(&self.waiters).remove(&request_id);
        answer
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

    fn watch(&self, id: &TaskId) -> watch::Receiver<()> {
        let mut watchers = lock(&self.watchers);
        watchers.retain(|_, watcher| watcher.receiver_count() > 0);
        watchers
            .entry(id.as_str().to_owned())
            .or_insert_with(|| watch::channel(()).0)
            .subscribe()
    }
}
