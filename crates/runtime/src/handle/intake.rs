//! What a submission is checked against before anything is stored: the skill it
//! selects, the scope that skill needs, and the approval gate it may wait at.

use super::RuntimeHandle;
use crate::access::Grants;
use crate::approval;
use crate::error::RuntimeError;
use crate::model::SkillId;
use crate::requests::SubmitRequest;

impl RuntimeHandle {
    /// What an approver is asked, when new tasks of `skill` wait for one.
    pub(super) fn gate(
        &self,
        skill: &str,
        request: &SubmitRequest,
    ) -> Option<approval::ApprovalRequest> {
        if !self.inner.config.requires_approval(skill) {
            return None;
        }
        let message = &request.message;
        let reason = message
            .metadata
            .as_ref()
            .and_then(|m| m.get("reason"))
            .and_then(|r| r.as_str())
            .map(str::to_owned);
        let timeout = chrono::Duration::from_std(self.inner.config.approval_timeout())
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
    pub fn check_skill(&self, skill: &str, grants: &Grants) -> Result<(), RuntimeError> {
        if !self.inner.skills.contains_key(skill) {
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
            .inner
            .cards
            .iter()
            .find(|card| card.id == skill)
            .and_then(|card| card.required_scope.as_deref());
        match required {
            Some(scope) if !grants.allows(Some(scope)) => Err(RuntimeError::Forbidden {
                skill: skill.to_owned(),
                scope: scope.to_owned(),
            }),
            _ => Ok(()),
        }
    }

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
        let only = (self.inner.skills.len() == 1)
            .then(|| self.inner.skills.keys().next().cloned())
            .flatten();
        let chosen = request
            .skill
            .clone()
            .or(from_metadata)
            .or_else(|| self.inner.config.default_skill.clone())
            .or(only);
        match chosen {
            Some(id) if self.inner.skills.contains_key(&id) => Ok(id),
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
        let mut ids: Vec<String> = self.inner.skills.keys().map(SkillId::to_string).collect();
        ids.sort();
        ids
    }
}
