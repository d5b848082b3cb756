//! The web console's sign-in links, sign-ins under way and sessions on PostgreSQL: a
//! row per digest, read by every node. Expired rows are removed whenever one is kept.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use fundi_ops::sessions::{ConsolePerson, ConsoleSession, PendingSignIn, SessionStore};
use fundi_runtime::store::StoreError;

use crate::columns::decode_column;
use crate::database::Database;
use crate::errors::db;
use crate::store::PostgresStore;

const LINK: &str = "link";
const PENDING: &str = "pending";
const SESSION: &str = "session";

/// Keeps a row, and removes the expired ones.
async fn keep(
    database: &Database,
    digest: &str,
    kind: &str,
    body: serde_json::Value,
    expires: DateTime<Utc>,
) -> Result<(), StoreError> {
    let table = database.table("console_sessions");
    let client = database.client().await?;
    client
        .execute(
            &format!("DELETE FROM {table} WHERE expires <= $1"),
            &[&Utc::now()],
        )
        .await
        .map_err(db)?;
    client
        .execute(
            &format!(
                "INSERT INTO {table} (digest, kind, body, expires) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (digest) DO UPDATE SET kind = EXCLUDED.kind, \
                 body = EXCLUDED.body, expires = EXCLUDED.expires"
            ),
            &[&digest, &kind, &body, &expires],
        )
        .await
        .map_err(db)?;
    Ok(())
}

/// Takes a row of `kind`, once: its body, if it has not expired at `now`. One
/// statement, so that of two nodes taking the same row at once, one gets it.
async fn take<T: serde::de::DeserializeOwned>(
    database: &Database,
    digest: &str,
    kind: &str,
    now: DateTime<Utc>,
) -> Result<Option<T>, StoreError> {
    let client = database.client().await?;
    let row = client
        .query_opt(
            &format!(
                "DELETE FROM {} WHERE digest = $1 AND kind = $2 RETURNING body, expires",
                database.table("console_sessions")
            ),
            &[&digest, &kind],
        )
        .await
        .map_err(db)?;
    let Some(row) = row else {
        return Ok(None);
    };
    let expires: DateTime<Utc> = row.get(1);
    match expires > now {
        true => decode_column(&row, 0).map(Some),
        false => Ok(None),
    }
}

#[async_trait]
impl SessionStore for PostgresStore {
    async fn put_link(
        &self,
        digest: &str,
        person: &ConsolePerson,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        keep(
            &self.db,
            digest,
            LINK,
            serde_json::to_value(person)?,
            expires_at,
        )
        .await
    }

    async fn take_link(
        &self,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<ConsolePerson>, StoreError> {
        take(&self.db, digest, LINK, now).await
    }

    async fn put_pending(
        &self,
        digest: &str,
        pending: &PendingSignIn,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        keep(
            &self.db,
            digest,
            PENDING,
            serde_json::to_value(pending)?,
            expires_at,
        )
        .await
    }

    async fn take_pending(
        &self,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<PendingSignIn>, StoreError> {
        take(&self.db, digest, PENDING, now).await
    }

    async fn put_session(&self, digest: &str, session: &ConsoleSession) -> Result<(), StoreError> {
        let body = serde_json::to_value(session)?;
        keep(&self.db, digest, SESSION, body, session.expires_at).await
    }

    async fn session(
        &self,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<ConsoleSession>, StoreError> {
        let client = self.db.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT body FROM {} WHERE digest = $1 AND kind = $2 AND expires > $3",
                    self.db.table("console_sessions")
                ),
                &[&digest, &SESSION, &now],
            )
            .await
            .map_err(db)?;
        row.map(|row| decode_column(&row, 0)).transpose()
    }

    async fn remove_session(&self, digest: &str) -> Result<(), StoreError> {
        let client = self.db.client().await?;
        client
            .execute(
                &format!(
                    "DELETE FROM {} WHERE digest = $1 AND kind = $2",
                    self.db.table("console_sessions")
                ),
                &[&digest, &SESSION],
            )
            .await
            .map_err(db)?;
        Ok(())
    }
}
