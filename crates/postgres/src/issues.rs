//! `IssueStore` on PostgreSQL: an issue per row, changed under a row lock so that
//! concurrent runs finding one issue all count.

use async_trait::async_trait;
use fundi_ops::issues::{Issue, IssueStore, NewIssue, merge};
use fundi_runtime::store::StoreError;

use crate::columns::decode_column;
use crate::errors::db;
use crate::store::PostgresStore;

#[async_trait]
impl IssueStore for PostgresStore {
    async fn record(&self, finding: NewIssue) -> Result<(Issue, bool), StoreError> {
        let mut client = self.db.client().await?;
        let tx = client.transaction().await.map_err(db)?;
        let table = self.db.table("issues");
        // A placeholder row first, so that a new issue is locked like an old one.
        tx.execute(
            &format!("INSERT INTO {table} (id, source, issue) VALUES ($1, $2, 'null') ON CONFLICT DO NOTHING"),
            &[&finding.fingerprint, &finding.source],
        )
        .await
        .map_err(db)?;
        let row = tx
            .query_one(
                &format!("SELECT issue FROM {table} WHERE id = $1 FOR UPDATE"),
                &[&finding.fingerprint],
            )
            .await
            .map_err(db)?;
        // 'null' until the first sighting is stored.
        let existing: Option<Issue> = decode_column(&row, 0)?;
        let id = finding.fingerprint.clone();
        let (issue, new) = merge(existing, finding);
        tx.execute(
            &format!("UPDATE {table} SET issue = $2, source = $3 WHERE id = $1"),
            &[&id, &serde_json::to_value(&issue)?, &issue.finding.source],
        )
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok((issue, new))
    }

    async fn issue(&self, id: &str) -> Result<Option<Issue>, StoreError> {
        let client = self.db.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT issue FROM {} WHERE id = $1 AND issue <> 'null'",
                    self.db.table("issues")
                ),
                &[&id],
            )
            .await
            .map_err(db)?;
        row.map(|row| decode_column(&row, 0)).transpose()
    }

    async fn issues(&self, source: Option<&str>) -> Result<Vec<Issue>, StoreError> {
        let client = self.db.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT issue FROM {} WHERE issue <> 'null' AND ($1::text IS NULL OR source = $1) ORDER BY id",
                    self.db.table("issues")
                ),
                &[&source],
            )
            .await
            .map_err(db)?;
        rows.into_iter().map(|row| decode_column(&row, 0)).collect()
    }

    async fn modify(
        &self,
        id: &str,
        change: &(dyn for<'i> Fn(&'i Issue) -> Option<Issue> + Send + Sync),
    ) -> Result<Option<Issue>, StoreError> {
        let mut client = self.db.client().await?;
        let tx = client.transaction().await.map_err(db)?;
        let table = self.db.table("issues");
        let Some(row) = tx
            .query_opt(
                &format!("SELECT issue FROM {table} WHERE id = $1 AND issue <> 'null' FOR UPDATE"),
                &[&id],
            )
            .await
            .map_err(db)?
        else {
            return Ok(None);
        };
        let issue: Issue = decode_column(&row, 0)?;
        let Some(changed) = change(&issue) else {
            return Ok(Some(issue));
        };
        tx.execute(
            &format!("UPDATE {table} SET issue = $2 WHERE id = $1"),
            &[&id, &serde_json::to_value(&changed)?],
        )
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(Some(changed))
    }
}
