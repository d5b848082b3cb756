//! A task's commit: one statement (see `statements`), then what its answer means: a
//! conflict (another writer changed the task first), a fence (another node holds the
//! task's lease), or the lease this node now holds or let go.

use fundi_runtime::TaskEvent;
use fundi_runtime::store::{StoreError, TaskRecord, first_message};
use tokio_postgres::types::ToSql;

use crate::columns::{millis, owner_key};
use crate::errors::{db, rolled_back};
use crate::statements::SlotChange;
use crate::store::PostgresStore;

impl PostgresStore {
    /// A commit; with leases, refused when the node is cut off, given up when it is cut
    /// off while the commit is under way, and, when it fails for the connection's sake
    /// (stored or not, nobody can say), cutting the node off until it has read its tasks
    /// back (see `Leases::lost_track`).
    /// Returns the slot a `SlotChange::Take` took (`None`: none was free, and nothing
    /// was written).
    pub(crate) async fn write_record(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
        slot: SlotChange,
    ) -> Result<Option<u32>, StoreError> {
        let Some(leases) = &self.leases else {
            return self
                .write_statement(record, expected_version, events, slot)
                .await;
        };
        leases.ensure_fresh()?;
        let mut standing = leases.standing();
        let written = tokio::select! {
            written = self.write_statement(record, expected_version, events, slot) => written,
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
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
        slot: SlotChange,
    ) -> Result<Option<u32>, StoreError> {
        let id = record.id().as_str();
        let body = serde_json::to_value(record)?;
        let version = record.version as i64;
        let state = record.state().wire_name();
        let terminal = record.state().is_terminal();
        let updated = millis(record.task.status.timestamp);
        let seqs: Vec<i64> = events.iter().map(|e| e.seq as i64).collect();
        let bodies = events
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<Vec<_>, _>>()?;
        let first = first_message(record, events);
        let owner = first.map(|(owner, _, _)| owner_key(owner));
        let message_id = first.map(|(_, message_id, _)| message_id);
        let created = first.map(|(_, _, at)| millis(at));
        let expected = expected_version as i64;
        let client = self.client().await?;
        let node = self.leases.as_ref().map(|l| l.config.node.as_str());
        let skill = record.skill.as_str();
        let (limit, given_back) = match slot {
            SlotChange::Take { limit } => (Some(i32::try_from(limit).unwrap_or(i32::MAX)), None),
            SlotChange::GiveBack { slot } => (None, Some(i32::try_from(slot).unwrap_or(i32::MAX))),
            SlotChange::None => (None, None),
        };
        if let (Some(nodes), Some(limit)) = (&self.nodes, limit) {
            nodes.ensure_slot_rows(&client, skill, limit).await?;
        }
        let context_id = record.task.context_id.as_str();
        let ttl = self.leases.as_ref().map(|l| l.ttl_ms());
        let record_owner = record.owner.as_deref();
        let epoch;
        let (statement, mut params): (_, Vec<&(dyn ToSql + Sync)>) = if expected_version == 0 {
            let statement = match limit {
                Some(_) => &self.hot.create_taking_slot,
                None => &self.hot.create,
            };
            let mut params: Vec<&(dyn ToSql + Sync)> = vec![
                &id,
                &version,
                &body,
                &context_id,
                &state,
                &terminal,
                &record_owner,
                &updated,
            ];
            params.extend([
                &seqs as &(dyn ToSql + Sync),
                &bodies,
                &owner,
                &message_id,
                &created,
            ]);
            if self.leases.is_some() {
                params.extend([&node as &(dyn ToSql + Sync), &ttl]);
            }
            (statement, params)
        } else {
            let statement = match given_back {
                Some(_) => &self.hot.update_giving_back,
                None => &self.hot.update,
            };
            epoch = self.leases.as_ref().map(|l| l.epoch(id));
            let mut params: Vec<&(dyn ToSql + Sync)> =
                vec![&id, &version, &body, &state, &terminal, &updated, &expected];
            params.extend([
                &seqs as &(dyn ToSql + Sync),
                &bodies,
                &owner,
                &message_id,
                &created,
            ]);
            if self.leases.is_some() {
                params.extend([&node as &(dyn ToSql + Sync), &epoch]);
            }
            (statement, params)
        };
        match (limit.is_some(), given_back.is_some()) {
            (true, _) => params.extend([&skill as &(dyn ToSql + Sync), &limit]),
            (_, true) => params.extend([&skill as &(dyn ToSql + Sync), &given_back]),
            _ => {}
        }
        let prepared = client.prepare_cached(statement).await.map_err(db)?;
        // A commit PostgreSQL rolled back whole (a deadlock it broke, a serialization
        // failure) was not stored: it is sent again, a few times.
        let mut attempts = 1;
        let row = loop {
            match client.query_one(&prepared, &params).await {
                Err(error) if rolled_back(&error) && attempts < 3 => attempts += 1,
                other => break other.map_err(db)?,
            }
        };
        let written: i64 = row.get(0);
        let taken = match limit {
            Some(_) => row.get::<_, Option<i32>>(row.len() - 1),
            None => None,
        };
        if limit.is_some() && taken.is_none() {
            return Ok(None);
        }
        if written == 0 {
            let found: Option<i64> = row.get(1);
            let found = found.map_or(0, |v| v as u64);
            // Another node holds the task (whatever the version), or this node's former
            // self's epoch was named: either way this node may no longer write it.
            let holder: Option<String> = row.get(2);
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
            match (terminal, expected_version) {
                (true, _) => leases.release(id),
                (false, 0) => leases.hold(id, 1),
                (false, _) => {}
            }
        }
        Ok(taken.map(|slot| slot as u32))
    }
}
