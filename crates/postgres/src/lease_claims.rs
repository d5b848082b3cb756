//! The store's lease queries: handing every lease back, who holds what, and claiming the
//! tasks whose leases this node takes (at start, and those that expired).

use fundi_runtime::store::{StoreError, TaskRecord};

use crate::database::Database;
use crate::errors::db;
use crate::lease::{CLAIM_BATCH, Leases, NodeLeases, lapsed_nodes};
use crate::quarantine::record_or_set_aside;

/// `TaskStore::hand_back`: renewal stops, and the node's lease runs out now (its
/// tasks and push deliveries are free to claim), its run slots and followings let go,
/// in one statement.
pub(crate) async fn hand_back(database: &Database, leases: &Leases) -> Result<(), StoreError> {
    leases.stop_renewing();
    let (node_leases, slots, watchers) = (
        database.table("node_leases"),
        database.table("run_slots"),
        database.table("watchers"),
    );
    database
        .client()
        .await?
        .execute(
            &format!(
                "WITH slots AS (
                    UPDATE {slots} SET node = NULL, expires = NULL WHERE node = $1
                 ), watching AS (
                    DELETE FROM {watchers} WHERE node = $1
                 )
                 UPDATE {node_leases} SET expires = clock_timestamp() - interval '1 millisecond'
                 WHERE node = $1"
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
                "SELECT t.lease_node, count(*), n.expires,
                    coalesce(n.expires < clock_timestamp(), false)
                 FROM {} t LEFT JOIN {} n ON n.node = t.lease_node
                 WHERE NOT t.terminal GROUP BY t.lease_node, n.expires
                 ORDER BY t.lease_node NULLS FIRST",
                database.table("tasks"),
                database.table("node_leases")
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

/// Claims the unfinished tasks `which` selects (a condition on `tasks`, where `$1` is
/// this node and `lapsed` the other nodes whose lease ran out), each with its epoch one
/// higher; those it can decode are held and returned, the others set aside.
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
                "WITH lapsed AS MATERIALIZED ({lapsed}) \
                 UPDATE {tasks} SET lease_node = $1, lease_epoch = lease_epoch + 1 \
                 WHERE {which} RETURNING id, lease_epoch, {columns}",
                lapsed = lapsed(database),
                columns = crate::snapshot::columns("", &database.table("events"))
            ),
            &[&leases.config.node],
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
/// the new epoch), or nobody's, or held by a node whose lease ran out. A node starting
/// beside it waits for the rows it locks, then finds them held and passes over them.
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
         OR lease_node = ANY(ARRAY(SELECT node FROM lapsed)))",
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

/// Unfinished tasks of other nodes whose lease ran out, a batch at a time, found by
/// their holder (an index of unfinished tasks by node): a look costs the same however
/// many tasks live nodes hold. Rows another node is claiming are skipped, not waited
/// for. (Tasks nobody holds, written without leases, are claimed by the next node to
/// start.)
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
             AND lease_node = ANY(ARRAY(SELECT node FROM lapsed)) \
             LIMIT {CLAIM_BATCH} FOR UPDATE SKIP LOCKED)"
        ),
    )
    .await
}

/// The nodes other than this one (`$1`) whose lease ran out, their rows locked `FOR
/// SHARE` until the claim commits: such a node cannot renew its lease (nor take it
/// again at start) in the middle of a claim of its tasks, and a renewal under way is
/// waited for and seen.
fn lapsed(database: &Database) -> String {
    let lapsed = lapsed_nodes(&database.table("node_leases"));
    format!("{lapsed} AND node <> $1 FOR SHARE")
}
