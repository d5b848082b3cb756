//! The server's stores, opened as `store.kind` says: in memory, sled in `store.path`,
//! or PostgreSQL; each record store beside the task store on the same engine.

use std::sync::Arc;
use std::time::Duration;

use fundi_ops::access::{AccessRequestStore, MemoryAccessRequestStore};
use fundi_ops::audit::{AuditLog, MemoryAuditLog};
use fundi_ops::chaos::{ChaosLog, MemoryChaosLog};
use fundi_ops::grants::{GrantStore, MemoryGrantStore};
use fundi_ops::issues::{IssueStore, MemoryIssueStore};
use fundi_ops::peers::{MemoryPeerStore, PeerStore};
use fundi_ops::schedules::{MemoryScheduleStore, ScheduleStore};
use fundi_ops::sessions::{MemorySessionStore, SessionStore};
use fundi_postgres::{PostgresConfig, PostgresStore};
use fundi_runtime::store::PushStore;
use fundi_runtime::{MemoryStore, TaskStore};
use fundi_store_sled::{
    Durability, SledAccessRequestStore, SledAuditLog, SledChaosLog, SledGrantStore, SledIssueStore,
    SledPeerStore, SledScheduleStore, SledStore,
};

use super::ServerError;
use crate::config::{AppConfig, DurabilityMode, StoreKind};

/// The store as the runtime, push delivery and the skills take it, and the sled store
/// again for the final flush.
pub(super) struct Stores {
    pub(super) tasks: Arc<dyn TaskStore>,
    pub(super) push: Arc<dyn PushStore>,
    pub(super) issues: Arc<dyn IssueStore>,
    pub(super) schedules: Arc<dyn ScheduleStore>,
    pub(super) grants: Arc<dyn GrantStore>,
    pub(super) peers: Arc<dyn PeerStore>,
    pub(super) access: Arc<dyn AccessRequestStore>,
    pub(super) audit: Arc<dyn AuditLog>,
    pub(super) chaos: Arc<dyn ChaosLog>,
    /// The console's sessions: in memory, except on PostgreSQL, where every node
    /// reads them.
    pub(super) sessions: Arc<dyn SessionStore>,
    pub(super) sled: Option<Arc<SledStore>>,
}

pub(super) async fn open_store(config: &AppConfig) -> Result<Stores, ServerError> {
    let store = &config.store;
    match store.kind {
        StoreKind::Memory => {
            let memory = Arc::new(MemoryStore::new());
            Ok(Stores {
                tasks: memory.clone(),
                push: memory,
                issues: Arc::new(MemoryIssueStore::new()),
                schedules: Arc::new(MemoryScheduleStore::new()),
                grants: Arc::new(MemoryGrantStore::new()),
                peers: Arc::new(MemoryPeerStore::new()),
                access: Arc::new(MemoryAccessRequestStore::new()),
                sessions: Arc::new(MemorySessionStore::new()),
                audit: Arc::new(MemoryAuditLog::new()),
                chaos: Arc::new(MemoryChaosLog::new()),
                sled: None,
            })
        }
        StoreKind::Sled => {
            let durability = match store.durability {
                DurabilityMode::Sync => Durability::Sync,
                DurabilityMode::Batched => Durability::Batched {
                    window: Duration::from_millis(store.flush_window_ms),
                },
            };
            let cache = store.cache_mb * 1024 * 1024;
            let sled =
                SledStore::open_with_cache(&store.path, durability, cache).map_err(|source| {
                    let path = store.path.clone();
                    match source.is_locked() {
                        true => ServerError::DataDirInUse { path },
                        false => ServerError::OpenStore { path, source },
                    }
                })?;
            let sled = Arc::new(sled);
            Ok(Stores {
                tasks: sled.clone(),
                push: sled.clone(),
                issues: Arc::new(SledIssueStore::new(sled.clone())),
                schedules: Arc::new(SledScheduleStore::new(sled.clone())),
                grants: Arc::new(SledGrantStore::new(sled.clone())),
                peers: Arc::new(SledPeerStore::new(sled.clone())),
                access: Arc::new(SledAccessRequestStore::new(sled.clone()).map_err(|source| {
                    ServerError::OpenStore {
                        path: store.path.clone(),
                        source,
                    }
                })?),
                sessions: Arc::new(MemorySessionStore::new()),
                audit: Arc::new(SledAuditLog::new(sled.clone())),
                chaos: Arc::new(SledChaosLog::new(sled.clone())),
                sled: Some(sled),
            })
        }
        StoreKind::Postgres => {
            let settings = &store.postgres;
            let url = settings.url.clone().ok_or_else(|| {
                ServerError::Config("store.kind = \"postgres\" needs store.postgres.url".into())
            })?;
            let mut opened = PostgresConfig::new(url);
            opened.ca_file = settings.ca_file.clone();
            opened.schema = settings.schema.clone();
            opened.pool_size = settings.pool_size;
            opened.statements_at_once = settings.statements_at_once;
            opened.statement_timeout = store
                .postgres_statement_timeout()
                .map_err(|e| ServerError::Config(format!("{e:#}")))?;
            // One process per schema, or with a node id, per node id.
            opened.exclusive = true;
            opened.lease = store
                .postgres_lease()
                .map_err(|e| ServerError::Config(format!("{e:#}")))?;
            let postgres =
                PostgresStore::open(&opened)
                    .await
                    .map_err(|source| ServerError::OpenDatabase {
                        schema: settings.schema.clone(),
                        source,
                    })?;
            let postgres = Arc::new(postgres);
            Ok(Stores {
                tasks: postgres.clone(),
                push: postgres.clone(),
                issues: postgres.clone(),
                schedules: postgres.clone(),
                grants: postgres.clone(),
                peers: postgres.clone(),
                access: postgres.clone(),
                sessions: postgres.clone(),
                audit: postgres.clone(),
                chaos: postgres,
                sled: None,
            })
        }
    }
}
