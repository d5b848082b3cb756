//! The fencing check a skill makes right before a side effect that must happen at most
//! once: this node still holds the task's lease, by the database's clock, at the epoch
//! it claimed, and is not cut off.

use fundi_runtime::TaskId;
use fundi_runtime::store::StoreError;

use super::Nodes;
use crate::errors::{db, pool_error};

impl Nodes {
    /// The check; one that fails for the connection's sake cuts the node off (it cannot
    /// tell whether it still holds anything) until it has read its tasks back.
    pub(super) async fn check_lease(&self, id: &TaskId) -> Result<(), StoreError> {
        match self.ask_lease(id).await {
            Err(error @ StoreError::Unreachable { .. }) => {
                tracing::warn!(task_id = %id, %error, "the lease check before a side effect failed for the connection's sake");
                self.leases.lost_track();
                Err(StoreError::CutOff)
            }
            other => other,
        }
    }

    async fn ask_lease(&self, id: &TaskId) -> Result<(), StoreError> {
        self.leases.ensure_fresh()?;
        let client = self.pool.get().await.map_err(pool_error)?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT coalesce(t.lease_node, ''), t.lease_epoch, \
                        coalesce(n.expires > clock_timestamp(), false) \
                     FROM {} t LEFT JOIN {} n ON n.node = t.lease_node WHERE t.id = $1",
                    self.tasks, self.node_leases
                ),
                &[&id.as_str()],
            )
            .await
            .map_err(db)?;
        let fenced = |holder: String| StoreError::Fenced {
            task_id: id.clone(),
            holder,
        };
        let Some(row) = row else {
            return Err(fenced("none: the task is not stored".into()));
        };
        let (node, epoch, live): (String, i64, bool) = (row.get(0), row.get(1), row.get(2));
        match node == self.leases.config.node && epoch == self.leases.epoch(id.as_str()) {
            true if live => self.leases.ensure_fresh(),
            true => Err(fenced("none: this node's lease ran out".into())),
            false if node.is_empty() => Err(fenced("none".into())),
            false => Err(fenced(node)),
        }
    }
}
