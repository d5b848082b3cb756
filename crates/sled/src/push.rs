//! `PushStore` on sled: a tree of its own, written with single-key operations (sled
//! batches would take its process-wide lock, see `store`). The order of the writes
//! keeps a crash harmless: a config is written last and deleted first, and whatever it
//! leaves behind (a cursor, an unfinished mark) is ignored without its config.
//!
//! | key                        | value        |
//! |----------------------------|--------------|
//! | `c` task id `\0` config id | `PushConfig` |
//! | `k` task id `\0` config id | `PushCursor` |
//! | `u` task id `\0` config id | (empty): delivery not finished |

use async_trait::async_trait;

use fundi_runtime::store::StoreError;
use fundi_runtime::store::{PushConfig, PushCursor, PushEntry, PushStore};

use crate::SledStore;
use fundi_runtime::model::TaskId;

fn key(kind: u8, task: &TaskId, id: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(2 + task.as_str().len() + id.len());
    key.push(kind);
    key.extend_from_slice(task.as_str().as_bytes());
    key.push(0);
    key.extend_from_slice(id.as_bytes());
    key
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, StoreError> {
    Ok(serde_json::from_slice(bytes)?)
}

/// Removes the task's push configs, then their cursors and marks (the config first,
/// as a delete does).
pub(crate) fn remove_of(tree: &sled::Tree, task: &TaskId) -> Result<(), StoreError> {
    for kind in [b'c', b'k', b'u'] {
        let prefix = key(kind, task, "");
        for item in tree.scan_prefix(&prefix).keys() {
            tree.remove(item.map_err(StoreError::engine)?)
                .map_err(StoreError::engine)?;
        }
    }
    Ok(())
}

fn read_cursor(
    tree: &sled::Tree,
    task: &TaskId,
    id: &str,
) -> Result<Option<PushCursor>, StoreError> {
    tree.get(key(b'k', task, id))
        .map_err(StoreError::engine)?
        .map(|bytes| decode(&bytes))
        .transpose()
}

#[async_trait]
impl PushStore for SledStore {
    async fn put_config(&self, config: &PushConfig, start_after: u64) -> Result<(), StoreError> {
        let (task, id) = (&config.task_id, config.id.as_str());
        // A replaced config keeps its cursor; a deleted one's leftovers are not reused.
        let existing = match self
            .push
            .contains_key(key(b'c', task, id))
            .map_err(StoreError::engine)?
        {
            true => read_cursor(&self.push, task, id)?,
            false => None,
        };
        let cursor = existing.unwrap_or(PushCursor {
            delivered_seq: start_after,
            ..PushCursor::default()
        });
        let tree = &self.push;
        if !cursor.finished {
            tree.insert(key(b'u', task, id), &[][..])
                .map_err(StoreError::engine)?;
        }
        tree.insert(key(b'k', task, id), serde_json::to_vec(&cursor)?)
            .map_err(StoreError::engine)?;
        tree.insert(key(b'c', task, id), serde_json::to_vec(config)?)
            .map_err(StoreError::engine)?;
        self.flush_if_sync().await
    }

    async fn config(&self, task: &TaskId, id: &str) -> Result<Option<PushConfig>, StoreError> {
        self.push
            .get(key(b'c', task, id))
            .map_err(StoreError::engine)?
            .map(|bytes| decode(&bytes))
            .transpose()
    }

    async fn configs(&self, task: &TaskId) -> Result<Vec<PushConfig>, StoreError> {
        let prefix = key(b'c', task, "");
        self.push
            .scan_prefix(prefix)
            .map(|item| decode(&item.map_err(StoreError::engine)?.1))
            .collect()
    }

    async fn delete_config(&self, task: &TaskId, id: &str) -> Result<bool, StoreError> {
        let tree = &self.push;
        let existed = tree
            .remove(key(b'c', task, id))
            .map_err(StoreError::engine)?
            .is_some();
        tree.remove(key(b'k', task, id))
            .map_err(StoreError::engine)?;
        tree.remove(key(b'u', task, id))
            .map_err(StoreError::engine)?;
        self.flush_if_sync().await?;
        Ok(existed)
    }

    async fn cursor(&self, task: &TaskId, id: &str) -> Result<Option<PushCursor>, StoreError> {
        read_cursor(&self.push, task, id)
    }

    async fn set_cursor(
        &self,
        task: &TaskId,
        id: &str,
        cursor: &PushCursor,
    ) -> Result<(), StoreError> {
        // A deleted config stays deleted. (Not atomic with a concurrent delete; the
        // delete is the one that flushes, and a stray cursor without a config is inert.)
        if !self
            .push
            .contains_key(key(b'c', task, id))
            .map_err(StoreError::engine)?
        {
            return Ok(());
        }
        let tree = &self.push;
        tree.insert(key(b'k', task, id), serde_json::to_vec(cursor)?)
            .map_err(StoreError::engine)?;
        if cursor.finished {
            tree.remove(key(b'u', task, id))
                .map_err(StoreError::engine)?;
        } else {
            tree.insert(key(b'u', task, id), &[][..])
                .map_err(StoreError::engine)?;
        }
        Ok(())
    }

    async fn unfinished(&self) -> Result<Vec<PushEntry>, StoreError> {
        let mut entries = Vec::new();
        for item in self.push.scan_prefix(b"u") {
            let (k, _) = item.map_err(StoreError::engine)?;
            let Some(zero) = k.iter().position(|b| *b == 0) else {
                continue;
            };
            let task = TaskId::from(String::from_utf8_lossy(&k[1..zero]).into_owned());
            let id = String::from_utf8_lossy(&k[zero + 1..]).into_owned();
            if let Some(config) = self.config(&task, &id).await? {
                let cursor = read_cursor(&self.push, &task, &id)?.unwrap_or_default();
                // A crash between writing a finished cursor and clearing its mark.
                if !cursor.finished {
                    entries.push(PushEntry { config, cursor });
                }
            }
        }
        Ok(entries)
    }
}
