//! The statements a commit and a read of a task run, for one schema (cached per pooled
//! connection once prepared).
//!
//! A commit is one statement: the task's row, its new events and (for a new task) its
//! first message, in data-modifying CTEs that succeed or fail together, so that a
//! commit costs one round trip and one server-side transaction. A new task is written
//! only if it claims its first message (`claim`: no task of it within the dedup
//! window), so that a new task costs no lookup before it. Commits of several tasks that
//! wait for a statement together go in one (`batch`), each on its own checks. Its
//! answer says whether the row was written and, from the statement's snapshot, the
//! version and lease holder it found.
//!
//! With leases (several nodes on one schema), a new task is leased to the node that
//! creates it (epoch 1), a change is written only by the holder of the epoch it names
//! (fencing), and a terminal task holds no lease. A new task's commit may also take one
//! of its skill's run slots (and is written only if it does), and the commit that ends
//! a run may give the run's slot back (only if it is written): a run then costs the
//! database no statement beside its commits.

mod batch;

/// What a commit does to a run slot of the task's skill (leased only).
#[derive(Debug, Clone, Copy)]
pub(crate) enum SlotChange {
    None,
    /// Takes one of this many slots; the task is written only if one was free.
    Take {
        limit: usize,
    },
    /// Gives back this slot, if the commit is written.
    GiveBack {
        slot: u32,
    },
}

/// How a change writes the record ($3), the seq a new tail starts after ($8) and the
/// checkpoint ($9): the record whole, with no tail; or no record (NULL), and the tail
/// it had or one starting now, and the checkpoint beside it (see `snapshot`).
const TAIL_UPDATE: &str = "record = coalesce($3::jsonb, record), \
    tail_after = CASE WHEN $3::jsonb IS NULL THEN coalesce(tail_after, $8::bigint) END, \
    checkpoint = CASE WHEN $3::jsonb IS NULL THEN $9::jsonb END";

pub(crate) struct HotStatements {
    /// $1..$8 the row, $9..$13 events and first message; leased: $14 node; last, the
    /// cutoff of its first message's claim (see `claim`). Its answer names,
    /// after the version and the lease holder, the task and creation time the first
    /// message had in the statement's snapshot.
    pub(crate) create: String,
    /// $1..$7 the row (its record NULL when the commit writes a tail) and expected
    /// version, $8 the seq a new tail starts after, $9 the checkpoint with a tail,
    /// $10..$14 the rest; leased: $15 node, $16 epoch.
    pub(crate) update: String,
    /// Leased: `create`, written only if it takes a run slot of skill $16 below $17 for
    /// $15 ms (the cutoff $18); its answer's last column is the slot (NULL: none was free,
    /// nothing written).
    pub(crate) create_taking_slot: String,
    /// Leased: `update`, giving back run slot $18 of skill $17 if it is written.
    pub(crate) update_giving_back: String,
    /// Several commits in one statement (see `batch`).
    pub(crate) batch_commit: String,
    pub(crate) get_task: String,
    /// $1 owner key, $2 message id: the task the message created, and when.
    pub(crate) created_by: String,
    /// `created_by` for several: $1 owner keys, $2 message ids; per one found, its
    /// position (1-based), the task and when.
    pub(crate) created_by_many: String,
}

