//! The A2A server as a library: the store, the runtime with its skills, the gateway with
//! its auth gate and push delivery, wired from one [`AppConfig`] as `fundi serve` does,
//! served on a listener the caller bound until the caller's token is canceled.
//!
//! ```no_run
//! # async fn run(my_skill: impl fundi_runtime::Skill) -> Result<(), fundi::ServerError> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! fundi::Server::builder()
//!     .config(fundi::config::AppConfig::default())
//!     .skill(my_skill)
//!     .serve(listener, shutdown)
//!     .await
//! # }
//! ```

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use fundi_gateway::{AppState, Authenticator, ConfiguredScopes, McpSessionLimits, PushService};
use fundi_ops::inbox::Inbox;
use fundi_ops::schedules::Scheduler;
use fundi_peers::DelegateSkill;
use fundi_peers::signature::CardKey;
use fundi_runtime::{Runtime, RuntimeError, RuntimeHandle, Skill, StoreError};
use fundi_skills::heal::RuntimeLink;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::AppConfig;
use skills::{built_in_skills, peer_directory};
use stores::open_store;

mod observed;
mod skills;
mod stores;

/// Why the server could not start, or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// A setting is not acceptable; the text names it.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A part of the gateway could not be set up from its settings (the authenticator,
    /// push delivery).
    #[error("invalid configuration: {0}")]
    Setup(#[from] fundi_gateway::SetupError),
    /// Another process (another fundi) holds the store's directory.
    #[error(
        "another fundi is using the data directory {path} (its store is locked): stop \
         that one, or give this one another --data-dir"
    )]
    DataDirInUse {
        /// The directory.
        path: std::path::PathBuf,
    },
    /// The store could not be opened.
    #[error("opening the store in {path}: {source}")]
    OpenStore {
        /// Where it is.
        path: std::path::PathBuf,
        /// Why.
        source: StoreError,
    },
    /// The PostgreSQL store could not be opened (reached, or migrated).
    #[error("opening the store in PostgreSQL (schema {schema}): {source}")]
    OpenDatabase {
        /// The schema.
        schema: String,
        /// Why.
        source: StoreError,
    },
    /// The store failed (resuming push deliveries, the final flush).
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// The runtime could not start.
    #[error("runtime: {0}")]
    Runtime(#[from] RuntimeError),
    /// Serving failed (the listener, a socket).
    #[error("serving: {0}")]
    Io(#[from] std::io::Error),
}

/// The A2A server; see [`Server::builder`].
#[derive(Debug)]
pub struct Server;

impl Server {
    /// A server with the default config and the built-in skills it enables.
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            config: AppConfig::default(),
            skills: Vec::new(),
            routes: Router::new(),
            started: None,
            card_key: None,
            telemetry: false,
        }
    }
}

/// Collects the config, skills and extra routes, then serves.
pub struct ServerBuilder {
    config: AppConfig,
    skills: Vec<Arc<dyn Skill>>,
    routes: Router,
    started: Option<OnStarted>,
    card_key: Option<(CardKey, Vec<serde_json::Value>)>,
    /// Install logging and telemetry from the config while serving.
    telemetry: bool,
}

