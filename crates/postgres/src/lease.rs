//! Leases, for several nodes on one schema. Each node holds one lease, a row in
//! `node_leases` with its expiry, renewed every third of its time (`renewal`). Each
//! unfinished task (and push delivery) names the node holding it and, for a task, an
//! epoch: the task is held while that node's lease is live, and its commits are fenced
//! by the epoch, so a node that lost a task cannot write it. The tasks of a node whose
//! lease ran out (it died, or lost the database) are claimed by other nodes, `FOR
//! UPDATE SKIP LOCKED`, with the epoch one higher, and recovered there as after a
//! restart; a claim locks the expired lease's row (`FOR SHARE`) so that the node cannot
//! renew it in the middle. The database's clock is the only clock: nodes' own clocks
//! never decide who holds what.
//!
//! Self-fencing: a node that has not renewed its lease within the renew deadline (a
//! share of the lease time, as Kubernetes' leader election has) is cut off
//! ([`Standing::CutOff`]): it writes nothing more and stops its runs before the lease
//! can run out and another node take its tasks. Time here is the node's monotonic clock,
//! counted from when a renewal that succeeded was *sent* (the database set the new
//! expiry later than that), so the node always gives up before the database's clock
//! lets the lease go. When a renewal succeeds again it is `Holding` again, and the
//! runtime re-claims what is still its own (`TaskStore::reclaim`).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fundi_runtime::store::{Standing, StoreError};
use tokio::sync::watch;

use crate::metrics::metrics;

mod renewal;

pub(crate) use renewal::take_node_lease;

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
    /// How long the node goes on without a renewal before it cuts itself off (stops
    /// its runs, writes nothing): shorter than `ttl`, so that its runs have stopped
    /// before another node may take them. Default: two thirds of `ttl`.
    pub renew_deadline: Duration,
}

impl LeaseConfig {
    /// Leases of node `node`, each lasting `ttl` unless renewed, with a renew deadline of
    /// two thirds of `ttl`.
    pub fn new(node: impl Into<String>, ttl: Duration) -> LeaseConfig {
        LeaseConfig {
            node: node.into(),
            ttl,
            renew_deadline: ttl * 2 / 3,
        }
    }

    /// With this renew deadline (see the field).
    pub fn with_renew_deadline(mut self, deadline: Duration) -> LeaseConfig {
        self.renew_deadline = deadline;
        self
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
    /// When the node's lease runs out, by the database's clock.
    pub expires: Option<chrono::DateTime<chrono::Utc>>,
    /// Whether the node's lease has run out (it stopped renewing it).
    pub expired: bool,
}

/// This node's lease, and the epochs of the tasks it holds.
pub(crate) struct Leases {
    pub(crate) config: LeaseConfig,
    held: Mutex<HashMap<String, i64>>,
    /// Skills whose run slots another node waits for, as of the last renewal.
    wanted: Mutex<HashSet<String>>,
    /// Renewal stopped: the node handed its work back (or, in tests, stands in for a
    /// node that lost the database).
    paused: AtomicBool,
    /// What `renewed_ms` counts from.
    born: Instant,
    /// When the last renewal that succeeded was sent, in ms after `born`.
    renewed_ms: AtomicU64,
    /// When a write failed for the connection's sake, in ms after `born` (`u64::MAX`:
    /// none since the last renewal): the node is cut off until a renewal sent after it
    /// succeeds.
    lost_at_ms: AtomicU64,
    /// Wakes the renewal loop early (after `lost_track`).
    wake: Arc<tokio::sync::Notify>,
    standing: watch::Sender<Standing>,
}

/// SQL for when a lease taken now runs out, its length in milliseconds being parameter
/// `$n`: the database's clock decides, never a node's.
pub(crate) fn lease_end(n: usize) -> String {
    format!("clock_timestamp() + ${n}::bigint * interval '1 millisecond'")
}

/// SQL selecting the nodes whose lease ran out, from `node_leases` (the table's full
/// name): what they held is anyone's to claim.
pub(crate) fn lapsed_nodes(node_leases: &str) -> String {
    format!("SELECT node FROM {node_leases} WHERE expires < clock_timestamp()")
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
        if config.renew_deadline.is_zero() || config.renew_deadline >= config.ttl {
            return Err(StoreError::database(format!(
                "the renew deadline ({:?}) must be shorter than the lease ({:?}), so that \
                 a node cut off stops its runs before another node may take them",
                config.renew_deadline, config.ttl
            )));
        }
        // Opening the store reached the database just now: the node holds it.
        Ok(Arc::new(Leases {
            config,
            held: Mutex::default(),
            wanted: Mutex::default(),
            paused: AtomicBool::new(false),
            born: Instant::now(),
            renewed_ms: AtomicU64::new(0),
            lost_at_ms: AtomicU64::new(u64::MAX),
            wake: Arc::default(),
            standing: watch::Sender::new(Standing::Holding),
        }))
    }

