//! Listing tasks (filtered, newest update first, a page at a time, with the total) and
//! removing ended ones (retention), on PostgreSQL.

use chrono::{DateTime, Utc};
use fundi_runtime::TaskId;
use fundi_runtime::store::{Cursor, ListPage, ListQuery, PageFill, StoreError};
use futures::TryStreamExt;
use tokio_postgres::types::ToSql;

use crate::columns::millis;
use crate::database::Database;
use crate::errors::db;
use crate::snapshot;

pub(crate) async fn list(database: &Database, query: &ListQuery) -> Result<ListPage, StoreError> {
    let mut params: Vec<Box<dyn ToSql + Sync + Send>> = Vec::new();
    let mut conditions: Vec<String> = Vec::new();
    let mut bind = |value: Box<dyn ToSql + Sync + Send>, column: &str, op: &str| {
        params.push(value);
        conditions.push(format!("{column} {op} ${}", params.len()));
    };
    if let Some(context) = &query.context_id {
        bind(Box::new(context.as_str().to_owned()), "context_id", "=");
    }
    if let Some(state) = query.state {
        bind(Box::new(state.wire_name().to_owned()), "state", "=");
    }
    if let Some(after) = query.updated_after {
        bind(Box::new(millis(after)), "updated_ms", ">=");
    }
    if let Some(owner) = query.owner.as_user() {
        bind(Box::new(owner.to_owned()), "owner", "=");
    }
    if let Some(skill) = &query.skill {
        bind(Box::new(skill.to_string()), "record->>'skill'", "=");
    }
    let filter = match conditions.is_empty() {
        true => "TRUE".to_owned(),
        false => conditions.join(" AND "),
    };
    let refs: Vec<&(dyn ToSql + Sync)> = params
        .iter()
        .map(|p| p.as_ref() as &(dyn ToSql + Sync))
        .collect();
    let client = database.client().await?;
    let total: i64 = client
        .query_one(
            &format!(
                "SELECT count(*) FROM {} WHERE {filter}",
                database.table("tasks")
            ),
            &refs,
        )
        .await
        .map_err(db)?
        .get(0);
    // Newest first; a page continues strictly after its cursor.
    let cursor = query
        .cursor
        .as_ref()
        .map(|c| (c.ts_ms(), c.task_id().as_str().to_owned()));
    let mut page_refs = refs.clone();
    let position = match &cursor {
        Some((ts, id)) => {
            page_refs.push(ts);
            page_refs.push(id);
            let n = page_refs.len();
            format!("AND (updated_ms, id) < (${}, ${n})", n - 1)
        }
        None => String::new(),
    };
    // Rows are read one at a time, so that a page the byte bound ends early leaves
    // the rest unread rather than held.
    let rows = client
        .query_raw(
            &format!(
                "SELECT updated_ms, id, {} FROM {} WHERE {filter} {position} \
                 ORDER BY updated_ms DESC, id DESC LIMIT {}",
                snapshot::columns("", &database.table("events")),
                database.table("tasks"),
                query.limit + 1
            ),
            page_refs.iter().copied(),
        )
        .await
        .map_err(db)?;
    futures::pin_mut!(rows);
    let mut page = PageFill::new(query);
    let (mut walked, mut next, mut more) = (0, None, false);
    while let Some(row) = rows.try_next().await.map_err(db)? {
        if walked == query.limit {
            // A row past the page: there is a next page, after the page's last row
            // (read or not).
            more = true;
            break;
        }
        walked += 1;
        let position = Cursor::new(row.get(0), TaskId::from(row.get::<_, String>(1)));
        next = Some(position.clone());
        match snapshot::decode(&row, 2) {
            Ok(record) => {
                if !page.push(position, record) {
                    break;
                }
            }
            // Left out of listings, as the sled store does; reading it by id says
            // why, and recovery sets it aside if it is unfinished.
            Err(error) => {
                let id: String = row.get(1);
                tracing::warn!(task_id = %id, %error, "a stored task cannot be read; left out of a listing");
            }
        }
    }
    let next = next.filter(|_| more);
    Ok(page.finish(next, total as usize))
}

pub(crate) async fn remove_ended(
    database: &Database,
    before: DateTime<Utc>,
    limit: usize,
) -> Result<usize, StoreError> {
    let mut client = database.client().await?;
    let tx = client.transaction().await.map_err(db)?;
    let rows = tx
        .query(
            &format!(
                "SELECT id FROM {} WHERE terminal AND updated_ms < $1 \
                 ORDER BY updated_ms, id LIMIT $2 FOR UPDATE SKIP LOCKED",
                database.table("tasks")
            ),
            &[&millis(before), &(limit as i64)],
        )
        .await
        .map_err(db)?;
    let ids: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
    for table in ["events", "first_messages", "push_configs", "chaos_events"] {
        tx.execute(
            &format!(
                "DELETE FROM {} WHERE task_id = ANY($1)",
                database.table(table)
            ),
            &[&ids],
        )
        .await
        .map_err(db)?;
    }
    tx.execute(
        &format!("DELETE FROM {} WHERE id = ANY($1)", database.table("tasks")),
        &[&ids],
    )
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(ids.len())
}
