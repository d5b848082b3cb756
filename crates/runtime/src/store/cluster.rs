//! What a store that several nodes share offers the runtime beside storage, so that any
//! node answers for any task: which node runs a task, a way to hand a request to that
//! node and wait for its answer, and a signal when another node stores a task's events.
//!
//! The store is the only channel between nodes (PostgreSQL's tables and LISTEN/NOTIFY):
//! fundi has no protocol of its own between them, and a node needs no address of another.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use super::StoreError;
use crate::model::TaskId;

/// Which node runs a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// This node: it holds the task's lease, or the task has ended (no node runs an
    /// ended task, and any node answers for it).
    Here,
    /// Another node holds the lease (or nobody does yet: a dead node's task waiting to
    /// be taken over).
    Elsewhere,
}

/// A request another node handed to this one, for a task this node runs.
#[derive(Debug)]
pub struct Incoming {
    /// The task.
    pub task_id: TaskId,
    /// What the other node's caller asked (the runtime's own encoding).
    pub request: Value,
    /// Where the answer goes (dropped unanswered: the caller hears nothing and times out).
    pub answer: oneshot::Sender<Value>,
}

/// Nodes sharing a store (see the module's documentation).
#[async_trait]
pub trait Cluster: Send + Sync + 'static {
    /// Which node runs the task (an unknown task is `Here`: the caller finds it missing).
    async fn holder(&self, id: &TaskId) -> Result<Holder, StoreError>;

    /// Hands `request` to the node holding `id` (the one holding it when it looks:
    /// after a takeover, the new holder) and waits up to `timeout` for its answer.
    async fn forward(
        &self,
        id: &TaskId,
        request: Value,
        timeout: Duration,
    ) -> Result<Value, StoreError>;

    /// The requests other nodes hand to this one; the runtime takes them once, as it
    /// starts (later calls: `None`).
    fn incoming(&self) -> Option<mpsc::Receiver<Incoming>>;

    /// Takes one of the `limit` run slots of `skill` shared by the nodes (per-skill
    /// concurrency limits hold across them); `None` when all are taken. A slot is held
    /// with this node's leases: a dead node's slots are free again once they run out.
    async fn claim_run_slot(&self, skill: &str, limit: usize) -> Result<Option<u32>, StoreError>;

    /// Gives back a run slot this node took.
    async fn release_run_slot(&self, skill: &str, slot: u32) -> Result<(), StoreError>;

    /// A signal that changes whenever any node stores new events of the task (it may
    /// also change without new events, and a change may come late: the reader checks
    /// the store, and looks again now and then).
    async fn watch(&self, id: &TaskId) -> Result<watch::Receiver<()>, StoreError>;
}
