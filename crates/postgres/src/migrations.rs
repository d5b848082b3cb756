//! The store's tables, as numbered migrations applied once each, in order, under an
//! advisory lock (nodes starting together do not race).

use fundi_runtime::store::StoreError;
use tokio_postgres::{Client, GenericClient};

use crate::errors::db;

/// Each migration's statements; `{s}` stands for the schema.
const MIGRATIONS: &[&str] = &[
    // 1: tasks, their events, and new tasks' first messages by owner.
    r#"
    CREATE TABLE {s}.tasks (
        id text COLLATE "C" PRIMARY KEY,
        version bigint NOT NULL,
        record jsonb NOT NULL,
        context_id text NOT NULL,
        state text NOT NULL,
        terminal boolean NOT NULL,
        owner text,
        updated_ms bigint NOT NULL
    );
    CREATE INDEX tasks_by_update ON {s}.tasks (updated_ms DESC, id DESC);
    CREATE INDEX tasks_unfinished ON {s}.tasks (id) WHERE NOT terminal;
    CREATE TABLE {s}.events (
        task_id text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        event jsonb NOT NULL,
        PRIMARY KEY (task_id, seq)
    );
    CREATE TABLE {s}.first_messages (
        owner_key text NOT NULL,
        message_id text NOT NULL,
        task_id text COLLATE "C" NOT NULL,
        created_ms bigint NOT NULL,
        PRIMARY KEY (owner_key, message_id)
    );
    CREATE INDEX first_messages_by_task ON {s}.first_messages (task_id);
    "#,
    // 2: push configs and their delivery cursors.
    r#"
    CREATE TABLE {s}.push_configs (
        task_id text COLLATE "C" NOT NULL,
        id text COLLATE "C" NOT NULL,
        config jsonb NOT NULL,
        cursor jsonb NOT NULL,
        finished boolean NOT NULL DEFAULT false,
        PRIMARY KEY (task_id, id)
    );
    CREATE INDEX push_configs_unfinished ON {s}.push_configs (task_id) WHERE NOT finished;
    "#,
    // 3: the issue store, schedules, grants, the audit log and the chaos-event log.
    r#"
    CREATE TABLE {s}.issues (
        id text COLLATE "C" PRIMARY KEY,
        source text NOT NULL,
        issue jsonb NOT NULL
    );
    CREATE TABLE {s}.schedules (
        id text COLLATE "C" PRIMARY KEY,
        schedule jsonb NOT NULL
    );
    CREATE TABLE {s}.grants (
        id text COLLATE "C" PRIMARY KEY,
        digest text NOT NULL UNIQUE,
        grant_record jsonb NOT NULL
    );
    CREATE TABLE {s}.audit (
        seq bigserial PRIMARY KEY,
        at timestamptz NOT NULL,
        entry jsonb NOT NULL
    );
    CREATE TABLE {s}.chaos_events (
        task_id text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        record jsonb NOT NULL,
        PRIMARY KEY (task_id, seq)
    );
    "#,
    // 4: tasks set aside because their stored data could not be decoded: the raw
    // record and events, kept for an operator.
    r#"
    CREATE TABLE {s}.quarantine (
        task_id text COLLATE "C" PRIMARY KEY,
        reason text NOT NULL,
        at timestamptz NOT NULL,
        failed boolean NOT NULL,
        record jsonb NOT NULL
    );
    CREATE TABLE {s}.quarantined_events (
        task_id text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        event jsonb NOT NULL,
        PRIMARY KEY (task_id, seq)
    );
    "#,
    // 5: leases, for several nodes on one schema: the node holding an unfinished task,
    // the epoch that fences its writes, and when the lease runs out.
    r#"
    ALTER TABLE {s}.tasks ADD COLUMN lease_node text,
        ADD COLUMN lease_epoch bigint NOT NULL DEFAULT 0,
        ADD COLUMN lease_expires timestamptz;
    CREATE INDEX tasks_lease_expiry ON {s}.tasks (lease_expires) WHERE NOT terminal;
    "#,
    // 6: what several nodes need beside task leases: requests handed to the node that
    // runs a task (and their answers), the nodes following a task run elsewhere (its
    // commits notify only then), each skill's run slots (its concurrency limit held
    // across the nodes), push deliveries leased to one node at a time, and schedule
    // firings claimed by one node.
    r#"
    CREATE TABLE {s}.requests (
        id bigserial PRIMARY KEY,
        task_id text COLLATE "C" NOT NULL,
        body jsonb NOT NULL,
        taken boolean NOT NULL DEFAULT false,
        answer jsonb,
        created timestamptz NOT NULL DEFAULT clock_timestamp()
    );
    CREATE INDEX requests_waiting ON {s}.requests (task_id) WHERE NOT taken;
    CREATE TABLE {s}.watchers (
        task_id text COLLATE "C" NOT NULL,
        node text NOT NULL,
        expires timestamptz NOT NULL,
        PRIMARY KEY (task_id, node)
    );
    CREATE TABLE {s}.run_slots (
        skill text COLLATE "C" NOT NULL,
        slot integer NOT NULL,
        node text,
        expires timestamptz,
        PRIMARY KEY (skill, slot)
    );
    ALTER TABLE {s}.push_configs ADD COLUMN lease_node text,
        ADD COLUMN lease_expires timestamptz;
    ALTER TABLE {s}.schedules ADD COLUMN claimed_by text,
        ADD COLUMN claimed_until timestamptz;
    "#,
    // 7: the web console's sign-in links and sessions, by their token's digest, which
    // every node reads.
    r#"
    CREATE TABLE {s}.console_sessions (
        digest text PRIMARY KEY,
        kind text NOT NULL,
        body jsonb NOT NULL,
        expires timestamptz NOT NULL
    );
    CREATE INDEX console_sessions_by_expiry ON {s}.console_sessions (expires);
    "#,
    // 8: the peers an admin added at run time, by name, which every node reads.
    r#"
    CREATE TABLE {s}.peers (
        name text COLLATE "C" PRIMARY KEY,
        peer jsonb NOT NULL
    );
    "#,
    // 9: requests for access, each assertion (issuer and jti) usable once.
    r#"
    CREATE TABLE {s}.access_requests (
        id text COLLATE "C" PRIMARY KEY,
        assertion text NOT NULL UNIQUE,
        version bigint NOT NULL,
        request jsonb NOT NULL
    );
    "#,
    // 10: a commit of an unfinished task writes its events and columns, not its whole
    // record: `tail_after` (NULL: the record is the last commit) is the seq after which
    // the events bring the record up to date, `checkpoint` the task's checkpoint then
    // (see `snapshot`). A task set aside keeps that checkpoint beside its record.
    r#"
    ALTER TABLE {s}.tasks ADD COLUMN tail_after bigint, ADD COLUMN checkpoint jsonb;
    ALTER TABLE {s}.quarantine ADD COLUMN checkpoint jsonb;
    "#,
    // 11: the nodes that found no run slot of a skill free, until when: a node that
    // keeps slots between its runs stops keeping that skill's while another waits.
    r#"
    CREATE TABLE {s}.run_slot_wants (
        skill text COLLATE "C" NOT NULL,
        node text NOT NULL,
        until timestamptz NOT NULL,
        PRIMARY KEY (skill, node)
    );
    "#,
    // 12: one lease per node instead of one per task: a node's unfinished tasks and push
    // deliveries are held while its row here is live, so a renewal writes one row
    // whatever the node holds. The nodes that held leases keep them until the last of
    // their tasks' expiries; a node of an earlier build can no longer renew and cuts
    // itself off before then.
    r#"
    CREATE TABLE {s}.node_leases (
        node text PRIMARY KEY,
        expires timestamptz NOT NULL
    );
    INSERT INTO {s}.node_leases (node, expires)
    SELECT lease_node, coalesce(max(lease_expires), '-infinity')
    FROM (
        SELECT lease_node, lease_expires FROM {s}.tasks
        WHERE lease_node IS NOT NULL AND NOT terminal
        UNION ALL
        SELECT lease_node, lease_expires FROM {s}.push_configs
        WHERE lease_node IS NOT NULL AND NOT finished
    ) AS held
    GROUP BY lease_node;
    DROP INDEX {s}.tasks_lease_expiry;
    ALTER TABLE {s}.tasks DROP COLUMN lease_expires;
    ALTER TABLE {s}.push_configs DROP COLUMN lease_expires;
    CREATE INDEX tasks_by_lease_node ON {s}.tasks (lease_node) WHERE NOT terminal;
    "#,
];

