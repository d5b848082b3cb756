//! `Intake`: the registered skills, and what a submission is checked against before
//! anything is stored: the skill it selects, the scope that skill needs, the message
//! the skill accepts, and the approval gate it may wait at.

use std::collections::HashMap;
use std::sync::Arc;

use crate::access::Grants;
use crate::approval;
use crate::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::model::{Message, SkillId, TaskState};
use crate::requests::SubmitRequest;
use crate::skill::{Skill, SkillCard};
use crate::store::TaskRecord;

/// The registered skills and their cards, as built at start.
pub(super) struct Intake {
    skills: Arc<HashMap<SkillId, Arc<dyn Skill>>>,
    cards: Vec<SkillCard>,
    config: Arc<RuntimeConfig>,
}

impl Intake {
    pub(super) fn new(
        skills: Arc<HashMap<SkillId, Arc<dyn Skill>>>,
        cards: Vec<SkillCard>,
        config: Arc<RuntimeConfig>,
    ) -> Intake {
        Intake {
            skills,
            cards,
            config,
        }
    }

    /// The registered skills' cards.
    pub(super) fn cards(&self) -> &[SkillCard] {
        &self.cards
    }

    /// A registered skill's card.
    pub(super) fn card(&self, id: &str) -> Option<&SkillCard> {
        self.cards.iter().find(|card| card.id == id)
    }

    /// Refuses a first message the selected skill does not accept (`Skill::check`).
    pub(super) fn check_message(&self, skill: &str, message: &Message) -> Result<(), RuntimeError> {
        match self.skills.get(skill) {
            Some(chosen) => chosen
                .check(message)
                .map_err(|refused| RuntimeError::InvalidInput(refused.to_string())),
            None => Ok(()),
        }
    }

    /// Whether the skill says itself when its work begins (so a new task is stored
    /// submitted, not working, even with a slot).
    pub(super) fn sets_working(&self, skill: &str) -> bool {
        self.skills.get(skill).is_some_and(|s| s.sets_working())
    }

    /// Whether a caller holding `grants` may answer another owner's task all the same:
    /// one that waits for input, of a skill whose card lets holders of its scope answer.
    pub(super) fn answerable(&self, record: &TaskRecord, grants: &Grants) -> bool {
        let Some(card) = self.card(&record.skill) else {
            return false;
        };
        let holds_scope = card.required_scope.is_some()
            && grants.list().is_some()
            && grants.allows(card.required_scope.as_deref());
        card.answered_by_scope && holds_scope && record.state() == TaskState::InputRequired
    }

    /// What an approver is asked, when new tasks of `skill` wait for one.
    pub(super) fn gate(
        &self,
        skill: &str,
        request: &SubmitRequest,
    ) -> Option<approval::ApprovalRequest> {
        if !self.config.requires_approval(skill) {
            return None;
        }
        let message = &request.message;
        let reason = message
            .metadata
            .as_ref()
            .and_then(|m| m.get("reason"))
            .and_then(|r| r.as_str())
            .map(str::to_owned);
        let timeout = chrono::Duration::from_std(self.config.approval_timeout())
            .unwrap_or(chrono::Duration::MAX);
        let now = chrono::Utc::now();
        Some(approval::ApprovalRequest {
            requested_by: request.owner.clone(),
            client: request.client.clone(),
            skill: skill.into(),
            target: approval::target_of(message),
            reason,
            expires_at: now
                .checked_add_signed(timeout)
                .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC),
        })
    }

    /// Whether a caller holding `grants` may start `skill`: the error says why not (no
    /// such skill, or a scope it lacks).
    pub(super) fn check_skill(&self, skill: &str, grants: &Grants) -> Result<(), RuntimeError> {
        if !self.skills.contains_key(skill) {
            return Err(RuntimeError::UnknownSkill {
                id: skill.to_owned(),
                available: self.skill_ids(),
            });
        }
        self.authorize(skill, grants)
    }

    /// Refuses a caller without the scope `skill` requires.
    pub(super) fn authorize(&self, skill: &str, grants: &Grants) -> Result<(), RuntimeError> {
        let required = self
            .card(skill)
            .and_then(|card| card.required_scope.as_deref());
        match required {
            Some(scope) if !grants.allows(Some(scope)) => Err(RuntimeError::Forbidden {
                skill: skill.to_owned(),
                scope: scope.to_owned(),
            }),
            _ => Ok(()),
        }
    }

    /// The skill a submission names (the request, its message's `skill` metadata), or
    /// the default one, or the only one.
    pub(super) fn select_skill(&self, request: &SubmitRequest) -> Result<SkillId, RuntimeError> {
        let from_metadata = request
            .message
            .metadata
            .as_ref()
            .and_then(|m| m.get("skill"))
            .map(|v| {
                v.as_str().map(SkillId::from).ok_or_else(|| {
                    RuntimeError::InvalidInput("message.metadata.skill must be a string".into())
                })
            })
            .transpose()?;
        let only = (self.skills.len() == 1)
            .then(|| self.skills.keys().next().cloned())
            .flatten();
        let chosen = request
            .skill
            .clone()
            .or(from_metadata)
            .or_else(|| self.config.default_skill.clone())
            .or(only);
        match chosen {
            Some(id) if self.skills.contains_key(&id) => Ok(id),
            Some(id) => Err(RuntimeError::UnknownSkill {
                id: id.to_string(),
                available: self.skill_ids(),
            }),
            None => Err(RuntimeError::NoSkillSelected {
                available: self.skill_ids(),
            }),
        }
    }

    /// The registered skills' ids, sorted (for errors that list them).
    pub(super) fn skill_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.skills.keys().map(SkillId::to_string).collect();
        ids.sort();
        ids
    }
}
