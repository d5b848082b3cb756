//! `fundi doctor`: checks a store and lists the tasks set aside because their stored
//! data could not be decoded: a sled store while no server holds it, a PostgreSQL one
//! while its nodes run (read only), with who holds the unfinished tasks.

use anyhow::Context;
use fundi_runtime::TaskStore;
use fundi_store_sled::{Durability, SledStore};

use crate::cli::DoctorArgs;
use fundi::config::{AppConfig, StoreKind};

pub(crate) async fn run(args: DoctorArgs) -> anyhow::Result<()> {
    let mut config = AppConfig::load(args.config.as_deref())?;
    if let Some(dir) = args.data_dir {
        config.store.path = dir;
    }
    if config.store.kind == StoreKind::Memory {
        println!("store.kind is memory: nothing is stored, nothing to check");
        return Ok(());
    }
    if config.store.kind == StoreKind::Postgres {
        return postgres(&config).await;
    }
    let path = &config.store.path;
    // Opening repairs and sets aside what it cannot read; reading the unfinished tasks
    // sets aside those whose records cannot be decoded, as a start of the server would.
    let store = SledStore::open(path, Durability::Sync).with_context(|| {
        format!(
            "opening the store in {} (is a fundi server running on it?)",
            path.display()
        )
    })?;
    let unfinished = store.active().await?.len();
    let quarantined = store.quarantined().await?;
    println!("store {}: {unfinished} unfinished tasks", path.display());
    report_set_aside(quarantined, "the store's quarantine tree");
    Ok(())
}

/// A PostgreSQL store, looked at while its nodes run (nothing is changed): who holds
/// the unfinished tasks, and the tasks set aside.
async fn postgres(config: &AppConfig) -> anyhow::Result<()> {
    let settings = &config.store.postgres;
    let url = settings
        .url
        .clone()
        .context("store.kind = \"postgres\" needs store.postgres.url")?;
    let mut inspected = fundi_postgres::PostgresConfig::new(url);
    inspected.ca_file = settings.ca_file.clone();
    inspected.schema = settings.schema.clone();
    inspected.pool_size = 1;
    inspected.statement_timeout = config.store.postgres_statement_timeout()?;
    let store = fundi_postgres::PostgresStore::inspect(&inspected)
        .await
        .with_context(|| format!("reading PostgreSQL schema {}", settings.schema))?;
    let holders = store.node_leases().await?;
    let unfinished: u64 = holders.iter().map(|h| h.tasks).sum();
    println!("schema {}: {unfinished} unfinished tasks", settings.schema);
    for holder in holders {
        let node = holder.node.as_deref().unwrap_or("(no node)");
        let expires = holder
            .expires
            .map(|at| at.to_rfc3339())
            .unwrap_or_else(|| "-".into());
        let state = match (holder.node.is_some(), holder.expired) {
            (false, _) => "held by nobody: the next node to start claims them",
            (true, true) => "its lease ran out: another node takes them over",
            (true, false) => "renewing",
        };
        println!(
            "  {node}: {} tasks, lease until {expires} ({state})",
            holder.tasks
        );
    }
    report_set_aside(store.quarantined().await?, "the quarantine tables");
    Ok(())
}

/// The tasks set aside, each with when and why; their raw data is kept in `kept_in`.
fn report_set_aside(quarantined: Vec<fundi_runtime::store::QuarantinedTask>, kept_in: &str) {
    if quarantined.is_empty() {
        println!("no task is set aside: every stored task can be read");
        return;
    }
    println!(
        "{} tasks set aside (their raw data is kept in {kept_in}):",
        quarantined.len()
    );
    for task in quarantined {
        let outcome = match task.failed {
            true => "ended failed",
            false => "removed from the tasks",
        };
        println!(
            "  {}  {}  {outcome}: {}",
            task.task_id,
            task.at.to_rfc3339(),
            task.reason
        );
    }
}
