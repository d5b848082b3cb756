//! `fundi serve`: config, store, runtime, gateway, and graceful shutdown.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use fundi_gateway::{AppState, AuthMode, Authenticator, PushService};
use fundi_runtime::issues::IssueStore;
use fundi_runtime::store::PushStore;
use fundi_runtime::{Durability, MemoryStore, Runtime, SledStore, TaskStore};
use fundi_skills::{A11yAuditSkill, EchoSkill, SecurityScanSkill};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::cli::ServeArgs;
use crate::config::{AppConfig, DurabilityMode, StoreKind};
use crate::{credentials, telemetry};

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let mut config = AppConfig::load(args.config.as_deref())?;
    if let Some(bind) = args.bind {
        config.server.bind = bind;
    }
    if let Some(dir) = args.data_dir {
        config.store.path = dir;
    }
    // The flags may have moved the bind address: check again.
    config.validate()?;
    let telemetry = telemetry::init(config.telemetry.clone(), config.log.filter.clone()).await?;

    let bind = config.server.bind;
    if config.auth.mode == AuthMode::Static && config.auth.has_no_static_tokens() {
        let path = credentials::install_local(&mut config.auth, &config.store.path)?;
        println!("fundi credentials in {}", path.display());
    }
    let auth = Authenticator::from_config(&config.auth).map_err(anyhow::Error::msg)?;

    let OpenedStore {
        shared,
        push,
        issues,
        sled,
    } = open_store(&config)?;
    let mut builder = Runtime::builder()
        .shared_store(shared)
        .config(config.runtime.clone());
    for skill in &config.skills.enabled {
        builder = match skill.as_str() {
            "echo" => builder.skill(EchoSkill::new(config.skills.echo.clone())),
            "security-scan" => builder.skill(
                SecurityScanSkill::new(config.skills.security_scan.clone(), issues.clone())
                    .map_err(anyhow::Error::msg)?,
            ),
            "a11y-audit" => builder.skill(
                A11yAuditSkill::new(config.skills.a11y_audit.clone(), issues.clone())
                    .map_err(anyhow::Error::msg)?,
            ),
            other => bail!("skills.enabled: unknown skill {other:?}"),
        };
    }
    let runtime = builder.start().await.context("starting the runtime")?;

    let listener = TcpListener::bind(bind)
        .await
        .with_context(|| format!("binding {bind}"))?;
    let local = listener.local_addr()?;
    let public_url = config
        .gateway
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{local}"));
    let shutdown = CancellationToken::new();
    let header_read_timeout = Duration::from_millis(config.gateway.header_read_timeout_ms);
    let mut state = AppState::new(
        runtime.clone(),
        config.gateway.clone(),
        auth,
        &public_url,
        shutdown.clone(),
    );
    state = state.with_issues(issues.clone());
    if config.push.enabled {
        let service =
            PushService::new(runtime.clone(), push, config.push.clone(), shutdown.clone())
                .map_err(anyhow::Error::msg)?;
        let resumed = service.resume().await.context("resuming push deliveries")?;
        tracing::info!(resumed, "push deliveries resumed");
        state = state.with_push(Arc::new(service));
    }
    let server = tokio::spawn(fundi_gateway::serve(
        listener,
        fundi_gateway::app(state).merge(telemetry.routes()),
        shutdown.clone(),
        header_read_timeout,
    ));
    let stop = shutdown_signal().context("installing the signal handlers")?;
    // Tests and scripts read this line to find the port when binding port 0.
    println!("fundi listening on http://{local}");
    tracing::info!(%local, %public_url, "listening");

    stop.await;
    tracing::info!("shutting down: no new requests; running tasks get the grace period");
    shutdown.cancel();
    let grace = Duration::from_millis(config.server.shutdown_grace_ms);
    exit_if_stuck(grace + SHUTDOWN_MARGIN);
    runtime.shutdown(grace).await;
    match tokio::time::timeout(grace, server).await {
        Ok(Ok(result)) => result.context("serving")?,
        Ok(Err(e)) => bail!("server task failed: {e}"),
        Err(_) => tracing::warn!("requests still open after the grace period; leaving them"),
    }
    if let Some(sled) = sled {
        sled.flush().await.context("flushing the store")?;
    }
    let logs = telemetry.shutdown(TELEMETRY_FLUSH).await;
    tracing::info!("stopped");
    drop(logs);
    Ok(())
}

/// Longest the last spans and metrics may take to be exported at exit.
const TELEMETRY_FLUSH: Duration = Duration::from_secs(3);

/// Time beyond the grace period that stopping may take before the process gives up.
const SHUTDOWN_MARGIN: Duration = Duration::from_secs(10);

/// A watchdog on its own OS thread (the async runtime may be what is stuck): if the
/// process has not exited by `limit`, it exits with status 2. Everything acknowledged is
/// already stored, and what did not finish is recovered at the next start.
fn exit_if_stuck(limit: Duration) {
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        eprintln!(
            "fundi: shutdown did not finish within {} s; exiting anyway",
            limit.as_secs()
        );
        std::process::exit(2);
    });
}

/// The store as the runtime takes it, and the sled store again for the final flush.
struct OpenedStore {
    shared: Arc<dyn TaskStore>,
    push: Arc<dyn PushStore>,
    issues: Arc<dyn IssueStore>,
    sled: Option<Arc<SledStore>>,
}

fn open_store(config: &AppConfig) -> anyhow::Result<OpenedStore> {
    let store = &config.store;
    match store.kind {
        StoreKind::Memory => {
            let memory = Arc::new(MemoryStore::new());
            Ok(OpenedStore {
                shared: memory.clone(),
                push: memory.clone(),
                issues: memory,
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
            let sled = Arc::new(
                SledStore::open_with_cache(&store.path, durability, store.cache_mb * 1024 * 1024)
                    .with_context(|| format!("opening the store in {}", store.path.display()))?,
            );
            Ok(OpenedStore {
                shared: sled.clone(),
                push: sled.clone(),
                issues: sled.clone(),
                sled: Some(sled),
            })
        }
    }
}

/// SIGINT or SIGTERM (Ctrl-C elsewhere). The handlers are installed here, when it is
/// made, not at its first poll: made before the "listening" line, a signal sent as soon
/// as that line is read shuts the server down gracefully instead of killing it.
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    Ok(async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    })
}
