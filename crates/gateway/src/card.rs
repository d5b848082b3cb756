//! The public agent card: v1.0 shape, plus the top-level fields v0.3 clients look for.

use fundi_runtime::SkillCard;
use serde_json::{Value, json};

use crate::config::GatewayConfig;

/// Media types every skill accepts and produces unless its card says otherwise.
const DEFAULT_MODES: [&str; 2] = ["text/plain", "application/json"];

/// The JSON-RPC endpoint under the public base URL.
pub(crate) fn endpoint(public_url: &str) -> String {
    format!("{}/a2a", public_url.trim_end_matches('/'))
}

/// Builds the card. Capabilities say only what works today.
pub(crate) fn agent_card(config: &GatewayConfig, public_url: &str, skills: &[SkillCard]) -> Value {
    let url = endpoint(public_url);
    let mut card = json!({
        "name": config.name,
        "description": config.description,
        "version": config.version,
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "capabilities": {"streaming": true, "pushNotifications": false, "extendedAgentCard": false},
        "defaultInputModes": DEFAULT_MODES,
        "defaultOutputModes": DEFAULT_MODES,
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