impl HotStatements {
    pub(crate) fn new(schema: &str, leased: bool) -> HotStatements {
        let channel = crate::listener::channel(schema);
        // The events' seqs and bodies, then the first message's owner key, message id
        // and creation time (NULL when the commit creates no task).
        // `claims`: the statement creates a task, whose first message it claimed
        // before (`claim` below): the answer names the task that first message had,
        // for a creation it refused.
        let rest = |events: usize, claims: bool| {
            let (seqs, bodies, owner, message, created) =
                (events, events + 1, events + 2, events + 3, events + 4);
            // With several nodes, a commit with events tells the nodes following the task
            // (they read the events), as the transaction commits. Only when one does: a
            // NOTIFY serializes the commits that send one. Never a new task's: a node
            // follows a task it found stored, so none follows it before it is.
            let (signal, signalled) = match leased && !claims {
                true => (
                    format!(
                        ", signal AS (
                        SELECT pg_notify('{channel}', 'e:' || written.id) FROM written
                        WHERE cardinality(${seqs}::bigint[]) > 0 AND EXISTS (
                            SELECT 1 FROM {schema}.watchers w WHERE w.task_id = written.id)
                     )"
                    ),
                    ", (SELECT count(*) FROM signal)",
                ),
                false => (String::new(), ""),
            };
            let (first_message, had) = match claims {
                true => (
                    String::new(),
                    format!(
                        ", (SELECT task_id FROM {schema}.first_messages
                            WHERE owner_key = ${owner}::text AND message_id = ${message}::text),
                         (SELECT created_ms FROM {schema}.first_messages
                            WHERE owner_key = ${owner}::text AND message_id = ${message}::text)"
                    ),
                ),
                false => (
                    format!(
                        ", first_message AS (
                        INSERT INTO {schema}.first_messages (owner_key, message_id, task_id, created_ms)
                        SELECT ${owner}::text, ${message}::text, written.id, ${created}::bigint
                        FROM written WHERE ${message}::text IS NOT NULL
                        ON CONFLICT DO NOTHING
                     )"
                    ),
                    String::new(),
                ),
            };
            format!(
                "new_events AS (
                    INSERT INTO {schema}.events (task_id, seq, event)
                    SELECT written.id, e.seq, e.event FROM written,
                        unnest(${seqs}::bigint[], ${bodies}::jsonb[]) AS e(seq, event)
                 ){first_message}{signal}
                 SELECT (SELECT count(*) FROM written),
                        (SELECT version FROM {schema}.tasks WHERE id = $1),
                        (SELECT lease_node FROM {schema}.tasks WHERE id = $1){had}{signalled}"
            )
        };
        let (lease_columns, lease_values, lease_update, fence) = if leased {
            (
                ", lease_node, lease_epoch",
                ", CASE WHEN $6 THEN NULL ELSE $14::text END, CASE WHEN $6 THEN 0 ELSE 1 END",
                ", lease_node = CASE WHEN $5 THEN NULL ELSE lease_node END",
                " AND lease_node = $15::text AND lease_epoch = $16::bigint",
            )
        } else {
            ("", "", "", "")
        };
        let columns = format!(
            "{schema}.tasks (id, version, record, context_id, state, terminal, owner, \
             updated_ms{lease_columns})"
        );
        // `freed`: data-modifying CTEs to run after the row is written, or none.
        let update = |freed: &str| {
            format!(
                "WITH written AS (
                    UPDATE {schema}.tasks SET version = $2, state = $4, terminal = $5,
                        updated_ms = $6{lease_update}, {TAIL_UPDATE}
                    WHERE id = $1 AND version = $7{fence} RETURNING id
                 ){freed}, {}",
                rest(10, false)
            )
        };
        // A new task's first message is claimed first (see `claim`), `cutoff` its last
        // parameter; `from`: where the rows come from (one, or none: nothing is
        // written, as when no run slot was free).
        let create = |from: &str, cutoff: usize| {
            format!(
                "{}, written AS (
                    INSERT INTO {columns}
                    SELECT $1::text, $2::bigint, $3::jsonb, $4::text, $5::text, $6::boolean,
                        $7::text, $8::bigint{lease_values}{from}
                    WHERE ${cutoff}::bigint IS NULL OR EXISTS (SELECT FROM claimed)
                    ON CONFLICT (id) DO NOTHING RETURNING id
                 ), {}",
                claim(schema, from, cutoff),
                rest(9, true)
            )
        };
        let (plain_cutoff, slot_cutoff) = match leased {
            true => (15, 18),
            false => (14, 16),
        };
        HotStatements {
            create: format!("WITH {}", create("", plain_cutoff)),
            // The slot is taken first; the task is written only from its row.
            create_taking_slot: format!(
                "WITH slot AS (
                    UPDATE {schema}.run_slots SET node = $14, expires = {until}
                    WHERE (skill, slot) = (
                        SELECT skill, slot FROM {schema}.run_slots
                        WHERE skill = $16 AND slot < $17
                            AND (node IS NULL OR expires < clock_timestamp())
                        ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED)
                    RETURNING slot
                 ), {}, (SELECT slot FROM slot)",
                create(" FROM slot", slot_cutoff),
                until = crate::lease::lease_end(15),
            ),
            update_giving_back: update(&format!(
                ", freed AS (
                    UPDATE {schema}.run_slots SET node = NULL, expires = NULL
                    WHERE skill = $17 AND slot = $18 AND node = $15
                        AND EXISTS (SELECT 1 FROM written)
                 )"
            )),
            update: update(""),
            batch_commit: batch::batch_commit(schema, leased),
            get_task: format!(
                "SELECT {} FROM {schema}.tasks WHERE id = $1",
                crate::snapshot::columns("", &format!("{schema}.events"))
            ),
            created_by: format!(
                "SELECT task_id, created_ms FROM {schema}.first_messages \
                 WHERE owner_key = $1 AND message_id = $2"
            ),
            created_by_many: format!(
                "SELECT k.n, f.task_id, f.created_ms
                 FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(owner_key, message_id, n)
                 JOIN {schema}.first_messages f
                    ON f.owner_key = k.owner_key AND f.message_id = k.message_id"
            ),
        }
    }
}

/// The CTE `claimed` of a statement that creates a task: its first message ($11 owner
/// key, $12 message id, $13 creation ms, for task $1) indexed, and returned, unless the
/// index holds that message for a task created at or after $`cutoff` (ms; NULL: a task
/// created before this one). An entry older than that gives way to the new task. The
/// task is written only if its first message is claimed (or $`cutoff` is NULL); an
/// entry another transaction wrote first, this statement waits for, and then keeps.
/// `from`: where the row comes from (none: nothing is claimed).
fn claim(schema: &str, from: &str, cutoff: usize) -> String {
    format!(
        "claimed AS (
            INSERT INTO {schema}.first_messages AS had (owner_key, message_id, task_id, created_ms)
            SELECT $11::text, $12::text, $1::text, $13::bigint{from}
            WHERE $12::text IS NOT NULL
            ON CONFLICT (owner_key, message_id) DO UPDATE
                SET task_id = EXCLUDED.task_id, created_ms = EXCLUDED.created_ms
                WHERE had.created_ms < coalesce(${cutoff}::bigint, EXCLUDED.created_ms)
            RETURNING 1
         )"
    )
}
