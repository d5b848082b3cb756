//! Requests handed between nodes: stored in the `requests` table for the node holding
//! the task, taken by it (`FOR UPDATE SKIP LOCKED`, so never by two), answered beside
//! the request, and collected (and removed) by the caller. NOTIFY wakes each side; the
//! table is what counts.

use std::sync::{Arc, Weak};
use std::time::Duration;

use fundi_runtime::TaskId;
use fundi_runtime::store::{Incoming, StoreError};
use serde_json::Value;
use tokio::sync::{Notify, oneshot};

use super::{Nodes, lock};
use crate::columns::decode_column;
use crate::errors::{db, pool_error};

/// Requests one round takes at most (the rest at the next).
const TAKE_BATCH: i64 = 256;

/// Longest a caller waits between reads of its request's answer when no signal comes.
const ANSWER_POLL: Duration = Duration::from_millis(500);

/// A request nobody answered or collected is removed after this long.
const REQUEST_KEPT: &str = "1 hour";

impl Nodes {
    /// Takes the requests for tasks this node holds (or that ended: any node answers
    /// for those) and hands them to the runtime, each answer written back as it comes.
    pub(super) fn take_in_background(nodes: &Arc<Nodes>, every: Duration) {
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
        // The runtime stopped, or the node handed its work back (its handle may outlive
        // it for a moment, held by a slot being given back): what waits is left to the
        // node that takes over, which answers it.
        if self.handing.is_closed() || !self.leases.renewing() {
            return Ok(());
        }
        let requests = &self.requests;
        let client = self.pool.get().await.map_err(pool_error)?;
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

    /// Removes the requests nobody answered or collected (their callers gave up).
    pub(super) async fn forget_stale_requests(&self) -> Result<(), StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        client
            .execute(
                &format!(
                    "DELETE FROM {} WHERE created < clock_timestamp() - interval '{REQUEST_KEPT}'",
                    self.requests
                ),
                &[],
            )
            .await
            .map_err(db)?;
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

    /// `Cluster::forward`: the request stored for the holder, which is woken, then its
    /// answer collected (woken by its signal, or looked for every `ANSWER_POLL`).
    pub(super) async fn hand_over(
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
                tracing::warn!(task_id = %id, holder = %node, ?waited, "a request handed to the node running a task got no answer in time");
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
}
