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

/// Whether this node holds the database: whether its leases are renewed in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// The leases were renewed within the renew deadline.
    Holding,
    /// The leases were not renewed within the renew deadline: another node may take
    /// this one's tasks once they run out, so every run here must stop within
    /// `stop_within` (told to stop, then aborted), and nothing is written or acted on
    /// until the standing is `Holding` again.
    CutOff {
        /// How long runs have to stop: the time left before the leases can run out,
        /// less a margin.
        stop_within: Duration,
    },
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

    /// Whether another node waits for a run slot of `skill` (found no slot free lately),
    /// as this node last learned: it then keeps no slot of the skill between its runs
    /// (`runtime.hold-run-slots-ms`), so that the other finds one free as often as
    /// before. By default, `false`.
    fn run_slot_wanted_elsewhere(&self, _skill: &str) -> bool {
        false
    }

    /// A signal that changes whenever any node stores new events of the task (it may
    /// also change without new events, and a change may come late: the reader checks
    /// the store, and looks again now and then).
    async fn watch(&self, id: &TaskId) -> Result<watch::Receiver<()>, StoreError>;

    /// This node's standing, as it changes (see [`Standing`]).
    fn standing(&self) -> watch::Receiver<Standing>;

    /// Whether this node still holds the task's lease, asked of the database now: for a
    /// side effect that must happen at most once (a push, a listener), right before it.
    /// `StoreError::CutOff` when the node is cut off, `StoreError::Fenced` when another
    /// node holds the task (or its lease ran out).
    async fn check_held(&self, id: &TaskId) -> Result<(), StoreError>;
}
