//! What every handler shares.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::FromRef;
use axum::http::{HeaderMap, Uri};
use fundi_ops::access::AccessRequestStore;
use fundi_ops::audit::AuditLog;
use fundi_ops::chaos::ChaosLog;
use fundi_ops::grants::GrantStore;
use fundi_ops::inbox::Inbox;
use fundi_ops::issues::IssueStore;
use fundi_ops::schedules::Scheduler;
use fundi_runtime::TaskService;
use tokio_util::sync::CancellationToken;

use crate::access::config::FriendsConfig;
use crate::access::desk::AccessDesk;
use crate::admin::grant_desk::GrantDesk;
use crate::auth::Authenticator;
use crate::body::BodyLimits;
use crate::card::{CardFacts, Cards};
use crate::config::GatewayConfig;
use crate::error::ApiError;
use crate::guard::RequestGuard;
use crate::mcp_sessions::{McpEndpoint, McpSessionLimits};
use crate::push::PushService;
use crate::rate_limit::UserRateLimit;
use crate::stream_slots::{StreamSlot, StreamSlots};
use fundi_peers::signature::CardKey;

/// The gateway's state: the runtime it fronts, its settings, and the prepared card.
#[derive(Clone)]
pub struct AppState {
    pub(crate) runtime: Arc<dyn TaskService>,
    pub(crate) config: Arc<GatewayConfig>,
    pub(crate) cards: Arc<Cards>,
    /// What the cards are made from, kept to make them again (`with_push`).
    facts: Arc<CardInputs>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) auth: Arc<Authenticator>,
    pub(crate) guard: Arc<RequestGuard>,
    pub(crate) rate_limit: Arc<UserRateLimit>,
    /// The deadline and shared budget of request bodies.
    pub(crate) bodies: Arc<BodyLimits>,
    /// The event streams open, per user and per task.
    pub(crate) streams: Arc<StreamSlots>,
    /// Push notifications, when enabled.
    pub(crate) push: Option<Arc<PushService>>,
    /// What operators, approvers and local agents use beyond A2A (one pointer, so that
    /// the per-request clone of the state stays cheap).
    pub(crate) operators: Arc<Operators>,
    /// The JWK Set of the keys that sign the cards, serialized, when they are signed.
    pub(crate) jwks: Option<Arc<String>>,
}

// Sub-states a handler names instead of the whole state, when that is all it needs.

impl FromRef<AppState> for Arc<GatewayConfig> {
    fn from_ref(state: &AppState) -> Arc<GatewayConfig> {
        state.config.clone()
    }
}

impl FromRef<AppState> for Arc<Cards> {
    fn from_ref(state: &AppState) -> Arc<Cards> {
        state.cards.clone()
    }
}

/// The JWK Set of the keys that sign the cards, serialized, when they are signed.
#[derive(Clone)]
pub(crate) struct Jwks(pub(crate) Option<Arc<String>>);

impl FromRef<AppState> for Jwks {
    fn from_ref(state: &AppState) -> Jwks {
        Jwks(state.jwks.clone())
    }
}

/// The base URL clients reach this server at, as a sub-state.
#[derive(Clone)]
pub(crate) struct PublicUrl(pub(crate) Arc<str>);

impl FromRef<AppState> for PublicUrl {
    fn from_ref(state: &AppState) -> PublicUrl {
        PublicUrl(state.facts.public_url.clone())
    }
}

impl FromRef<AppState> for Arc<dyn TaskService> {
    fn from_ref(state: &AppState) -> Arc<dyn TaskService> {
        state.runtime.clone()
    }
}

/// The services beside A2A, each present when configured.
#[derive(Clone, Default)]
pub(crate) struct Operators {
    /// Findings of the auditing skills, for operators.
    pub(crate) issues: Option<Arc<dyn IssueStore>>,
    /// Scheduled runs, for operators.
    pub(crate) schedules: Option<Scheduler>,
    /// Grants, for operators (the authenticator reads the same store).
    pub(crate) grants: Option<Arc<GrantDesk>>,
    /// Where admin actions are recorded.
    pub(crate) audit: Option<Arc<dyn AuditLog>>,
    /// The faults chaos runs injected, for operators.
    pub(crate) chaos: Option<Arc<dyn ChaosLog>>,
    /// Proposals waiting for a local agent (the inbox skill), when it is enabled.
    pub(crate) inbox: Option<Inbox>,
    /// The peers this server delegates to, when any is configured.
    pub(crate) peers: Option<Arc<fundi_peers::PeerDirectory>>,
    /// The MCP endpoint's service and its sessions, served at `/mcp` behind the gate.
    pub(crate) mcp: Option<McpEndpoint>,
    /// Requests for access by other agents, when identity providers are listed.
    pub(crate) access: Option<Arc<AccessDesk>>,
}

/// The inputs of the cards that outlive `AppState::new`.
#[derive(Clone)]
struct CardInputs {
    public_url: Arc<str>,
    skills: Vec<fundi_runtime::SkillCard>,
    user_header: String,
    /// The key that signs the cards, when they are signed.
    signer: Option<CardKey>,
    /// Whether push notifications are served.
    push: bool,
    /// The card's offer of requests for access, when they are served.
    access_requests: Option<serde_json::Value>,
    /// The address gRPC clients dial, when gRPC is served.
    grpc: Option<String>,
}

