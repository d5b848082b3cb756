//! `fundi serve`: the config, logging and telemetry, local credentials, signals and
//! the exit watchdog around the library's [`fundi::Server`].

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use fundi::config::AppConfig;
use fundi::telemetry;
use fundi::{Server, shutdown_signal};
use fundi_gateway::AuthMode;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::card_keys;
use crate::cli::ServeArgs;
use crate::credentials;

/// A line on stdout for the person or script that started the server; a stdout nobody
/// reads any more (`fundi serve | head -1`) must not stop the server, as `println!`
/// would by panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

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
    if let Some(format) = args.log_format {
        config.log.format = format;
    }
    let (filter, format) = (config.log.filter.clone(), config.log.format);
    let telemetry = telemetry::init(config.telemetry.clone(), filter, format).await?;
    fundi::raise_descriptor_limit();
    fundi::turn_off_transparent_huge_pages();

    let bind = config.server.bind;
    let mut local_credentials = None;
    if config.auth.mode == AuthMode::Static && config.auth.has_no_static_tokens() {
        let path = credentials::install_local(&mut config.auth, &config.store.path)?;
        say!("fundi credentials in {}", path.display());
        // The client commands look in ./data by default: say how they find these.
        if credentials::path_in(Path::new("data")) != path {
            say!(
                "fundi client commands: FUNDI_CREDENTIALS={} fundi list",
                path.display()
            );
        }
        local_credentials = Some(path);
    }
    let card_key = match config.card_signing.enabled {
        true => {
            let path = card_keys::path(&config, &config.store.path);
            Some(card_keys::load_or_create(&config, &path)?)
        }
        false => None,
    };
    let console = config.gateway.console;
    let listener = TcpListener::bind(bind)
        .await
        .with_context(|| format!("binding {bind}"))?;
    let local = listener.local_addr()?;
    let shutdown = CancellationToken::new();
    let stop = shutdown_signal().context("installing the signal handlers")?;
    let grace = Duration::from_millis(config.server.shutdown_grace_ms);
    let store = describe_store(&config.store);
    let stopping = shutdown.clone();
    let mut builder = Server::builder();
    if let Some((key, retired)) = card_key {
        builder = builder.card_key(key, retired);
    }
    let server = builder
        .config(config)
        .routes(telemetry.routes())
        .on_started(move |runtime| {
            say!("fundi store: {store}");
            let skills: Vec<&str> = runtime.skills().iter().map(|c| c.id.as_str()).collect();
            say!("fundi skills: {}", skills.join(", "));
            // Tests and scripts read this line to find the port when binding port 0.
            say!("fundi listening on http://{local}");
            if let (true, Some(path)) = (console, local_credentials) {
                tokio::spawn(print_sign_in_link(local, path, stopping));
            }
        })
        .serve(listener, shutdown.clone());
    tokio::pin!(server);
    tokio::select! {
        served = &mut server => served?,
        () = stop => {
            shutdown.cancel();
            exit_if_stuck(grace + SHUTDOWN_MARGIN);
            server.await?;
        }
    }
    let logs = telemetry.shutdown(TELEMETRY_FLUSH).await;
    drop(logs);
    Ok(())
}

/// The store in a few words, for the console.
fn describe_store(store: &fundi::config::StoreConfig) -> String {
    use fundi::config::{DurabilityMode, StoreKind};
    match (store.kind, store.durability) {
        (StoreKind::Memory, _) => "memory (nothing is kept after the process ends)".into(),
        (StoreKind::Postgres, _) => match &store.postgres.node_id {
            None => format!(
                "PostgreSQL, schema {} (each change committed before anyone is told)",
                store.postgres.schema
            ),
            Some(node) => format!(
                "PostgreSQL, schema {}, as node {node} of several (each change committed \
                 before anyone is told; leases of {})",
                store.postgres.schema, store.postgres.lease_time
            ),
        },
        (StoreKind::Sled, DurabilityMode::Sync) => {
            format!(
                "sled in {} (sync: on disk before anyone is told)",
                store.path.display()
            )
        }
        (StoreKind::Sled, DurabilityMode::Batched) => format!(
            "sled in {} (batched: up to {} ms of changes lost in a crash)",
            store.path.display(),
            store.flush_window_ms
        ),
    }
}

/// Prints a one-time link to the web console for the local user, as notebook servers
/// do: the server makes it as it makes one for `fundi console`, asked over loopback
/// with the local credentials.
async fn print_sign_in_link(
    local: std::net::SocketAddr,
    credentials: std::path::PathBuf,
    stopping: CancellationToken,
) {
    let made = async {
        let pair = credentials::read(&credentials)?;
        let loopback = std::net::SocketAddr::new(
            match local.ip().is_unspecified() {
                true => std::net::Ipv4Addr::LOCALHOST.into(),
                false => local.ip(),
            },
            local.port(),
        );
        let answer: serde_json::Value = reqwest::Client::new()
            .post(format!("http://{loopback}/console/sign-in-links"))
            .bearer_auth(pair.token)
            .header(pair.user_header, pair.user_token)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        anyhow::Ok(answer["url"].as_str().unwrap_or_default().to_owned())
    };
    let made = tokio::select! {
        biased;
        () = stopping.cancelled() => return,
        made = made => made,
    };
    match made {
        Ok(url) => say!(
            "fundi console: {url} (signs in once, within ten minutes; `fundi console` makes another)"
        ),
        // A server told to stop at once refuses the request: nothing worth a warning.
        Err(_) if stopping.is_cancelled() => {}
        Err(error) => tracing::warn!(%error, "no console sign-in link could be made"),
    }
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
