//! The agent card, one document per protocol version, chosen by `A2A-Version` (header
//! or query): `1.0` gets a strict v1.0 card (the proto's fields only), `0.3` a strict
//! v0.3 card. A client that names no version gets the v1.0 card with the v0.3 card's
//! fields beside it (each security scheme in both forms): the official clients of both
//! versions ask for the card without naming one, and each reads its own fields there.

use fundi_peers::signature::CardKey;
use fundi_runtime::SkillCard;
use serde_json::{Value, json};

use crate::config::GatewayConfig;

/// Names of the two security schemes: both are required together.
const BEARER: &str = "bearer";
const USER_TOKEN: &str = "userToken";

/// Media types every skill accepts and produces unless its card says otherwise.
const DEFAULT_MODES: [&str; 2] = ["text/plain", "application/json"];

const BEARER_DESCRIPTION: &str =
    "The calling application's token (a JWT, or a static token in local setups).";
const USER_TOKEN_DESCRIPTION: &str = "The end user's token, forwarded by the calling application.";

/// Where the keys that sign the card are published (a JWK Set).
pub(crate) const JWKS_PATH: &str = "/.well-known/jwks.json";

/// The JWKS URL under the public base URL.
pub(crate) fn jwks_url(public_url: &str) -> String {
    format!("{}{JWKS_PATH}", public_url.trim_end_matches('/'))
}

/// The JSON-RPC endpoint under the public base URL.
pub(crate) fn endpoint(public_url: &str) -> String {
    format!("{}/a2a", public_url.trim_end_matches('/'))
}

/// What every version of the card is made from.
pub(crate) struct CardFacts<'a> {
    pub(crate) config: &'a GatewayConfig,
    pub(crate) public_url: &'a str,
    pub(crate) skills: &'a [SkillCard],
    pub(crate) user_header: &'a str,
    /// Push notifications are served.
    pub(crate) push: bool,
    /// The key that signs the cards, when they are signed.
    pub(crate) signer: Option<&'a CardKey>,
    /// The offer of requests for access (an entry of `capabilities.extensions`), when
    /// they are served.
    pub(crate) access_requests: Option<&'a serde_json::Value>,
    /// The address gRPC clients dial (`host:port`), when gRPC is served.
    pub(crate) grpc: Option<&'a str>,
}

/// The address a gRPC client dials to reach `public_url`: its host and port (the
/// scheme's default port when it names none).
pub(crate) fn grpc_address(public_url: &str) -> Option<String> {
    let url = url::Url::parse(public_url).ok()?;
    let host = url.host()?;
    let port = url.port_or_known_default()?;
    Some(match host {
        url::Host::Ipv6(ip) => format!("[{ip}]:{port}"),
        other => format!("{other}:{port}"),
    })
}

/// The three documents, each serialized once with its ETag.
pub(crate) struct Cards {
    /// A2A v1.0, strict.
    pub(crate) v1: CardBody,
    /// A2A v0.3, strict.
    pub(crate) v03: CardBody,
    /// No version named: v1.0 with the v0.3 fields beside it.
    pub(crate) unversioned: CardBody,
}

/// A card, serialized, with its ETag.
pub(crate) struct CardBody {
    pub(crate) json: String,
    pub(crate) etag: String,
}

impl Cards {
    pub(crate) fn new(facts: &CardFacts<'_>) -> Cards {
        let mut v1 = v1_card(facts);
        let v03 = v03_card(facts);
        if let Some(key) = facts.signer {
            // A signature the card's own fields carry: the card without it is what the
            // signature covers, so it is made before it is added.
            match key.sign(&v1, &jwks_url(facts.public_url)) {
                Ok(signature) => v1["signatures"] = json!([signature]),
                Err(error) => tracing::error!(%error, "the agent card could not be signed"),
            }
        }
        // The card both versions read carries the v1.0 card's signature: a v1.0 reader
        // reads the v1.0 fields, which are the signed ones.
        let unversioned = union(v1.clone(), v03.clone());
        Cards {
            v1: CardBody::new(&v1),
            v03: CardBody::new(&v03),
            unversioned: CardBody::new(&unversioned),
        }
    }
}

