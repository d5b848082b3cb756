//! Schedules and grants on PostgreSQL: a document per row by id (a grant found by its
//! token's digest too).

use async_trait::async_trait;
use fundi_ops::grants::{Grant, GrantStore};
use fundi_ops::schedules::{Schedule, ScheduleStore};
use fundi_runtime::store::StoreError;

use crate::columns::decode_column;
use crate::errors::db;
use crate::lease::lease_end;
use crate::store::PostgresStore;

#[async_trait]
impl ScheduleStore for PostgresStore {
    async fn put(&self, schedule: &Schedule) -> Result<(), StoreError> {
        let client = self.db.client().await?;
        client
            .execute(
                &format!(
                    "INSERT INTO {} (id, schedule) VALUES ($1, $2) \
                     ON CONFLICT (id) DO UPDATE SET schedule = EXCLUDED.schedule, \
                     claimed_by = NULL, claimed_until = NULL",
                    self.db.table("schedules")
                ),
                &[&schedule.id, &serde_json::to_value(schedule)?],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn get(&self, id: &str) -> Result<Option<Schedule>, StoreError> {
        let client = self.db.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT schedule FROM {} WHERE id = $1",
                    self.db.table("schedules")
                ),
                &[&id],
            )
            .await
            .map_err(db)?;
        row.map(|row| decode_column(&row, 0)).transpose()
    }

    async fn list(&self) -> Result<Vec<Schedule>, StoreError> {
        let client = self.db.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT schedule FROM {} ORDER BY id",
                    self.db.table("schedules")
                ),
                &[],
            )
            .await
            .map_err(db)?;
        rows.into_iter().map(|row| decode_column(&row, 0)).collect()
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let client = self.db.client().await?;
        let deleted = client
            .execute(
                &format!("DELETE FROM {} WHERE id = $1", self.db.table("schedules")),
                &[&id],
            )
            .await
            .map_err(db)?;
        Ok(deleted > 0)
    }

    async fn claim_firing(&self, schedule: &Schedule) -> Result<bool, StoreError> {
        let Some(leases) = &self.leases else {
            return Ok(true);
        };
        let client = self.db.client().await?;
        // Only while the stored schedule is still due at the same time: a node that read
        // it before another recorded the firing finds it moved on.
        let claimed = client
            .execute(
                &format!(
                    "UPDATE {} SET claimed_by = $3,
                        claimed_until = {until}
                     WHERE id = $1
                        AND floor(extract(epoch FROM (schedule ->> 'nextFire')::timestamptz))::bigint = $2
                        AND (claimed_until IS NULL OR claimed_until < clock_timestamp() OR claimed_by = $3)",
                    self.db.table("schedules"),
                    until = lease_end(4)
                ),
                &[
                    &schedule.id,
                    &schedule.next_fire.timestamp(),
                    &leases.config.node,
                    &leases.ttl_ms(),
                ],
            )
            .await
            .map_err(db)?;
        Ok(claimed > 0)
    }
}

#[async_trait]
impl GrantStore for PostgresStore {
    async fn put(&self, grant: &Grant) -> Result<(), StoreError> {
        let client = self.db.client().await?;
        client
            .execute(
                &format!(
                    "INSERT INTO {} (id, digest, grant_record) VALUES ($1, $2, $3) ON CONFLICT (id) \
                     DO UPDATE SET digest = EXCLUDED.digest, grant_record = EXCLUDED.grant_record",
                    self.db.table("grants")
                ),
                &[&grant.id, &grant.token_digest, &serde_json::to_value(grant)?],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn get(&self, id: &str) -> Result<Option<Grant>, StoreError> {
        let client = self.db.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT grant_record FROM {} WHERE id = $1",
                    self.db.table("grants")
                ),
                &[&id],
            )
            .await
            .map_err(db)?;
        row.map(|row| decode_column(&row, 0)).transpose()
    }

    async fn by_digest(&self, digest: &str) -> Result<Option<Grant>, StoreError> {
        let client = self.db.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT grant_record FROM {} WHERE digest = $1",
                    self.db.table("grants")
                ),
                &[&digest],
            )
            .await
            .map_err(db)?;
        row.map(|row| decode_column(&row, 0)).transpose()
    }

    async fn list(&self) -> Result<Vec<Grant>, StoreError> {
        let client = self.db.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT grant_record FROM {} ORDER BY id",
                    self.db.table("grants")
                ),
                &[],
            )
            .await
            .map_err(db)?;
        rows.into_iter().map(|row| decode_column(&row, 0)).collect()
    }
}