/// The newest schema version this build knows.
pub(crate) const LATEST: i64 = MIGRATIONS.len() as i64;

/// Brings `schema` to the latest version; refuses one newer than this build.
pub(crate) async fn migrate(client: &mut Client, schema: &str) -> Result<(), StoreError> {
    migrate_to(client, schema, LATEST).await
}

/// Brings `schema` to version `target` (in tests: a schema as an earlier build left
/// it); refuses one newer than this build.
pub(crate) async fn migrate_to(
    client: &mut Client,
    schema: &str,
    target: i64,
) -> Result<(), StoreError> {
    let tx = client.transaction().await.map_err(db)?;
    // One node migrates at a time; the others find the work done.
    tx.execute("SELECT pg_advisory_xact_lock(7405142961)", &[])
        .await
        .map_err(db)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema};
         CREATE TABLE IF NOT EXISTS {schema}.fundi_migrations (
             version bigint PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))
    .await
    .map_err(db)?;
    let current = version(&tx, schema).await?;
    if current > LATEST {
        return Err(StoreError::NewerFormat {
            found: current as u64,
            supported: LATEST as u64,
        });
    }
    let pending = MIGRATIONS.iter().enumerate().take(target.max(0) as usize);
    for (at, statements) in pending.skip(current as usize) {
        let version = at as i64 + 1;
        tx.batch_execute(&statements.replace("{s}", schema))
            .await
            .map_err(db)?;
        tx.execute(
            &format!("INSERT INTO {schema}.fundi_migrations (version) VALUES ($1)"),
            &[&version],
        )
        .await
        .map_err(db)?;
        tracing::info!(schema, version, "store migration applied");
    }
    tx.commit().await.map_err(db)
}

/// The schema's version: the newest migration applied to it (0: none).
async fn version(client: &impl GenericClient, schema: &str) -> Result<i64, StoreError> {
    let row = client
        .query_one(
            &format!("SELECT coalesce(max(version), 0) FROM {schema}.fundi_migrations"),
            &[],
        )
        .await
        .map_err(db)?;
    Ok(row.get(0))
}

/// Refuses a schema not at this build's version (one to migrate, or a newer one),
/// changing nothing.
pub(crate) async fn check_current(client: &Client, schema: &str) -> Result<(), StoreError> {
    match version(client, schema).await? {
        LATEST => Ok(()),
        newer if newer > LATEST => Err(StoreError::NewerFormat {
            found: newer as u64,
            supported: LATEST as u64,
        }),
        older => Err(StoreError::database(format!(
            "schema {schema} is at version {older}, this fundi's is {LATEST}: start a node of \
             this version to migrate it first"
        ))),
    }
}
