//! A commit's values, as its statement takes them (see `statements` for the order):
//! the task's row, its events and first message, the lease it names and the run slot
//! it takes or gives back.

use fundi_runtime::TaskEvent;
use fundi_runtime::store::{StoreError, TaskRecord, first_message};
use serde_json::Value;
use tokio_postgres::types::ToSql;

use crate::columns::{millis, owner_key};
use crate::lease::Leases;
use crate::statements::{HotStatements, SlotChange};

type Param<'a> = &'a (dyn ToSql + Sync);

pub(super) struct CommitValues<'a> {
    id: &'a str,
    version: i64,
    body: Value,
    context_id: &'a str,
    state: &'static str,
    terminal: bool,
    owner: Option<&'a str>,
    updated: i64,
    expected: i64,
    seqs: Vec<i64>,
    bodies: Vec<Value>,
    first_owner: Option<String>,
    message_id: Option<&'a str>,
    created: Option<i64>,
    /// With leases: the node, and a new task's lease time or a change's epoch.
    node: Option<&'a str>,
    ttl: Option<i64>,
    epoch: Option<i64>,
    /// The task's skill, and the limit of the slots it takes or the slot it gives back.
    pub(super) skill: &'a str,
    pub(super) limit: Option<i32>,
    given_back: Option<i32>,
}

impl<'a> CommitValues<'a> {
    pub(super) fn of(
        record: &'a TaskRecord,
        expected_version: u64,
        events: &'a [TaskEvent],
        slot: SlotChange,
        leases: Option<&'a Leases>,
    ) -> Result<CommitValues<'a>, StoreError> {
        let id = record.id().as_str();
        let first = first_message(record, events);
        let slot_number = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        let (limit, given_back) = match slot {
            SlotChange::Take { limit } => (Some(slot_number(limit)), None),
            SlotChange::GiveBack { slot } => (None, Some(slot_number(slot as usize))),
            SlotChange::None => (None, None),
        };
        Ok(CommitValues {
            id,
            version: record.version as i64,
            body: serde_json::to_value(record)?,
            context_id: record.task.context_id.as_str(),
            state: record.state().wire_name(),
            terminal: record.state().is_terminal(),
            owner: record.owner.as_deref(),
            updated: millis(record.task.status.timestamp),
            expected: expected_version as i64,
            seqs: events.iter().map(|e| e.seq as i64).collect(),
            bodies: events
                .iter()
                .map(serde_json::to_value)
                .collect::<Result<Vec<_>, _>>()?,
            first_owner: first.map(|(owner, _, _)| owner_key(owner)),
            message_id: first.map(|(_, message_id, _)| message_id),
            created: first.map(|(_, _, at)| millis(at)),
            node: leases.map(|l| l.config.node.as_str()),
            ttl: leases.map(|l| l.ttl_ms()),
            epoch: match expected_version {
                0 => None,
                _ => leases.map(|l| l.epoch(id)),
            },
            skill: record.skill.as_str(),
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
            match self.creates() {
                true => params.extend([&self.node as Param<'_>, &self.ttl]),
                false => params.extend([&self.node as Param<'_>, &self.epoch]),
            }
        }
        if self.limit.is_some() {
            params.extend([&self.skill as Param<'_>, &self.limit]);
        } else if self.given_back.is_some() {
            params.extend([&self.skill as Param<'_>, &self.given_back]);
        }
        params
    }
}
