//! GetExtendedAgentCard: the card an authenticated caller reads about itself. It is the
//! public card of the request's version, narrowed to the skills the caller may run (and
//! their input schemas), with an extension (`urn:fundi:caller:1`) saying who the caller
//! is to fundi, the scopes it holds, and the limits it runs under; signed like the
//! public card when cards are signed.

use serde_json::{Value, json};

use crate::auth::Caller;
use crate::card::jwks_url;
use crate::dialect::Dialect;
use crate::encode::{self, Encoded};
use crate::error::ApiError;
use crate::state::AppState;

/// The extension that carries what fundi knows of the caller.
pub(crate) const CALLER_EXTENSION: &str = "urn:fundi:caller:1";

/// The extended card of `caller`, in `dialect`.
pub(crate) fn extended_card(
    state: &AppState,
    caller: &Caller,
    dialect: Dialect,
) -> Result<Encoded, ApiError> {
    let config = &state.config;
    if !config.extended_card {
        return Err(ApiError::ExtendedCardNotConfigured);
    }
    let public = match dialect {
        Dialect::V1 => &state.cards.v1,
        Dialect::V03 => &state.cards.v03,
    };
    let mut card: Value = serde_json::from_str(&public.json)
        .map_err(|e| ApiError::internal(format_args!("the agent card does not parse: {e}")))?;
    let allowed: Vec<String> = state
        .runtime
        .skills()
        .iter()
        .filter(|skill| caller.grants.allows(skill.required_scope.as_deref()))
        .map(|skill| skill.id.to_string())
        .collect();
    narrow_to(&mut card, &allowed);
    let scopes = caller.grants.list().map(|held| json!(held));
    let about = json!({
        "uri": CALLER_EXTENSION,
        "description": "Who the caller is to this agent: the user its tasks belong to, the \
                        client application, the scopes it holds (null: every skill) and \
                        the limits it runs under.",
        "params": {
            "user": caller.user,
            "client": caller.client,
            "scopes": scopes.unwrap_or(Value::Null),
            "rateLimitPerMinute": config.rate_limit_per_minute,
            "rateLimitBurst": config.rate_limit_burst,
            "maxStreamsPerUser": config.max_streams_per_user,
            "maxBodyBytes": config.max_body_bytes,
        },
    });
    let extensions = card["capabilities"]
        .as_object_mut()
        .ok_or_else(|| ApiError::internal("the agent card has no capabilities"))?
        .entry("extensions")
        .or_insert_with(|| json!([]));
    if let Some(list) = extensions.as_array_mut() {
        list.push(about);
    }
    if let Some(object) = card.as_object_mut() {
        object.remove("signatures");
    }
    if let (Dialect::V1, Some(key)) = (dialect, state.card_signer()) {
        match key.sign(&card, &jwks_url(state.public_url())) {
            Ok(signature) => card["signatures"] = json!([signature]),
            Err(error) => tracing::error!(%error, "the extended agent card could not be signed"),
        }
    }
    Ok(encode::raw(&card))
}

/// Keeps only the skills named in `allowed`, in the skill list and the input schemas.
fn narrow_to(card: &mut Value, allowed: &[String]) {
    let kept = |id: &str| allowed.iter().any(|a| a == id);
    if let Some(skills) = card["skills"].as_array_mut() {
        skills.retain(|skill| skill["id"].as_str().is_some_and(kept));
    }
    // `get_mut`: indexing would add a null `extensions` to a card that has none.
    let extensions = card
        .get_mut("capabilities")
        .and_then(|c| c.get_mut("extensions"))
        .and_then(Value::as_array_mut);
    for extension in extensions.into_iter().flatten() {
        if extension["uri"] == crate::card::INPUT_SCHEMAS_EXTENSION
            && let Some(schemas) = extension["params"].as_object_mut()
        {
            schemas.retain(|id, _| kept(id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_narrows_to_the_skills_allowed_and_their_schemas() {
        let mut card = json!({
            "skills": [{"id": "echo"}, {"id": "chaos"}],
            "capabilities": {"extensions": [
                {"uri": crate::card::INPUT_SCHEMAS_EXTENSION,
                 "params": {"echo": {}, "chaos": {}}},
                {"uri": "urn:other", "params": {"chaos": 1}},
            ]},
        });
        narrow_to(&mut card, &["echo".to_owned()]);
        assert_eq!(card["skills"], json!([{"id": "echo"}]));
        assert_eq!(
            card["capabilities"]["extensions"][0]["params"],
            json!({"echo": {}})
        );
        assert_eq!(
            card["capabilities"]["extensions"][1]["params"],
            json!({"chaos": 1})
        );
    }
}