impl AppState {
    /// State for a gateway in front of `runtime` (a `RuntimeHandle`, or a fake in tests), admitting callers through `auth` and
    /// advertising `public_url`. Open streams end when `shutdown` is cancelled (so that
    /// graceful shutdown can finish).
    pub fn new(
        runtime: impl TaskService,
        config: GatewayConfig,
        auth: Authenticator,
        public_url: &str,
        shutdown: CancellationToken,
    ) -> AppState {
        let facts = CardInputs {
            public_url: public_url.into(),
            skills: runtime.skills().to_vec(),
            user_header: auth.user_header().to_owned(),
            signer: None,
            push: false,
            access_requests: None,
            grpc: match config.grpc {
                true => config
                    .grpc_public_address
                    .clone()
                    .or_else(|| crate::card::grpc_address(public_url)),
                false => None,
            },
        };
        let cards = facts.cards(&config);
        AppState {
            runtime: Arc::new(runtime),
            guard: Arc::new(RequestGuard::new(&config, public_url)),
            rate_limit: Arc::new(UserRateLimit::new(
                config.rate_limit_per_minute,
                config.rate_limit_burst,
            )),
            bodies: Arc::new(BodyLimits::new(
                config.max_buffered_body_bytes.max(config.max_body_bytes),
                Duration::from_millis(config.body_read_timeout_ms),
            )),
            streams: Arc::new(StreamSlots::new(
                config.max_streams_per_user,
                config.max_streams_per_task,
            )),
            config: Arc::new(config),
            cards: Arc::new(cards),
            facts: Arc::new(facts),
            shutdown,
            auth: Arc::new(auth),
            push: None,
            operators: Arc::default(),
            jwks: None,
        }
    }

    /// The base URL clients reach this server at.
    pub fn public_url(&self) -> &str {
        &self.facts.public_url
    }

    /// The runtime the gateway fronts.
    pub fn runtime(&self) -> &Arc<dyn TaskService> {
        &self.runtime
    }

    /// The gateway's settings.
    pub fn config(&self) -> &GatewayConfig {
        &self.config
    }

    /// Cancelled when the server shuts down: open streams end on it.
    pub fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// Refuses a request whose `Host` is not this server's (`gateway.allowed-hosts`).
    pub fn check_host(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), ApiError> {
        self.guard.check_host(headers, uri)
    }

    /// Counts a request of `user` against the per-user rate limit, refused past it.
    pub fn check_rate(&self, user: &str) -> Result<(), ApiError> {
        self.rate_limit.check(user).map_err(ApiError::rate_limited)
    }

    /// One of `user`'s open event streams (`gateway.max-streams-per-user`), held while
    /// the slot lives.
    pub fn stream_of_user(&self, user: &str) -> Result<StreamSlot, ApiError> {
        self.streams.for_user(user)
    }

    /// One of the open event streams of `task` (`gateway.max-streams-per-task`).
    pub fn stream_of_task(&self, task: &str) -> Result<StreamSlot, ApiError> {
        self.streams.for_task(task)
    }

    /// Findings of the auditing skills, when served.
    pub fn issues(&self) -> Option<&Arc<dyn IssueStore>> {
        self.operators.issues.as_ref()
    }

    /// Scheduled runs, when served.
    pub fn schedules(&self) -> Option<&Scheduler> {
        self.operators.schedules.as_ref()
    }

    /// Grants, when served.
    pub fn grants(&self) -> Option<&Arc<GrantDesk>> {
        self.operators.grants.as_ref()
    }

    /// Requests for access, when served.
    pub fn access_requests(&self) -> Option<&Arc<AccessDesk>> {
        self.operators.access.as_ref()
    }

    /// Push notifications, when served.
    pub fn push(&self) -> Option<&Arc<PushService>> {
        self.push.as_ref()
    }

    /// The key that signs the cards, when they are signed.
    pub(crate) fn card_signer(&self) -> Option<&CardKey> {
        self.facts.signer.as_ref()
    }

    /// The same state serving `GET /admin/issues` (scope `fundi:admin`) from `issues`.
    pub fn with_issues(mut self, issues: Arc<dyn IssueStore>) -> AppState {
        Arc::make_mut(&mut self.operators).issues = Some(issues);
        self
    }

    /// The same state serving `/admin/schedules` (scope `fundi:admin`) from `scheduler`.
    pub fn with_schedules(mut self, scheduler: Scheduler) -> AppState {
        Arc::make_mut(&mut self.operators).schedules = Some(scheduler);
        self
    }

    /// The same state serving `/admin/grants` (scope `fundi:admin`) from `grants`; give
    /// the authenticator the same store ([`Authenticator::with_grants`]) so that the
    /// grants admit their clients.
    pub fn with_grants(mut self, grants: Arc<dyn GrantStore>) -> AppState {
        Arc::make_mut(&mut self.operators).grants = Some(Arc::new(GrantDesk::new(grants)));
        self
    }

