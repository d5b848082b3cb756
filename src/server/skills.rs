//! The server's skills: the peers it knows, and the built-in skills its config enables,
//! each with its settings and the stores it works on.

use std::sync::Arc;
use std::time::Duration;

use fundi_ops::inbox::Inbox;
use fundi_ops::issues::IssueStore;
use fundi_ops::peers::PeerStore;
use fundi_peers::PeerDirectory;
use fundi_runtime::Skill;
use fundi_skills::heal::{HealingLoop, RuntimeLink};
use fundi_skills::{
    A11yAuditSkill, ChaosRunSkill, EchoSkill, HealIssueSkill, InboxSkill, SecurityScanSkill,
};

use super::ServerError;
use super::stores::Stores;
use crate::config::AppConfig;

/// The peers of the config, and those an admin added at run time (read from `store`).
pub(super) async fn peer_directory(
    config: &AppConfig,
    store: Arc<dyn PeerStore>,
) -> Result<Arc<PeerDirectory>, ServerError> {
    let max_age = Duration::from_secs(config.skills.delegate.card_max_age_s);
    let peers = PeerDirectory::new(&config.peers, max_age)
        .map_err(ServerError::Config)?
        .with_store(store);
    let known = peers.listing().await;
    tracing::info!(peers = known.len(), "peers known");
    Ok(Arc::new(peers))
}

/// The built-in skills `skills.enabled` names, with their settings.
pub(super) fn built_in_skills(
    config: &AppConfig,
    stores: &Stores,
    inbox: Option<&Inbox>,
    heal_link: &RuntimeLink,
    own_listeners: &[std::net::SocketAddr],
) -> Result<Vec<Arc<dyn Skill>>, ServerError> {
    let skills = &config.skills;
    let heals = skills.enabled.iter().any(|s| s == "heal-issue");
    // With the loop on, the auditing skills record through it: a new issue it covers
    // gets a heal task.
    let issues: &Arc<dyn IssueStore> = &match heals && !skills.heal_issue.watch.is_empty() {
        true => Arc::new(HealingLoop::new(
            stores.issues.clone(),
            &skills.heal_issue,
            heal_link.clone(),
        )),
        false => stores.issues.clone(),
    };
    // chaos-run leaves fundi's own listeners alone.
    let mut chaos_run = skills.chaos_run.clone();
    chaos_run.own_listeners = own_listeners.to_vec();
    let mut built = Vec::new();
    for id in &skills.enabled {
        let skill: Arc<dyn Skill> = match id.as_str() {
            "echo" => Arc::new(EchoSkill::new(skills.echo.clone())),
            "security-scan" => Arc::new(
                SecurityScanSkill::new(skills.security_scan.clone(), issues.clone())
                    .map_err(ServerError::Config)?,
            ),
            "a11y-audit" => Arc::new(
                A11yAuditSkill::new(skills.a11y_audit.clone(), issues.clone())
                    .map_err(ServerError::Config)?,
            ),
            "chaos-run" => Arc::new(
                ChaosRunSkill::new(chaos_run.clone(), issues.clone(), stores.chaos.clone())
                    .map_err(ServerError::Config)?,
            ),
            "heal-issue" => Arc::new(
                HealIssueSkill::new(
                    skills.heal_issue.clone(),
                    stores.issues.clone(),
                    heal_link.clone(),
                )
                .map_err(ServerError::Config)?,
            ),
            "inbox" => Arc::new(
                InboxSkill::new(skills.inbox.clone(), inbox.cloned().unwrap_or_default())
                    .map_err(ServerError::Config)?,
            ),
            // Made with the peers (`peer_directory`).
            "delegate" => continue,
            other => {
                return Err(ServerError::Config(format!(
                    "skills.enabled: unknown skill {other:?}"
                )));
            }
        };
        built.push(skill);
    }
    Ok(built)
}
