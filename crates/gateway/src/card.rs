//! The public agent card: v1.0 shape, plus the top-level fields v0.3 clients look for.

use fundi_runtime::SkillCard;
use serde_json::{Value, json};

use crate::auth::Authenticator;
use crate::config::GatewayConfig;

/// Names of the two security schemes: both are required together.
const BEARER: &str = "bearer";
const USER_TOKEN: &str = "userToken";

/// Media types every skill accepts and produces unless its card says otherwise.
const DEFAULT_MODES: [&str; 2] = ["text/plain", "application/json"];

/// The JSON-RPC endpoint under the public base URL.
pub(crate) fn endpoint(public_url: &str) -> String {
    format!("{}/a2a", public_url.trim_end_matches('/'))
}

/// Builds the card. Capabilities say only what works today.
pub(crate) fn agent_card(
    config: &GatewayConfig,
    public_url: &str,
    skills: &[SkillCard],
    auth: &Authenticator,
) -> Value {
    let url = endpoint(public_url);
    let user_header = auth.user_header();
    let description = format!(
        "{} Authentication: every JSON-RPC call needs two credentials together, the calling \
         application's bearer token (Authorization: Bearer) and the end user's token in the \
         {user_header} header; the user owns the tasks they create and sees only those. Each \
         skill needs the scope named in its securityRequirements, held by the bearer token \
         (fundi:admin grants every skill); the agent card cannot tie a scope to the bearer \
         scheme by itself, so the scope is listed beside it.",
        config.description.trim_end()
    );
    let mut card = json!({
        "name": config.name,
        "description": description,
        "version": config.version,
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "capabilities": {"streaming": true, "pushNotifications": false, "extendedAgentCard": false},
        "defaultInputModes": DEFAULT_MODES,
        "defaultOutputModes": DEFAULT_MODES,
        "securitySchemes": {
            BEARER: {"httpAuthSecurityScheme": {
                "scheme": "Bearer",
                "description": "The calling application's token (a JWT, or a static token in local setups).",
            }},
            USER_TOKEN: {"apiKeySecurityScheme": {
                "location": "header",
                "name": user_header,
                "description": "The end user's token, forwarded by the calling application.",
            }},
        },
        "securityRequirements": [requirement(&[])],
        "skills": skills.iter().map(skill).collect::<Vec<_>>(),
        // v0.3 compatibility: v1.0 parsers ignore these; v0.3 clients need them.
        "url": url,
        "protocolVersion": "0.3.0",
        "preferredTransport": "JSONRPC",
    });
    if let (Some(organization), Some(provider_url)) =
        (&config.provider_organization, &config.provider_url)
    {
        card["provider"] = json!({"organization": organization, "url": provider_url});
    }
    if let Some(docs) = &config.documentation_url {
        card["documentationUrl"] = json!(docs);
    }
    card
}

fn skill(card: &SkillCard) -> Value {
    let mut skill = json!({
        "id": card.id,
        "name": card.name,
        "description": card.description,
        "tags": card.tags,
    });
    if let Some(scope) = &card.required_scope {
        skill["securityRequirements"] = json!([requirement(&[scope.as_str()])]);
    }
    for (key, list) in [
        ("examples", &card.examples),
        ("inputModes", &card.input_modes),
        ("outputModes", &card.output_modes),
    ] {
        if !list.is_empty() {
            skill[key] = json!(list);
        }
    }
    skill
}

/// A requirement of both schemes, the bearer token holding `scopes`.
fn requirement(scopes: &[&str]) -> Value {
    json!({"schemes": {
        BEARER: {"list": scopes},
        USER_TOKEN: {"list": []},
    }})
}
