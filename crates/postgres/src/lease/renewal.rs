//! Renewing a node's lease: one row in `node_leases`, whatever the node holds. Its
//! unfinished tasks and push deliveries are held while that row is live, so a renewal
//! costs the same for ten tasks as for a million (a lease per task was rewritten on
//! every task at every renewal). The run slots the node holds are renewed beside it.

use std::sync::{Arc, Weak};
use std::time::Duration;

use deadpool_postgres::Pool;
use fundi_runtime::store::StoreError;
use tokio_postgres::GenericClient;

use super::{Leases, lease_end};
use crate::errors::{db, pool_error};
use crate::metrics::metrics;

impl Leases {
    /// Renews this node's lease every third of its time, and a tenth of it after a
    /// renewal failed, while the store lives; cuts the node off when the deadline
    /// passes, a renewal under way or not.
    pub(crate) fn renew_in_background(leases: &Arc<Leases>, pool: Pool, schema: String) {
        let leases: Weak<Leases> = Arc::downgrade(leases);
        tokio::spawn(async move {
            loop {
                let Some(current) = leases.upgrade() else {
                    return;
                };
                let wait = current.renew_once(&pool, &schema).await;
                let woken = current.wake.clone();
                drop(current);
                // A write that lost track of the database asks for a renewal at once.
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = woken.notified() => {}
                }
            }
        });
    }

    /// One renewal; how long to wait before the next.
    async fn renew_once(&self, pool: &Pool, schema: &str) -> Duration {
        let every = self.config.ttl / 3;
        if !self.renewing() {
            // As a node that cannot reach the database: it cuts itself off in time.
            self.check_deadline();
            return every.min(self.config.ttl / 10);
        }
        // Woken late (a stall, a pause): the deadline is checked before anything else.
        self.check_deadline();
        let retry = (self.config.ttl / 10).max(Duration::from_millis(20));
        let sent = self.now_ms();
        let late = self.since_renewed() > every + every / 2;
        if late {
            metrics().renewal_late();
        }
        // A renewal may not outlast the deadline: the node cuts itself off in time even
        // when the database does not answer at all.
        let left = self.time_left();
        let budget = if left.is_zero() { every } else { left };
        match tokio::time::timeout(budget, renew(pool, schema, self)).await {
            Ok(Ok(())) => {
                self.renewed(sent);
                every
            }
            Ok(Err(error)) => {
                metrics().renewal_failed();
                tracing::warn!(%error, "could not renew this node's lease; trying again");
                self.check_deadline();
                match self.time_left() {
                    left if left.is_zero() => retry,
                    left => retry.min(left),
                }
            }
            Err(_) => {
                metrics().renewal_failed();
                tracing::warn!(waited = ?budget, "renewing this node's lease got no answer; trying again");
                self.check_deadline();
                Duration::ZERO
            }
        }
    }
}

/// The statement that makes node `$1`'s lease run a lease time (`$2`, in ms) from now,
/// writing its row if it has none.
fn node_lease(schema: &str) -> String {
    format!(
        "INSERT INTO {schema}.node_leases (node, expires) VALUES ($1, {until})
         ON CONFLICT (node) DO UPDATE SET expires = EXCLUDED.expires",
        until = lease_end(2)
    )
}

/// Takes this node's lease as its store opens, before it writes or claims anything.
pub(crate) async fn take_node_lease(
    client: &impl GenericClient,
    schema: &str,
    leases: &Leases,
) -> Result<(), StoreError> {
    client
        .execute(
            &node_lease(schema),
            &[&leases.config.node, &leases.ttl_ms()],
        )
        .await
        .map_err(db)?;
    Ok(())
}

async fn renew(pool: &Pool, schema: &str, leases: &Leases) -> Result<(), StoreError> {
    let client = pool.get().await.map_err(pool_error)?;
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] =
        [&leases.config.node, &leases.ttl_ms()];
    // The node's lease in one statement; the run slots it holds in another, sent
    // together. Apart, because a hand-back frees the slots and ends the node's lease in
    // one statement: the two locking the same rows in no set order could deadlock
    // (which PostgreSQL breaks by failing one of them). The second also reads the
    // skills whose slots other nodes wait for (see `cluster/run_slots.rs`).
    let node = node_lease(schema);
    let slots = format!(
        "WITH renewed AS (
            UPDATE {schema}.run_slots SET expires = {until} WHERE node = $1
         )
         SELECT DISTINCT skill FROM {schema}.run_slot_wants
         WHERE node <> $1 AND until > clock_timestamp()",
        until = lease_end(2)
    );
    let (_, wanted) = tokio::try_join!(
        client.execute(&node, &params),
        client.query(&slots, &params)
    )
    .map_err(db)?;
    leases.wanted_now(wanted.iter().map(|row| row.get(0)).collect());
    Ok(())
}
