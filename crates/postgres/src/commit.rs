//! A task's commit: one statement (see `statements`), alone or with other tasks'
//! commits (see `batch`), then what its answer means: a conflict (another writer changed
//! the task first), a fence (another node holds the task's lease), or the lease this
//! node now holds or let go.

use std::sync::Arc;

use deadpool_postgres::Pool;
use fundi_runtime::TaskEvent;
use fundi_runtime::store::{StoreError, TaskRecord};

use crate::cluster::Nodes;
use crate::errors::{db, pool_error, rolled_back};
use crate::first_messages::{Found, found};
use crate::gather::Gather;
use crate::lease::Leases;
use crate::statements::{HotStatements, SlotChange};

mod batch;
mod values;
use values::{Answer, CommitValues};

/// The commits of one store: what they are sent with, and those waiting to be sent
/// together (see `batch`).
pub(crate) struct Commits {
    pool: Pool,
    hot: Arc<HotStatements>,
    leases: Option<Arc<Leases>>,
    nodes: Option<Arc<Nodes>>,
    waiting: Gather<CommitValues, Result<Answer, StoreError>>,
}

/// Column `index` of an answer's `row`, or why it cannot be read.
fn column<'r, T: tokio_postgres::types::FromSql<'r>>(
    row: &'r tokio_postgres::Row,
    index: usize,
) -> Result<T, StoreError> {
    crate::columns::read_column(row, index, "a commit's answer")
}

/// What a commit did.
pub(crate) enum Outcome {
    /// Written, with the run slot it took when it takes one.
    Written(Option<u32>),
    /// Not written: it takes a run slot and none was free.
    NoSlot,
    /// Not written: a new task whose first message created a task within the window;
    /// that task, and when it was created, as the statement's snapshot held them
    /// (`None`: another transaction indexed it while the statement ran).
    Taken(Found),
}

/// How many times a commit PostgreSQL rolled back whole is sent, in all.
const COMMIT_SENDS: u32 = 3;
/// The wait before the second send (twice that before the third).
const RESEND_AFTER: std::time::Duration = std::time::Duration::from_millis(20);

impl Commits {
    pub(crate) fn new(
        pool: Pool,
        hot: Arc<HotStatements>,
        leases: Option<Arc<Leases>>,
        nodes: Option<Arc<Nodes>>,
        statements_at_once: usize,
    ) -> Commits {
        Commits {
            pool,
            hot,
            leases,
            nodes,
            waiting: Gather::new(statements_at_once),
        }
    }

    /// The most commits one statement has carried so far.
    #[cfg(feature = "test-util")]
    pub(crate) fn most_sent_at_once(&self) -> usize {
        self.waiting.most_sent()
    }

    /// The most statements of commits under way at once so far.
    #[cfg(feature = "test-util")]
    pub(crate) fn most_under_way(&self) -> usize {
        self.waiting.most_under_way()
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(pool_error)
    }

    /// The run slot rows of each skill one of `commits` takes a slot of, made if
    /// missing (see `Nodes::ensure_slot_rows`).
    async fn ensure_slot_rows(
        &self,
        client: &tokio_postgres::Client,
        commits: impl Iterator<Item = &CommitValues>,
    ) -> Result<(), StoreError> {
        let Some(nodes) = &self.nodes else {
            return Ok(());
        };
        for values in commits {
            if let Some(limit) = values.limit {
                nodes.ensure_slot_rows(client, &values.skill, limit).await?;
            }
        }
        Ok(())
    }

    /// A commit; with leases, refused when the node is cut off, given up when it is cut
    /// off while the commit is under way, and, when it fails for the connection's sake
    /// (stored or not, nobody can say), cutting the node off until it has read its tasks
    /// back (see `Leases::lost_track`).
    /// A new task's first message is claimed as the task is written, within `window`
    /// (see `statements::claim`).
    pub(crate) async fn write(
        self: &Arc<Self>,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
        slot: SlotChange,
        window: Option<std::time::Duration>,
    ) -> Result<Outcome, StoreError> {
        let statement = self.write_statement(record, expected_version, events, slot, window);
        let Some(leases) = &self.leases else {
            return statement.await;
        };
        leases.ensure_fresh()?;
        let mut standing = leases.standing();
        let written = tokio::select! {
            written = statement => written,
            _ = standing.wait_for(|s| *s != fundi_runtime::store::Standing::Holding) => {
                return Err(StoreError::CutOff);
            }
        };
        match written {
            Err(error @ StoreError::Unreachable { .. }) => {
                tracing::warn!(task_id = %record.id(), %error, "a commit failed for the connection's sake; this node reads its tasks back once it holds the database again");
                leases.lost_track();
                Err(StoreError::CutOff)
            }
            other => other,
        }
    }