impl CardBody {
    fn new(card: &Value) -> CardBody {
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

fn description(facts: &CardFacts<'_>) -> String {
    format!(
        "{} Authentication: every call (JSON-RPC, HTTP+JSON or gRPC, whose metadata \
         carries them) needs two credentials together, the calling application's bearer token (Authorization: Bearer) and the \
         end user's token in the {} header; the user owns the tasks they create and sees \
         only those. Each skill needs the scope named in its security requirements, held by \
         the bearer token (fundi:admin grants every skill); the agent card cannot tie a \
         scope to the bearer scheme by itself, so the scope is listed beside it.",
        facts.config.description.trim_end(),
        facts.user_header
    )
}

/// The v1.0 card: the proto's `AgentCard`, nothing else.
fn v1_card(facts: &CardFacts<'_>) -> Value {
    let url = endpoint(facts.public_url);
    let mut interfaces =
        vec![json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"})];
    if facts.config.rest {
        let base = facts.public_url.trim_end_matches('/');
        interfaces
            .push(json!({"url": base, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}));
    }
    if let Some(address) = facts.grpc {
        interfaces
            .push(json!({"url": address, "protocolBinding": "GRPC", "protocolVersion": "1.0"}));
    }
    interfaces.push(json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}));
    if facts.config.rest {
        let base = facts.public_url.trim_end_matches('/');
        interfaces
            .push(json!({"url": base, "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"}));
    }
    let mut card = json!({
        "name": facts.config.name,
        "description": description(facts),
        "version": facts.config.version,
        "supportedInterfaces": interfaces,
        "capabilities": {
            "streaming": true,
            "pushNotifications": facts.push,
            "extendedAgentCard": facts.config.extended_card,
        },
        "defaultInputModes": DEFAULT_MODES,
        "defaultOutputModes": DEFAULT_MODES,
        "securitySchemes": {
            BEARER: {"httpAuthSecurityScheme": {
                "scheme": "Bearer",
                "description": BEARER_DESCRIPTION,
            }},
            USER_TOKEN: {"apiKeySecurityScheme": {
                "location": "header",
                "name": facts.user_header,
                "description": USER_TOKEN_DESCRIPTION,
            }},
        },
        "securityRequirements": [v1_requirement(&[])],
        "skills": facts.skills.iter().map(|s| skill(s, "securityRequirements", v1_requirement)).collect::<Vec<_>>(),
    });
    provider_and_docs(&mut card, facts.config);
    let extensions = extensions(facts);
    if !extensions.is_empty() {
        card["capabilities"]["extensions"] = json!(extensions);
    }
    card
}

/// The card extension that carries the skills' input schemas (`AgentSkill` has no field
/// for one): `params` maps a skill's id to the JSON Schema of its data input.
pub(crate) const INPUT_SCHEMAS_EXTENSION: &str = "urn:fundi:skill-input-schemas:1";

/// The extensions the card declares: the offer of requests for access, and the skills'
/// input schemas, each when there is one.
fn extensions(facts: &CardFacts<'_>) -> Vec<Value> {
    let mut extensions: Vec<Value> = facts.access_requests.into_iter().cloned().collect();
    let schemas: serde_json::Map<String, Value> = facts
        .skills
        .iter()
        .filter_map(|s| Some((s.id.to_string(), s.input_schema.clone()?)))
        .collect();
    if !schemas.is_empty() {
        extensions.push(json!({
            "uri": INPUT_SCHEMAS_EXTENSION,
            "description": "The JSON Schema of each skill's data input (the data part of a \
                            task's first message), by skill id.",
            // `required` is left out: false is its default, which signers drop.
            "params": schemas,
        }));
    }
    extensions
}

/// The v0.3 card: the fields of v0.3's `AgentCard` (`type`-tagged security schemes,
/// `security` lists), nothing else.
fn v03_card(facts: &CardFacts<'_>) -> Value {
    let mut card = json!({
        "protocolVersion": "0.3.0",
        "name": facts.config.name,
        "description": description(facts),
        "url": endpoint(facts.public_url),
        "preferredTransport": "JSONRPC",
        "additionalInterfaces": v03_interfaces(facts),
        "version": facts.config.version,
        "supportsAuthenticatedExtendedCard": facts.config.extended_card,
        "capabilities": {
            "streaming": true,
            "pushNotifications": facts.push,
            "stateTransitionHistory": false,
        },
        "defaultInputModes": DEFAULT_MODES,
        "defaultOutputModes": DEFAULT_MODES,
        "securitySchemes": {
            BEARER: {
                "type": "http",
                // Spelled as the v1.0 card spells it (the scheme's name is case-insensitive,
                // RFC 9110): the card both versions read is then one signed document.
                "scheme": "Bearer",
                "description": BEARER_DESCRIPTION,
            },
            USER_TOKEN: {
                "type": "apiKey",
                "in": "header",
                "name": facts.user_header,
                "description": USER_TOKEN_DESCRIPTION,
            },
        },
        "security": [v03_requirement(&[])],
        "skills": facts.skills.iter().map(|s| skill(s, "security", v03_requirement)).collect::<Vec<_>>(),
    });
    provider_and_docs(&mut card, facts.config);
    let extensions = extensions(facts);
    if !extensions.is_empty() {
        card["capabilities"]["extensions"] = json!(extensions);
    }
    card
}

/// v0.3's interfaces: JSON-RPC (the preferred one, listed again as v0.3 asks), and the
/// HTTP+JSON routes under `/v1` when `gateway.rest` is on (the URL is the base they are
/// under).
fn v03_interfaces(facts: &CardFacts<'_>) -> Value {
    let mut interfaces = vec![json!({"url": endpoint(facts.public_url), "transport": "JSONRPC"})];
    if facts.config.rest {
        let base = facts.public_url.trim_end_matches('/');
        interfaces.push(json!({"url": base, "transport": "HTTP+JSON"}));
    }
    json!(interfaces)
}

fn provider_and_docs(card: &mut Value, config: &GatewayConfig) {
    if let (Some(organization), Some(provider_url)) =
        (&config.provider_organization, &config.provider_url)
    {
        card["provider"] = json!({"organization": organization, "url": provider_url});
    }
    if let Some(docs) = &config.documentation_url {
        card["documentationUrl"] = json!(docs);
    }
}

/// The skill's description, then how a client picks it and what a message to a task
/// that works does (clients learn both here).
fn skill_description(card: &SkillCard) -> String {
    let description = card.description.trim_end();
    let stop = match description.ends_with(['.', '!', '?']) || description.is_empty() {
        true => "",
        false => ".",
    };
    let policy = card.while_working.describe();
    let id = &card.id;
    let pick = format!("Pick it with the message metadata {{\"skill\": \"{id}\"}}.");
    format!("{description}{stop} {pick} {policy}")
        .trim_start()
        .to_owned()
}

/// A skill, its scope under `key` in the version's requirement shape.
fn skill(card: &SkillCard, key: &str, requirement: fn(&[&str]) -> Value) -> Value {
    let mut skill = json!({
        "id": card.id,
        "name": card.name,
        "description": skill_description(card),
        "tags": card.tags,
    });
    if let Some(scope) = &card.required_scope {
        skill[key] = json!([requirement(&[scope.as_str()])]);
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

/// v1.0: a requirement of both schemes, the bearer token holding `scopes`.
fn v1_requirement(scopes: &[&str]) -> Value {
    json!({"schemes": {
        BEARER: {"list": scopes},
        USER_TOKEN: {"list": []},
    }})
}

/// v0.3: the same requirement, as a map from scheme to scopes.
fn v03_requirement(scopes: &[&str]) -> Value {
    json!({BEARER: scopes, USER_TOKEN: []})
}

/// Both cards in one: objects merged key by key, arrays of the same length element by
/// element (the skills, in the same order in both), and `v1` kept where the two differ.
fn union(v1: Value, v03: Value) -> Value {
    match (v1, v03) {
        (Value::Object(mut a), Value::Object(b)) => {
            for (key, theirs) in b {
                let merged = match a.remove(&key) {
                    Some(ours) => union(ours, theirs),
                    None => theirs,
                };
                a.insert(key, merged);
            }
            Value::Object(a)
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            Value::Array(a.into_iter().zip(b).map(|(x, y)| union(x, y)).collect())
        }
        (ours, _) => ours,
    }
}

#[cfg(test)]
mod tests;
