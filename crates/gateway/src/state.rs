//! What every handler shares.

use std::sync::Arc;

use fundi_runtime::TaskService;
use fundi_runtime::issues::IssueStore;
use tokio_util::sync::CancellationToken;

use crate::auth::Authenticator;
use crate::card;
use crate::config::GatewayConfig;
use crate::guard::RequestGuard;
use crate::push::PushService;
use crate::rate_limit::UserRateLimit;

/// The gateway's state: the runtime it fronts, its settings, and the prepared card.
#[derive(Clone)]
pub struct AppState {
    pub(crate) runtime: Arc<dyn TaskService>,
    pub(crate) config: Arc<GatewayConfig>,
    pub(crate) card: Arc<CardBody>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) auth: Arc<Authenticator>,
    pub(crate) guard: Arc<RequestGuard>,
    pub(crate) rate_limit: Arc<UserRateLimit>,
    /// Push notifications, when enabled.
    pub(crate) push: Option<Arc<PushService>>,
    /// Findings of the auditing skills, for operators.
    pub(crate) issues: Option<Arc<dyn IssueStore>>,
}

/// The agent card, serialized once, with its ETag.
pub(crate) struct CardBody {
    pub(crate) json: String,
    pub(crate) etag: String,
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
        let card = card::agent_card(&config, public_url, runtime.skills(), &auth);
        AppState {
            runtime: Arc::new(runtime),
            guard: Arc::new(RequestGuard::new(&config, public_url)),
            rate_limit: Arc::new(UserRateLimit::new(
                config.rate_limit_per_minute,
                config.rate_limit_burst,
            )),
            config: Arc::new(config),
            card: Arc::new(CardBody::new(&card)),
            shutdown,
            auth: Arc::new(auth),
            push: None,
            issues: None,
        }
    }

    /// The same state serving `GET /admin/issues` (scope `fundi:admin`) from `issues`.
    pub fn with_issues(mut self, issues: Arc<dyn IssueStore>) -> AppState {
        self.issues = Some(issues);
        self
    }

    /// The same state serving the push-config methods and delivering through `push`;
    /// the card then declares `pushNotifications: true`.
    pub fn with_push(mut self, push: Arc<PushService>) -> AppState {
        let mut card: serde_json::Value =
            serde_json::from_str(&self.card.json).expect("the card is JSON");
        card["capabilities"]["pushNotifications"] = serde_json::Value::Bool(true);
        self.card = Arc::new(CardBody::new(&card));
        self.push = Some(push);
        self
    }
}

impl CardBody {
    fn new(card: &serde_json::Value) -> CardBody {
        let json = card.to_string();
        let etag = format!("\"{:016x}\"", fnv1a(json.as_bytes()));
        CardBody { json, etag }
    }
}

/// A stable hash for the ETag (std's hasher is randomly seeded per process).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