    async fn write_statement(
        self: &Arc<Self>,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
        slot: SlotChange,
        window: Option<std::time::Duration>,
    ) -> Result<Outcome, StoreError> {
        let leases = self.leases.as_deref();
        let values = CommitValues::of(record, expected_version, events, slot, window, leases)?;
        let takes_slot = values.limit.is_some();
        let claims = values.cutoff.is_some();
        // Sent with whatever other tasks' commits wait beside it.
        let answer = self.send_queued(values).await?;
        self.answered(record, expected_version, takes_slot, claims, answer)
            .await
    }

    /// Sends one commit as a statement of its own.
    async fn send_alone(&self, values: &CommitValues) -> Result<Answer, StoreError> {
        let leases = self.leases.as_deref();
        let client = self.client().await?;
        self.ensure_slot_rows(&client, std::iter::once(values))
            .await?;
        let statement = values.statement(&self.hot);
        let prepared = client.prepare_cached(statement).await.map_err(db)?;
        let params = values.params(leases.is_some());
        // A commit PostgreSQL rolled back whole (a deadlock it broke, a serialization
        // failure) was not stored: it is sent again, a few times, each after a short
        // wait. Sent at once, it can take the first of its rows again before the
        // transaction that won the deadlock does, and deadlock with it once more.
        let mut attempts = 1;
        let row = loop {
            match client.query_one(&prepared, &params).await {
                Err(error) if rolled_back(&error) && attempts < COMMIT_SENDS => {
                    tokio::time::sleep(RESEND_AFTER * attempts).await;
                    attempts += 1;
                }
                other => break other.map_err(db)?,
            }
        };
        let written: i64 = column(&row, 0)?;
        Ok(Answer {
            written: written > 0,
            found: column(&row, 1)?,
            holder: column(&row, 2)?,
            slot: match values.limit {
                Some(_) => column(&row, row.len() - 1)?,
                None => None,
            },
            had: match values.creates() {
                true => found(&row, 3)?,
                false => None,
            },
        })
    }

    /// What a commit's answer says: written (with the slot it took, when it takes one),
    /// not written for want of a free slot, or because its first message created a
    /// task (`claims`: a new task that claims its first message), refused because
    /// another node holds the task (`Fenced`), or because another writer changed it
    /// first (`Conflict`).
    async fn answered(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        takes_slot: bool,
        claims: bool,
        answer: Answer,
    ) -> Result<Outcome, StoreError> {
        let id = record.id().as_str();
        let taken = answer.slot;
        if takes_slot && taken.is_none() {
            return Ok(Outcome::NoSlot);
        }
        if !answer.written && claims {
            // The slot it took (the claim comes after it) goes back.
            if let (Some(nodes), Some(slot)) = (&self.nodes, taken) {
                nodes.release_slot(&record.skill, slot as u32).await?;
            }
            return Ok(Outcome::Taken(answer.had));
        }
        if !answer.written {
            let found = answer.found.map_or(0, |v| v as u64);
            // Another node holds the task (whatever the version), or this node's former
            // self's epoch was named: either way this node may no longer write it.
            let holder = answer.holder;
            if let Some(leases) = &self.leases
                && expected_version != 0
                && (holder.as_deref() != Some(leases.config.node.as_str())
                    || found == expected_version)
            {
                leases.release(id);
                return Err(StoreError::Fenced {
                    task_id: record.id().clone(),
                    holder: holder.unwrap_or_else(|| "none".into()),
                });
            }
            if let (Some(nodes), Some(slot)) = (&self.nodes, taken) {
                // A new task's id taken already (never, for ids the runtime makes).
                nodes.release_slot(&record.skill, slot as u32).await?;
            }
            return Err(StoreError::Conflict {
                task_id: record.id().clone(),
                expected: expected_version,
                found,
            });
        }
        if let Some(leases) = &self.leases {
            match (record.state().is_terminal(), expected_version) {
                (true, _) => leases.release(id),
                (false, 0) => leases.hold(id, 1),
                (false, _) => {}
            }
        }
        Ok(Outcome::Written(taken.map(|slot| slot as u32)))
    }
}