    fn now_ms(&self) -> u64 {
        self.born.elapsed().as_millis() as u64
    }

    /// How long since the last renewal that succeeded was sent.
    fn since_renewed(&self) -> Duration {
        Duration::from_millis(
            self.now_ms()
                .saturating_sub(self.renewed_ms.load(Ordering::Acquire)),
        )
    }

    /// How long until the renew deadline passes (zero once it has).
    fn time_left(&self) -> Duration {
        self.config
            .renew_deadline
            .saturating_sub(self.since_renewed())
    }

    /// Whether the node may still act on what it holds: its leases were renewed within
    /// the deadline. Checked before every write, so that a node that wakes from a pause
    /// finds out before it writes anything.
    pub(crate) fn fresh(&self) -> bool {
        self.lost_at_ms.load(Ordering::Acquire) == u64::MAX
            && self.since_renewed() < self.config.renew_deadline
    }

    /// Refuses a write or an act when the node is cut off.
    pub(crate) fn ensure_fresh(&self) -> Result<(), StoreError> {
        match self.fresh() {
            true => Ok(()),
            false => {
                self.check_deadline();
                Err(StoreError::CutOff)
            }
        }
    }

    /// A write failed for the connection's sake: whether it was stored cannot be known,
    /// so the node cuts itself off at once and reads its tasks back once it holds the
    /// database again (`TaskStore::reclaim`).
    pub(crate) fn lost_track(&self) {
        self.lost_at_ms.fetch_min(self.now_ms(), Ordering::AcqRel);
        self.check_deadline();
        self.wake.notify_one();
    }

    pub(crate) fn standing(&self) -> watch::Receiver<Standing> {
        self.standing.subscribe()
    }

    /// Cuts the node off if the deadline has passed (once: it stays cut off until a
    /// renewal succeeds).
    fn check_deadline(&self) {
        if self.fresh() {
            return;
        }
        // Runs stop before the leases can run out, less a tenth of the lease for clocks
        // and scheduling.
        let stop_within = (self.config.ttl.saturating_sub(self.since_renewed()))
            .saturating_sub(self.config.ttl / 10);
        let cut = self.standing.send_if_modified(|standing| {
            let was_holding = *standing == Standing::Holding;
            *standing = Standing::CutOff { stop_within };
            was_holding
        });
        if cut {
            metrics().self_fenced();
            tracing::error!(
                node = %self.config.node,
                since_renewed = ?self.since_renewed(),
                deadline = ?self.config.renew_deadline,
                "this node could not renew its leases in time: it stops its runs and takes no work until it holds the database again"
            );
        }
    }

    /// A renewal sent at `sent_ms` succeeded.
    fn renewed(&self, sent_ms: u64) {
        self.renewed_ms.fetch_max(sent_ms, Ordering::AcqRel);
        let _ = self
            .lost_at_ms
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |lost| {
                (lost <= sent_ms).then_some(u64::MAX)
            });
        if !self.fresh() {
            return;
        }
        let back = self.standing.send_if_modified(|standing| {
            let was_cut_off = *standing != Standing::Holding;
            *standing = Standing::Holding;
            was_cut_off
        });
        if back {
            metrics().regained();
            tracing::warn!(node = %self.config.node, "this node holds the database again: it re-claims the tasks still leased to it");
        }
    }

    /// Clears the record of held epochs: after a cut-off, what is held is claimed anew.
    pub(crate) fn forget_held(&self) {
        self.lock().clear();
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

    /// Whether the node still renews its leases (it has not handed its work back).
    pub(crate) fn renewing(&self) -> bool {
        !self.paused.load(Ordering::Acquire)
    }

    /// Renews again (in tests: a node that reaches the database again).
    #[cfg(feature = "test-util")]
    pub(crate) fn resume_renewing(&self) {
        self.paused.store(false, Ordering::Release);
        self.wake.notify_one();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, i64>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether another node waited for a run slot of `skill` lately, as of the last
    /// renewal (see `Cluster::run_slot_wanted_elsewhere`).
    pub(crate) fn slot_wanted_elsewhere(&self, skill: &str) -> bool {
        let wanted = self.wanted.lock().unwrap_or_else(|p| p.into_inner());
        wanted.contains(skill)
    }

    fn wanted_now(&self, skills: HashSet<String>) {
        *self.wanted.lock().unwrap_or_else(|p| p.into_inner()) = skills;
    }
}
