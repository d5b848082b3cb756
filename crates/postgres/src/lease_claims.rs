//! The store's lease queries: handing every lease back, who holds what, and claiming the
//! tasks whose leases this node takes (at start, and those that expired).

use fundi_runtime::store::{StoreError, TaskRecord};

use crate::database::Database;
use crate::errors::db;
use crate::lease::{CLAIM_BATCH, Leases, NodeLeases, lease_end};
use crate::quarantine::record_or_set_aside;

/// `TaskStore::hand_back`: renewal stops, and every lease this node holds runs out
/// now (tasks, push deliveries), its run slots and followings let go, in one
/// statement.
pub(crate) async fn hand_back(database: &Database, leases: &Leases) -> Result<(), StoreError> {
    leases.stop_renewing();
    let (tasks, slots, watchers, configs) = (
        database.table("tasks"),
        database.table("run_slots"),
        database.table("watchers"),
        database.table("push_configs"),
    );
    database
        .client()
        .await?
        .execute(
            &format!(
                "WITH tasks AS (
                    UPDATE {tasks} SET lease_expires = clock_timestamp() - interval '1 millisecond'
                    WHERE lease_node = $1 AND NOT terminal
                 ), slots AS (
                    UPDATE {slots} SET node = NULL, expires = NULL WHERE node = $1
                 ), watching AS (
                    DELETE FROM {watchers} WHERE node = $1
                 )
                 UPDATE {configs} SET lease_expires = clock_timestamp() - interval '1 millisecond'
                 WHERE lease_node = $1 AND NOT finished"
            ),
            &[&leases.config.node],
        )
        .await
        .map_err(db)?;
    Ok(())
}

/// Who holds the unfinished tasks, by node.
pub(crate) async fn node_leases(database: &Database) -> Result<Vec<NodeLeases>, StoreError> {
    let rows = database
        .client()
        .await?
        .query(
            &format!(
                "SELECT lease_node, count(*), max(lease_expires),
                    coalesce(bool_and(lease_expires < clock_timestamp()), false)
                 FROM {} WHERE NOT terminal GROUP BY lease_node ORDER BY lease_node NULLS FIRST",
                database.table("tasks")
            ),
            &[],
        )
        .await
        .map_err(db)?;
    Ok(rows
        .iter()
        .map(|row| NodeLeases {
            node: row.get(0),
            tasks: row.get::<_, i64>(1) as u64,
            expires: row.get(2),
            expired: row.get(3),
        })
        .collect())
}

/// Claims the unfinished tasks `which` selects (a condition on `tasks`, `$1` this
/// node), each with its epoch one higher; those it can decode are held and returned,
/// the others set aside.
async fn claim(
    database: &Database,
    leases: &Leases,
    which: &str,
) -> Result<Vec<TaskRecord>, StoreError> {
    let tasks = database.table("tasks");
    let rows = database
        .client()
        .await?
        .query(
            &format!(
                "UPDATE {tasks} SET lease_node = $1, lease_epoch = lease_epoch + 1, \
                 lease_expires = {until} WHERE {which} RETURNING id, lease_epoch, {columns}",
                until = lease_end(2),
                columns = crate::snapshot::columns("", &database.table("events"))
            ),
            &[&leases.config.node, &leases.ttl_ms()],
        )
        .await
        .map_err(db)?;
    let mut claimed = Vec::with_capacity(rows.len());
    for row in &rows {
        if let Some(record) = record_or_set_aside(database, row, 0, 2).await? {
            leases.hold(record.id().as_str(), row.get(1));
            claimed.push(record);
        }
    }
    claimed.sort_by(|a, b| a.id().as_str().cmp(b.id().as_str()));
    Ok(claimed)
}

/// At start: every unfinished task that is this node's (a former self's, fenced by
/// the new epoch), or nobody's, or whose lease expired. A node starting beside it
/// waits for the rows it locks, then finds them held and passes over them.
pub(crate) async fn claim_at_start(
    database: &Database,
    leases: &Leases,
) -> Result<Vec<TaskRecord>, StoreError> {
    // The run slots a former self held belong to runs that ended with it.
    free_run_slots(database, leases).await?;
    claim(
        database,
        leases,
        "NOT terminal AND (lease_node IS NULL OR lease_node = $1 \
         OR lease_expires < clock_timestamp())",
    )
    .await
}

/// After a cut-off: every unfinished task still leased to this node, claimed anew
/// (one epoch up, fencing whatever of this node's runs did not stop); those another
/// node took meanwhile are left to it. Run slots this node held are let go first:
/// no run of its went on through the cut-off.
pub(crate) async fn reclaim_own(
    database: &Database,
    leases: &Leases,
) -> Result<Vec<TaskRecord>, StoreError> {
    leases.ensure_fresh()?;
    leases.forget_held();
    free_run_slots(database, leases).await?;
    claim(database, leases, "NOT terminal AND lease_node = $1").await
}

/// Lets go of every run slot this node holds (no run of its goes on).
async fn free_run_slots(database: &Database, leases: &Leases) -> Result<(), StoreError> {
    database
        .client()
        .await?
        .execute(
            &format!(
                "UPDATE {} SET node = NULL, expires = NULL WHERE node = $1",
                database.table("run_slots")
            ),
            &[&leases.config.node],
        )
        .await
        .map_err(db)?;
    Ok(())
}

/// Unfinished tasks whose lease another node let expire, a batch at a time; rows
/// another node is claiming are skipped, not waited for.
pub(crate) async fn claim_expired(
    database: &Database,
    leases: &Leases,
) -> Result<Vec<TaskRecord>, StoreError> {
    let tasks = database.table("tasks");
    claim(
        database,
        leases,
        &format!(
            "id IN (SELECT id FROM {tasks} WHERE NOT terminal \
             AND lease_node IS DISTINCT FROM $1 \
             AND (lease_expires IS NULL OR lease_expires < clock_timestamp()) \
             ORDER BY id LIMIT {CLAIM_BATCH} FOR UPDATE SKIP LOCKED)"
        ),
    )
    .await
}
