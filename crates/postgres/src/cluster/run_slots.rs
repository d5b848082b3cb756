//! Each skill's run slots, shared by the nodes: a row per slot (as many as the skill's
//! limit), held by a node with its leases (renewed with them, free again once they run
//! out), so that a skill's concurrency limit holds across the nodes. A node that finds
//! none free says so (`run_slot_wants`, for a lease time), and the others learn it at
//! their next renewal: they then keep no slot of the skill between their runs.

use fundi_runtime::store::StoreError;

use super::{Nodes, lock};
use crate::errors::{db, pool_error};
use crate::lease::lease_end;

impl Nodes {
    pub(super) async fn claim_slot(
        &self,
        skill: &str,
        limit: usize,
    ) -> Result<Option<u32>, StoreError> {
        let limit = i32::try_from(limit).unwrap_or(i32::MAX);
        let client = self.pool.get().await.map_err(pool_error)?;
        self.ensure_slot_rows(&client, skill, limit).await?;
        // Any free slot below the limit (slots of a larger limit another node was given
        // are left alone), skipping the rows another node is claiming.
        let row = client
            .query_opt(
                &format!(
                    "UPDATE {slots} SET node = $3,
                        expires = {until}
                     WHERE (skill, slot) = (
                        SELECT skill, slot FROM {slots}
                        WHERE skill = $1 AND slot < $2
                            AND (node IS NULL OR expires < clock_timestamp())
                        ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED)
                     RETURNING slot",
                    slots = self.run_slots,
                    until = lease_end(4)
                ),
                &[
                    &skill,
                    &limit,
                    &self.leases.config.node,
                    &self.leases.ttl_ms(),
                ],
            )
            .await
            .map_err(db)?;
        if row.is_none() {
            self.want_slot(&client, skill).await?;
        }
        Ok(row.map(|row| row.get::<_, i32>(0) as u32))
    }

    /// Records that this node waits for a slot of `skill`, for a lease time from now.
    async fn want_slot(
        &self,
        client: &tokio_postgres::Client,
        skill: &str,
    ) -> Result<(), StoreError> {
        client
            .execute(
                &format!(
                    "INSERT INTO {} (skill, node, until) VALUES ($1, $2, {until})
                     ON CONFLICT (skill, node) DO UPDATE SET until = excluded.until",
                    self.run_slot_wants,
                    until = lease_end(3)
                ),
                &[&skill, &self.leases.config.node, &self.leases.ttl_ms()],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    /// Makes sure the skill's slot rows below `limit` exist (once per process and
    /// limit: they are never removed).
    pub(crate) async fn ensure_slot_rows(
        &self,
        client: &tokio_postgres::Client,
        skill: &str,
        limit: i32,
    ) -> Result<(), StoreError> {
        let ready = (skill.to_owned(), limit as usize);
        if lock(&self.slots_ready).contains(&ready) {
            return Ok(());
        }
        client
            .execute(
                &format!(
                    "INSERT INTO {} (skill, slot) SELECT $1, generate_series(0, $2 - 1) \
                     ON CONFLICT DO NOTHING",
                    self.run_slots
                ),
                &[&skill, &limit],
            )
            .await
            .map_err(db)?;
        lock(&self.slots_ready).insert(ready);
        Ok(())
    }

    pub(crate) async fn release_slot(&self, skill: &str, slot: u32) -> Result<(), StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        client
            .execute(
                &format!(
                    "UPDATE {} SET node = NULL, expires = NULL \
                     WHERE skill = $1 AND slot = $2 AND node = $3",
                    self.run_slots
                ),
                &[&skill, &(slot as i32), &self.leases.config.node],
            )
            .await
            .map_err(db)?;
        Ok(())
    }
}
