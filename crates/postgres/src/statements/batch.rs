//! The statement that commits several tasks at once: each commit as one row of arrays
//! that `unnest` turns back into rows, the new tasks inserted and the changed ones
//! updated (each on its own version check and, with leases, its own fence), the events
//! and first messages of the new ones claimed, in data-modifying CTEs of one
//! statement. PostgreSQL spends on such a statement little more than on one commit of
//! its own (one parse of the message, one executor start, one transaction, one flush),
//! which is what makes a commit of many tasks cheaper than as many commits.
//!
//! Its answer is one row per commit, in no order: the commit's position (1-based), whether
//! it was written and, from the statement's snapshot, the version and lease holder it
//! found (as a single commit's answer gives them), the run slot it took, and for a new
//! task the task and creation time its first message had in that snapshot.
//!
//! No two commits of one statement may name the same task: an `UPDATE ... FROM` that
//! joins one row to two would write it once and report both written.

/// Parameters: per commit, $1 id, $2 version, $3 record, $4 context id, $5 state, $6
/// terminal, $7 owner, $8 updated ms, $9 expected version (0: a new task), $10 the seq a
/// new tail starts after and $11 the checkpoint, for a commit with no record (see
/// `snapshot`); per event, $12 task id, $13 seq, $14 body; per first message, $15 owner
/// key, $16 message id, $17 task id, $18 creation ms; leased, $19 node, $20 lease ms (of
/// the run slots taken),
/// and per commit $21 the epoch it names, $22 its skill, $23 the run slot it gives back
/// and $24 the limit of the run slots it takes one of (NULL: none); last ($25 leased,
/// $19 not), per first message, the cutoff of its claim (see `statements::claim`).
///
/// A new task's first message is claimed before the task is written, and a task whose
/// claim is refused is not written (only one with a cutoff: without one, its first
/// message is indexed unless an entry as new is there, and the task is written). Of two
/// first messages of one owner and id in one statement, only the newer claims (the
/// runtime creates one task of a first message at a time, so never with a cutoff).
///
/// A run slot is given back only if its commit is written (as a single commit's is).
/// New tasks that take a run slot each get one of their own: per skill, as many free
/// slots as there are such commits are locked (the lowest first, skipping those that
/// another statement holds) and handed to them in their order; one left without a slot
/// is not written, and its answer's slot is NULL.
pub(crate) fn batch_commit(schema: &str, leased: bool) -> String {
    let channel = crate::listener::channel(schema);
    let cutoffs = match leased {
        true => 25,
        false => 19,
    };
    let (epochs, epoch_column) = match leased {
        true => (
            ", $21::bigint[], $22::text[], $23::int[], $24::int[]",
            ", epoch, skill, given_back, lim",
        ),
        false => ("", ""),
    };
    // The run slots new tasks take: the free ones locked, numbered per skill, and
    // handed to the takers numbered the same way; a task is created only with one.
    let (taking, with_slot, slot_taken, slot_joined) = match leased {
        true => (
            format!(
                ", takers AS (
                    SELECT n, skill, row_number() OVER (PARTITION BY skill ORDER BY n) AS k
                    FROM input WHERE lim IS NOT NULL
                 ), wanted AS (
                    SELECT skill, max(lim) AS lim, count(*) AS wanted
                    FROM input WHERE lim IS NOT NULL GROUP BY skill
                 ), free AS (
                    SELECT w.skill, f.slot,
                        row_number() OVER (PARTITION BY w.skill ORDER BY f.slot) AS k
                    FROM wanted w, LATERAL (
                        SELECT s.slot FROM {schema}.run_slots s
                        WHERE s.skill = w.skill AND s.slot < w.lim
                            AND (s.node IS NULL OR s.expires < clock_timestamp())
                        ORDER BY s.slot LIMIT w.wanted FOR UPDATE SKIP LOCKED) f
                 ), assigned AS (
                    SELECT t.n, f.skill, f.slot
                    FROM takers t JOIN free f ON f.skill = t.skill AND f.k = t.k
                 ), taken AS (
                    UPDATE {schema}.run_slots s SET node = $19::text, expires = {until}
                    FROM assigned a WHERE s.skill = a.skill AND s.slot = a.slot
                 )",
                until = crate::lease::lease_end(20)
            ),
            " AND (lim IS NULL OR n IN (SELECT n FROM assigned))",
            ", a.slot",
            " LEFT JOIN assigned a ON a.n = i.n",
        ),
        false => (String::new(), "", ", NULL::int", ""),
    };
    let (lease_columns, lease_values, lease_update, fence) = match leased {
        true => (
            ", lease_node, lease_epoch",
            ", CASE WHEN terminal THEN NULL ELSE $19::text END, \
             CASE WHEN terminal THEN 0 ELSE 1 END",
            ", lease_node = CASE WHEN i.terminal THEN NULL ELSE t.lease_node END",
            " AND t.lease_node = $19::text AND t.lease_epoch = i.epoch",
        ),
        false => ("", "", "", ""),
    };
    // As for a single commit: the nodes following a written task that has new events
    // are told, and only those (a NOTIFY serializes the commits that send one), never
    // for a new task; the run slots of the written commits that give one back are freed.
    let (signal, signalled) = match leased {
        true => (
            format!(
                ", freed AS (
                    UPDATE {schema}.run_slots s SET node = NULL, expires = NULL
                    FROM input i
                    WHERE i.given_back IS NOT NULL AND s.skill = i.skill
                        AND s.slot = i.given_back AND s.node = $19::text
                        AND i.id IN (SELECT id FROM written)
                 ), signal AS (
                    SELECT pg_notify('{channel}', 'e:' || w.id) FROM updated w
                    WHERE w.id = ANY($12::text[])
                        AND EXISTS (SELECT 1 FROM {schema}.watchers x WHERE x.task_id = w.id)
                 )"
            ),
            ", (SELECT count(*) FROM signal)",
        ),
        false => (String::new(), ""),
    };
    format!(
        "WITH input AS (
            SELECT * FROM unnest($1::text[], $2::bigint[], $3::jsonb[], $4::text[],
                $5::text[], $6::boolean[], $7::text[], $8::bigint[], $9::bigint[],
                $10::bigint[], $11::jsonb[]{epochs})
            WITH ORDINALITY AS i(id, version, record, context_id, state, terminal, owner,
                updated_ms, expected, tail_after, checkpoint{epoch_column}, n)
         ){taking}, firsts AS (
            SELECT f.*
            FROM unnest($15::text[], $16::text[], $17::text[], $18::bigint[], ${cutoffs}::bigint[])
                AS f(owner_key, message_id, task_id, created_ms, cutoff)
            JOIN input ON input.id = f.task_id
            WHERE expected = 0{with_slot}
         ), claims AS (
            SELECT DISTINCT ON (owner_key, message_id) * FROM firsts
            ORDER BY owner_key, message_id, created_ms DESC
         ), claimed AS (
            INSERT INTO {schema}.first_messages AS had (owner_key, message_id, task_id, created_ms)
            SELECT owner_key, message_id, task_id, created_ms FROM claims
            ON CONFLICT (owner_key, message_id) DO UPDATE
                SET task_id = EXCLUDED.task_id, created_ms = EXCLUDED.created_ms
                WHERE had.created_ms < coalesce((SELECT c.cutoff FROM claims c
                    WHERE c.owner_key = EXCLUDED.owner_key AND c.message_id = EXCLUDED.message_id),
                    EXCLUDED.created_ms)
            RETURNING task_id
         ), created AS (
            INSERT INTO {schema}.tasks (id, version, record, context_id, state, terminal,
                owner, updated_ms{lease_columns})
            SELECT id, version, record, context_id, state, terminal, owner,
                updated_ms{lease_values}
            FROM input WHERE expected = 0{with_slot}
                AND (id IN (SELECT task_id FROM claimed) OR NOT EXISTS (
                    SELECT FROM firsts c WHERE c.task_id = input.id AND c.cutoff IS NOT NULL))
            ON CONFLICT (id) DO NOTHING RETURNING id
         ), updated AS (
            UPDATE {schema}.tasks t SET version = i.version,
                record = coalesce(i.record, t.record),
                tail_after = CASE WHEN i.record IS NULL
                    THEN coalesce(t.tail_after, i.tail_after) END,
                checkpoint = CASE WHEN i.record IS NULL THEN i.checkpoint END,
                state = i.state, terminal = i.terminal, updated_ms = i.updated_ms{lease_update}
            FROM input i
            WHERE i.expected <> 0 AND t.id = i.id AND t.version = i.expected{fence}
            RETURNING t.id
         ), written AS (
            SELECT id FROM created UNION ALL SELECT id FROM updated
         ), new_events AS (
            INSERT INTO {schema}.events (task_id, seq, event)
            SELECT e.task_id, e.seq, e.event
            FROM unnest($12::text[], $13::bigint[], $14::jsonb[]) AS e(task_id, seq, event)
            WHERE e.task_id IN (SELECT id FROM written)
         ){signal}
         SELECT i.n, i.id IN (SELECT id FROM written), t.version, t.lease_node{slot_taken},
            h.task_id, h.created_ms{signalled}
         FROM input i LEFT JOIN {schema}.tasks t ON t.id = i.id{slot_joined}
         LEFT JOIN unnest($15::text[], $16::text[], $17::text[]) AS q(owner_key, message_id, task_id)
            ON q.task_id = i.id
         LEFT JOIN {schema}.first_messages h
            ON h.owner_key = q.owner_key AND h.message_id = q.message_id"
    )
}
