//! A commit's values, as its statement takes them (see `statements` for the order):
//! the task's row, its events and first message, the lease it names and the run slot
//! it takes or gives back. Owned, so that a commit can wait in the queue of commits
//! sent together (see `batch`).

use fundi_runtime::TaskEvent;
use fundi_runtime::store::{StoreError, TaskRecord, first_message};
use serde_json::Value;
use tokio_postgres::types::ToSql;

use crate::columns::{millis, owner_key};
use crate::lease::Leases;
use crate::snapshot::Written;
use crate::statements::{HotStatements, SlotChange};

type Param<'a> = &'a (dyn ToSql + Sync);

/// What PostgreSQL answered to one commit: whether it was written, the version and lease
/// holder it found in the statement's snapshot, and the run slot it took, if it takes
/// one (`None`: none was free, and nothing was written).
pub(crate) struct Answer {
    pub(super) written: bool,
    pub(super) found: Option<i64>,
    pub(super) holder: Option<String>,
    pub(super) slot: Option<i32>,
    /// For a new task: the task its first message had, and when it was created.
    pub(super) had: crate::first_messages::Found,
}

pub(crate) struct CommitValues {
    pub(super) id: String,
    pub(super) version: i64,
    /// The record, when the commit writes it whole (see `snapshot`).
    pub(super) body: Option<Value>,
    /// With no record: the seq its tail starts after, and the checkpoint.
    pub(super) tail_after: Option<i64>,
    pub(super) checkpoint: Option<Value>,
    pub(super) context_id: String,
    pub(super) state: &'static str,
    pub(super) terminal: bool,
    pub(super) owner: Option<String>,
    pub(super) updated: i64,
    pub(super) expected: i64,
    pub(super) seqs: Vec<i64>,
    pub(super) bodies: Vec<Value>,
    pub(super) first_owner: Option<String>,
    pub(super) message_id: Option<String>,
    pub(super) created: Option<i64>,
    /// A new task's claim on its first message gives way to a task it created at or
    /// after this (ms; `None`: to none, see `statements::claim`).
    pub(super) cutoff: Option<i64>,
    /// With leases: the node, and the lease time of a run slot a new task takes or a
    /// change's epoch.
    pub(super) node: Option<String>,
    pub(super) ttl: Option<i64>,
    pub(super) epoch: Option<i64>,
    /// The task's skill, and the limit of the slots it takes or the slot it gives back.
    pub(super) skill: String,
    pub(super) limit: Option<i32>,
    pub(super) given_back: Option<i32>,
}

impl CommitValues {
    pub(super) fn of(
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
        slot: SlotChange,
        window: Option<std::time::Duration>,
        leases: Option<&Leases>,
    ) -> Result<CommitValues, StoreError> {
        let id = record.id().as_str();
        let first = first_message(record, events);
        let slot_number = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        let (limit, given_back) = match slot {
            SlotChange::Take { limit } => (Some(slot_number(limit)), None),
            SlotChange::GiveBack { slot } => (None, Some(slot_number(slot as usize))),
            SlotChange::None => (None, None),
        };
        let (body, tail_after, checkpoint) = match Written::of(record, expected_version, events) {
            Written::Whole => (Some(serde_json::to_value(record)?), None, None),
            Written::Tail { after } => (None, Some(after as i64), record.checkpoint.clone()),
        };
        Ok(CommitValues {
            id: id.to_owned(),
            version: record.version as i64,
            body,
            tail_after,
            checkpoint,
            context_id: record.task.context_id.as_str().to_owned(),
            state: record.state().wire_name(),
            terminal: record.state().is_terminal(),
            owner: record.owner.as_deref().map(str::to_owned),
            updated: millis(record.task.status.timestamp),
            expected: expected_version as i64,
            seqs: events.iter().map(|e| e.seq as i64).collect(),
            bodies: events
                .iter()
                .map(serde_json::to_value)
                .collect::<Result<Vec<_>, _>>()?,
            first_owner: first.map(|(owner, _, _)| owner_key(owner)),
            message_id: first.map(|(_, message_id, _)| message_id.to_owned()),
            created: first.map(|(_, _, at)| millis(at)),
            cutoff: first.zip(window).map(|((_, _, at), window)| {
                millis(at).saturating_sub(i64::try_from(window.as_millis()).unwrap_or(i64::MAX))
            }),
            node: leases.map(|l| l.config.node.clone()),
            ttl: leases.map(|l| l.ttl_ms()),
            epoch: match expected_version {
                0 => None,
                _ => leases.map(|l| l.epoch(id)),
            },
            skill: record.skill.as_str().to_owned(),
            limit,
            given_back,
        })
    }

    /// Whether the commit creates its task.
    pub(super) fn creates(&self) -> bool {
        self.expected == 0
    }

    /// The statement this commit runs.
    pub(super) fn statement<'h>(&self, hot: &'h HotStatements) -> &'h str {
        match (self.creates(), self.limit, self.given_back) {
            (true, Some(_), _) => &hot.create_taking_slot,
            (true, None, _) => &hot.create,
            (false, _, Some(_)) => &hot.update_giving_back,
            (false, _, None) => &hot.update,
        }
    }

    /// The statement's parameters, in its order.
    pub(super) fn params(&self, leased: bool) -> Vec<Param<'_>> {
        let mut params: Vec<Param<'_>> = match self.creates() {
            true => vec![
                &self.id,
                &self.version,
                &self.body,
                &self.context_id,
                &self.state,
                &self.terminal,
                &self.owner,
                &self.updated,
            ],
            false => vec![
                &self.id,
                &self.version,
                &self.body,
                &self.state,
                &self.terminal,
                &self.updated,
                &self.expected,
                &self.tail_after,
                &self.checkpoint,
            ],
        };
        params.extend([
            &self.seqs as Param<'_>,
            &self.bodies,
            &self.first_owner,
            &self.message_id,
            &self.created,
        ]);
        if leased {
            params.push(&self.node);
            match self.creates() {
                // The lease time of the run slot it takes; the task's own lease is its
                // node's.
                true if self.limit.is_some() => params.push(&self.ttl),
                true => {}
                false => params.push(&self.epoch),
            }
        }
        if self.limit.is_some() {
            params.extend([&self.skill as Param<'_>, &self.limit]);
        } else if self.given_back.is_some() {
            params.extend([&self.skill as Param<'_>, &self.given_back]);
        }
        if self.creates() {
            params.push(&self.cutoff);
        }
        params
    }
}