    /// The same state serving requests for access (`POST /access-requests`, and
    /// `/admin/access-requests` for approvers) as `friends` says, kept in `store`; an
    /// approval vends a grant into the store of [`AppState::with_grants`], which must be
    /// called first. Nothing changes when `friends` lists no identity provider.
    pub fn with_access_requests(
        mut self,
        friends: &FriendsConfig,
        store: Arc<dyn AccessRequestStore>,
    ) -> Result<AppState, String> {
        if !friends.enabled() {
            return Ok(self);
        }
        friends.validate()?;
        let grants = self.operators.grants.clone().ok_or(
            "requests for access need a grant store: call with_grants before with_access_requests",
        )?;
        let desk = AccessDesk::new(friends, self.public_url(), store, grants)?;
        Arc::make_mut(&mut self.operators).access = Some(Arc::new(desk));
        let offer = serde_json::json!({
            "uri": fundi_peers::ACCESS_REQUESTS_EXTENSION,
            "description": "Ask for access: POST {card, scopes, reason, assertion} to \
                            params.url, the assertion a JWT of one of params.issuers for \
                            this agent; a person decides (docs/trust.md).",
            "params": {
                "url": format!("{}/access-requests", self.public_url().trim_end_matches('/')),
                "issuers": friends.issuers.values().map(|i| i.issuer.clone()).collect::<Vec<_>>(),
            },
        });
        Arc::make_mut(&mut self.facts).access_requests = Some(offer);
        self.cards = Arc::new(self.facts.cards(&self.config));
        Ok(self)
    }

    /// The same state serving `/inbox` (scope `fundi:inbox`) from `inbox`.
    pub fn with_inbox(mut self, inbox: Inbox) -> AppState {
        Arc::make_mut(&mut self.operators).inbox = Some(inbox);
        self
    }

    /// The same state serving `/peers` (scope `fundi:delegate`) from `peers`.
    pub fn with_peers(mut self, peers: Arc<fundi_peers::PeerDirectory>) -> AppState {
        Arc::make_mut(&mut self.operators).peers = Some(peers);
        self
    }

    /// The same state serving `mcp` (the MCP streamable HTTP service) at `/mcp`, behind
    /// the same Host, Origin and credential checks as `/a2a`; each session belongs to
    /// the caller that opened it, within `limits`.
    pub fn with_mcp(mut self, mcp: axum::Router, limits: McpSessionLimits) -> AppState {
        Arc::make_mut(&mut self.operators).mcp = Some(McpEndpoint::new(mcp, limits));
        self
    }

    /// The same state serving `GET /admin/chaos-events` (scope `fundi:admin`) from `log`.
    pub fn with_chaos_events(mut self, log: Arc<dyn ChaosLog>) -> AppState {
        Arc::make_mut(&mut self.operators).chaos = Some(log);
        self
    }

    /// The same state recording admin actions in `log` and serving `/admin/audit`.
    pub fn with_audit(mut self, log: Arc<dyn AuditLog>) -> AppState {
        Arc::make_mut(&mut self.operators).audit = Some(log);
        self
    }

    /// The same state serving the push-config methods and delivering through `push`;
    /// the cards then declare `pushNotifications: true`.
    pub fn with_push(mut self, push: Arc<PushService>) -> AppState {
        Arc::make_mut(&mut self.facts).push = true;
        self.cards = Arc::new(self.facts.cards(&self.config));
        self.push = Some(push);
        self
    }

    /// The same state listing gRPC on its card at `address` (where `gateway.grpc-bind`
    /// was bound), unless `gateway.grpc-public-address` names another.
    pub fn with_grpc_address(mut self, address: &str) -> AppState {
        if self.config.grpc && self.config.grpc_public_address.is_none() {
            Arc::make_mut(&mut self.facts).grpc = Some(address.to_owned());
            self.cards = Arc::new(self.facts.cards(&self.config));
        }
        self
    }

    /// The same state signing its cards with `key` and publishing at
    /// `/.well-known/jwks.json` its public half, and `retired`'s (the public JWKs of keys
    /// that signed before it, kept for verifiers with a cached card).
    pub fn with_card_key(mut self, key: CardKey, retired: Vec<serde_json::Value>) -> AppState {
        let mut keys = vec![key.public_jwk()];
        keys.extend(retired);
        self.jwks = Some(Arc::new(serde_json::json!({"keys": keys}).to_string()));
        Arc::make_mut(&mut self.facts).signer = Some(key);
        self.cards = Arc::new(self.facts.cards(&self.config));
        self
    }
}

impl CardInputs {
    fn cards(&self, config: &GatewayConfig) -> Cards {
        Cards::new(&CardFacts {
            config,
            public_url: &self.public_url,
            skills: &self.skills,
            user_header: &self.user_header,
            push: self.push,
            signer: self.signer.as_ref(),
            access_requests: self.access_requests.as_ref(),
            grpc: self.grpc.as_deref(),
        })
    }
}
