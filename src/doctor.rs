//! `fundi doctor`: checks a store while no server holds it, and lists the tasks set
//! aside because their stored data could not be decoded.

use anyhow::Context;
use fundi_runtime::{Durability, SledStore, TaskStore};

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
        println!(
            "store.kind is postgres: PostgreSQL checks its own data; fundi doctor checks sled \
             stores"
        );
        return Ok(());
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
    if quarantined.is_empty() {
        println!("no task is set aside: every stored task can be read");
        return Ok(());
    }
    println!(
        "{} tasks set aside (their raw data is kept in the store's quarantine tree):",
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
    Ok(())
}