/// What [`ServerBuilder::on_started`] runs.
type OnStarted = Box<dyn FnOnce(&RuntimeHandle) + Send>;

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("skills", &self.skills.len())
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// The settings (every field of `config/fundi.toml`). `server.bind` is not used:
    /// the caller binds the listener. Static tokens must be given in `auth`: only
    /// `fundi serve` makes a local pair.
    pub fn config(mut self, config: AppConfig) -> Self {
        self.config = config;
        self
    }

    /// Signs the agent card with `key`, publishing it and `retired` (public JWKs of the
    /// keys it replaced) at `/.well-known/jwks.json`.
    pub fn card_key(mut self, key: CardKey, retired: Vec<serde_json::Value>) -> Self {
        self.card_key = Some((key, retired));
        self
    }

    /// Serves this skill beside the built-in ones `skills.enabled` names.
    pub fn skill(mut self, skill: impl Skill) -> Self {
        self.skills.push(Arc::new(skill));
        self
    }

    /// Routes served beside A2A's (the Prometheus `/metrics` of `fundi serve`, say).
    pub fn routes(mut self, routes: Router) -> Self {
        self.routes = self.routes.merge(routes);
        self
    }

    /// Called once the runtime has started (recovery done) and before the first
    /// request is served.
    pub fn on_started(mut self, started: impl FnOnce(&RuntimeHandle) + Send + 'static) -> Self {
        self.started = Some(Box::new(started));
        self
    }

    /// Serves A2A on `listener` until `shutdown` is canceled (`observed.rs` wraps it
    /// in logging and telemetry when asked).
    async fn serve_configured(
        self,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) -> Result<(), ServerError> {
        let config = self.config;
        config
            .validate()
            .map_err(|e| ServerError::Config(format!("{e:#}")))?;
        let stores = open_store(&config).await?;
        let auth = Authenticator::from_config(&config.auth)?.with_grants(stores.grants.clone());
        let mut builder = Runtime::builder()
            .shared_store(stores.tasks.clone())
            .config(config.runtime.clone());
        let inbox = config
            .skills
            .enabled
            .iter()
            .any(|s| s == "inbox")
            .then(Inbox::new);
        let peers = peer_directory(&config, stores.peers.clone()).await?;
        // The heal skill and loop call the runtime once it runs.
        let heal_link = RuntimeLink::new();
        let local = listener.local_addr()?;
        // A chaos run's proxy never takes this server's own address.
        for skill in built_in_skills(&config, &stores, inbox.as_ref(), &heal_link, &[local])? {
            builder = builder.shared_skill(skill);
        }
        if config.skills.enabled.iter().any(|s| s == "delegate") {
            builder = builder.skill(DelegateSkill::new(
                peers.clone(),
                config.skills.delegate.clone(),
            ));
        }
        for skill in self.skills {
            builder = builder.shared_skill(skill);
        }
        let runtime = builder.start().await?;
        heal_link.set(&runtime);
        let retention = config
            .store
            .retention()
            .map_err(|e| ServerError::Config(format!("{e:#}")))?;
        if let Some(kept) = retention {
            crate::retention::start(runtime.clone(), kept, shutdown.clone());
        }
        let approval_timeout = Duration::from_secs(config.runtime.approval_timeout_s);
        crate::approvals::start(runtime.clone(), approval_timeout, shutdown.clone());
        // Firings missed while the server was down run now, once per schedule.
        let scopes = ConfiguredScopes::from_config(&config.auth).with_grants(stores.grants.clone());
        let scheduler = Scheduler::new(runtime.clone(), stores.schedules, Arc::new(scopes));
        scheduler.start(shutdown.clone());

        let public_url = config
            .gateway
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{local}"));
        let listening = crate::limits::listening(&config.gateway);
        let mut state = AppState::new(
            runtime.clone(),
            crate::limits::fitted_gateway(&config),
            auth,
            &public_url,
            shutdown.clone(),
        )
        .with_issues(stores.issues.clone())
        .with_schedules(scheduler)
        .with_grants(stores.grants)
        .with_audit(stores.audit)
        .with_chaos_events(stores.chaos)
        .with_access_requests(&config.friends, stores.access)
        .map_err(ServerError::Config)?;
        if let Some(inbox) = inbox {
            state = state.with_inbox(inbox);
        }
        if let Some((key, retired)) = self.card_key {
            state = state.with_card_key(key, retired);
        }
        // Several nodes on one database: a peer another node adds is read from the store.
        // One process alone changes its peers only through its own directory.
        let several_nodes = config
            .store
            .postgres_lease()
            .map_err(|e| ServerError::Config(format!("{e:#}")))?
            .is_some();
        if several_nodes {
            crate::peers::keep_fresh(peers.clone(), shutdown.clone());
        }
        state = state.with_peers(peers);
        if config.mcp.enabled {
            // The tools call this server's own /a2a with the MCP request's credentials.
            let mut own = local;
            if own.ip().is_unspecified() {
                own.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
            }
            let fundi = fundi_mcp::Client::new(
                &format!("http://{own}"),
                "the MCP client's bearer token and user token are refused by this server",
            );
            let credentials = fundi_mcp::CredentialSource::Forwarded {
                user_header: config.auth.user_header.clone(),
            };
            let tools = fundi_mcp::FundiTools::new(fundi, credentials, config.mcp.settings());
            let limits = McpSessionLimits {
                max_per_user: config.mcp.max_sessions_per_user,
                idle_timeout: Duration::from_secs(config.mcp.session_idle_timeout_s),
            };
            let service = fundi_mcp::http_service(tools, shutdown.clone(), limits.idle_timeout);
            state = state.with_mcp(Router::new().fallback_service(service), limits);
        }
        let mut push = None;
        if config.push.enabled {
            let service = Arc::new(PushService::new(
                runtime.clone(),
                stores.push,
                config.push.clone(),
                shutdown.clone(),
            )?);
            if let Some(standing) = runtime.standing() {
                service.follow_standing(standing);
            }
            state = state.with_push(service.clone());
            push = Some(service);
        }
        if let Some(started) = self.started {
            started(&runtime);
        }
        // gRPC on a port of its own: HTTP/2 without TLS there, its address on the card.
        let grpc = match &config.gateway.grpc_bind {
            Some(bind) if config.gateway.grpc => {
                let listener = TcpListener::bind(bind).await.map_err(|e| {
                    ServerError::Config(format!("gateway.grpc-bind {bind:?} cannot be bound: {e}"))
                })?;
                let address = listener.local_addr()?;
                state = state.with_grpc_address(&address.to_string());
                let grpc_listening = fundi_gateway::Listening {
                    http2: true,
                    ..listening
                };
                tracing::info!(%address, "gRPC listening");
                let app = fundi_gateway::grpc_app(state.clone());
                Some(tokio::spawn(fundi_gateway::serve(
                    listener,
                    app,
                    shutdown.clone(),
                    grpc_listening,
                )))
            }
            _ => None,
        };
        // The web console beside the A2A routes, its sessions shared by the nodes.
        let pages = match config.gateway.console {
            true => fundi_console::Console::new(state.clone())
                .with_sessions(stores.sessions)
                .router(),
            false => Router::new(),
        };
        let server = tokio::spawn(fundi_gateway::serve(
            listener,
            fundi_gateway::app_with(state, pages).merge(self.routes),
            shutdown.clone(),
            listening,
        ));
        tracing::info!(%local, %public_url, "listening");
        // Read once the server serves: a million deliveries to look at do not hold it up.
        if let Some(push) = push {
            push.resume();
        }

        shutdown.cancelled().await;
        tracing::info!("shutting down: no new requests; running tasks get the grace period");
        let grace = Duration::from_millis(config.server.shutdown_grace_ms);
        runtime.shutdown(grace).await;
        for server in std::iter::once(server).chain(grpc) {
            match tokio::time::timeout(grace, server).await {
                Ok(Ok(served)) => served?,
                Ok(Err(e)) => return Err(ServerError::Io(std::io::Error::other(e))),
                Err(_) => {
                    tracing::warn!("requests still open after the grace period; leaving them");
                }
            }
        }
        if let Some(sled) = stores.sled {
            sled.flush().await?;
        }
        tracing::info!("stopped");
        Ok(())
    }
}
