//! The servers a run measures: each fundi binary's (sled `sync`, sled `batched`, the
//! memory store, PostgreSQL when asked) and their URLs beside the baselines'.

use crate::server::{Credentials, Server};
use crate::workloads;

pub(crate) struct Urls {
    pub(crate) bare: String,
    pub(crate) sled: String,
    pub(crate) rust_sdk: String,
    pub(crate) rust_sdk_grpc: String,
    pub(crate) main: FundiUrls,
    pub(crate) compare: Option<FundiUrls>,
}

/// The servers of one fundi binary.
pub(crate) struct FundiUrls {
    pub(crate) sync: String,
    pub(crate) batched: String,
    pub(crate) memory: String,
    pub(crate) postgres: Option<String>,
    /// Two nodes on one schema of their own.
    pub(crate) nodes: Vec<String>,
    pub(crate) existing_task: String,
}

/// One fundi binary's three servers (sled `sync`, sled `batched`, memory store).
pub(crate) struct FundiServers {
    pub(crate) sync: Server,
    pub(crate) batched: Server,
    pub(crate) memory: Server,
    pub(crate) postgres: Option<Server>,
    /// Two nodes on one schema (`{schema}_nodes`), with `--postgres-url`.
    pub(crate) nodes: Vec<Server>,
}

impl FundiServers {
    pub(crate) fn start(
        binary: &std::path::Path,
        dir: &std::path::Path,
        credentials: &Credentials,
        postgres: Option<(&str, &str)>,
    ) -> anyhow::Result<FundiServers> {
        let start = |name: &str, store: &str, durability: &str| {
            Server::start(binary, &dir.join(name), store, durability, credentials)
        };
        Ok(FundiServers {
            sync: start("sync", "sled", "sync")?,
            batched: start("batched", "sled", "batched")?,
            memory: start("memory", "memory", "sync")?,
            postgres: match postgres {
                Some((url, schema)) => Some(Server::start_postgres(
                    binary,
                    &dir.join("postgres"),
                    url,
                    schema,
                    None,
                    credentials,
                )?),
                None => None,
            },
            nodes: match postgres {
                Some((url, schema)) => ["a", "b"]
                    .into_iter()
                    .map(|node| {
                        Server::start_postgres(
                            binary,
                            &dir.join(format!("node-{node}")),
                            url,
                            &format!("{schema}_nodes"),
                            Some(node),
                            credentials,
                        )
                    })
                    .collect::<anyhow::Result<_>>()?,
                None => Vec::new(),
            },
        })
    }

    pub(crate) async fn urls(&self, client: &reqwest::Client) -> anyhow::Result<FundiUrls> {
        Ok(FundiUrls {
            existing_task: workloads::create_task(client, &self.sync.url).await?,
            sync: self.sync.url.clone(),
            batched: self.batched.url.clone(),
            memory: self.memory.url.clone(),
            postgres: self.postgres.as_ref().map(|p| p.url.clone()),
            nodes: self.nodes.iter().map(|n| n.url.clone()).collect(),
        })
    }
}
