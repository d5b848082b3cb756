//! A peer's agent card, as far as delegation reads it: who it is, what it can do, where
//! and how to call it.

use serde::Serialize;
use serde_json::Value;

/// The card extension through which an agent offers requests for access (fundi's
/// `POST /access-requests`): its `params.url` is where to ask, `params.issuers` the
/// identity providers whose assertions are accepted.
pub const ACCESS_REQUESTS_EXTENSION: &str = "urn:fundi:access-requests:1";

/// The bindings fundi speaks to a peer, in no order of its own: the card's order wins.
const SPOKEN: [&str; 2] = ["JSONRPC", "HTTP+JSON"];

/// One interface a card lists (`AgentInterface`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Interface {
    /// Where it is served.
    pub url: String,
    /// `JSONRPC`, `HTTP+JSON`, `GRPC` or another.
    pub protocol_binding: String,
    /// `1.0`, `0.3`...
    pub protocol_version: String,
    /// The tenant every request to it carries, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// One skill a card lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CardSkill {
    /// Its id (what `skill` names in a delegation).
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
}

/// What delegation reads of a peer's agent card.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PeerCard {
    /// The agent's name.
    pub name: String,
    /// What it says it does.
    pub description: String,
    /// Its skills.
    pub skills: Vec<CardSkill>,
    /// Its interfaces, preferred first.
    pub interfaces: Vec<Interface>,
    /// The interface fundi calls: the first at A2A v1.0 in a binding fundi speaks
    /// (JSON-RPC, HTTP+JSON), else the first JSON-RPC one at v0.3, if the card lists one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Interface>,
    /// Whether it streams (`SubscribeToTask` is then used to follow a task).
    pub streaming: bool,
    /// Whether the card carries signatures (`signatures`).
    pub signed: bool,
    /// Whether one of them verified against the keys the peer's own origin publishes.
    pub signature_verified: bool,
    /// Where the agent takes requests for access, when its card offers them
    /// ([`ACCESS_REQUESTS_EXTENSION`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_requests: Option<String>,
    /// The header an API-key scheme of the card asks for (a fundi peer's user token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_header: Option<String>,
}

impl PeerCard {
    /// The card in `json`; the error says what is missing.
    pub(crate) fn parse(json: &Value) -> Result<PeerCard, String> {
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        let name = json["name"]
            .as_str()
            .ok_or("it has no name: is this URL an A2A agent card?")?
            .to_owned();
        let mut interfaces: Vec<Interface> = json["supportedInterfaces"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| Interface {
                url: text(&i["url"]),
                protocol_binding: text(&i["protocolBinding"]),
                protocol_version: text(&i["protocolVersion"]),
                tenant: i["tenant"]
                    .as_str()
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned),
            })
            .collect();
        // A v0.3 card: its main endpoint is `url` with `preferredTransport`, then its
        // `additionalInterfaces`.
        if interfaces.is_empty()
            && let Some(url) = json["url"].as_str()
        {
            let version = json["protocolVersion"].as_str().unwrap_or("0.3").to_owned();
            let main = (
                url,
                json["preferredTransport"].as_str().unwrap_or("JSONRPC"),
            );
            let more = json["additionalInterfaces"]
                .as_array()
                .into_iter()
                .flatten();
            let more = more.filter_map(|i| Some((i["url"].as_str()?, i["transport"].as_str()?)));
            for (url, transport) in std::iter::once(main).chain(more) {
                interfaces.push(Interface {
                    url: url.to_owned(),
                    protocol_binding: transport.to_owned(),
                    protocol_version: version.clone(),
                    tenant: None,
                });
            }
        }
        let skills = json["skills"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| CardSkill {
                id: text(&s["id"]),
                name: text(&s["name"]),
                description: text(&s["description"]),
            })
            .collect();
        let user_header = json["securitySchemes"]
            .as_object()
            .into_iter()
            .flat_map(|schemes| schemes.values())
            .filter_map(|scheme| {
                // v1.0 wraps each scheme in its kind; v0.3 tags it with `type`.
                let key = scheme.get("apiKeySecurityScheme").unwrap_or(scheme);
                let header = key["location"].as_str().or(key["in"].as_str()) == Some("header");
                let api_key = scheme.get("apiKeySecurityScheme").is_some()
                    || scheme["type"].as_str() == Some("apiKey");
                (api_key && header).then(|| key["name"].as_str().map(str::to_owned))?
            })
            .next();
        // The first v1.0 interface in a binding fundi speaks, else the first v0.3 JSON-RPC
        // one (v0.3 over HTTP+JSON is not spoken).
        let endpoint = interfaces
            .iter()
            .find(|i| {
                i.protocol_version.starts_with("1.")
                    && SPOKEN.contains(&i.protocol_binding.as_str())
            })
            .or_else(|| {
                interfaces.iter().find(|i| {
                    i.protocol_version.starts_with("0.3") && i.protocol_binding == "JSONRPC"
                })
            })
            .cloned();
        Ok(PeerCard {
            name,
            description: text(&json["description"]),
            skills,
            interfaces,
            endpoint,
            streaming: json["capabilities"]["streaming"].as_bool() == Some(true),
            signed: json["signatures"].as_array().is_some_and(|s| !s.is_empty()),
            signature_verified: false,
            access_requests: json["capabilities"]["extensions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|e| e["uri"].as_str() == Some(ACCESS_REQUESTS_EXTENSION))
                .and_then(|e| e["params"]["url"].as_str())
                .map(str::to_owned),
            user_header,
        })
    }

    /// The interface fundi calls (see [`PeerCard::endpoint`]); the error lists what the
    /// card offers instead.
    pub fn preferred(&self) -> Result<&Interface, String> {
        if let Some(found) = &self.endpoint {
            return Ok(found);
        }
        let listed: Vec<String> = self
            .interfaces
            .iter()
            .map(|i| format!("{} {}", i.protocol_binding, i.protocol_version))
            .collect();
        Err(format!(
            "it lists no interface delegation speaks: JSON-RPC or HTTP+JSON at A2A v1.0, or \
             JSON-RPC at v0.3 (it lists: {})",
            match listed.is_empty() {
                true => "none".to_owned(),
                false => listed.join(", "),
            }
        ))
    }
}

/// Checks that every interface of the card points at the card's own host or one of
/// `also`: a card must not send fundi's credentials to an address nobody configured.
pub(crate) fn check_hosts(
    card: &PeerCard,
    card_url: &reqwest::Url,
    also: &[String],
) -> Result<(), String> {
    let own = card_url.host_str().unwrap_or_default().to_ascii_lowercase();
    for interface in &card.interfaces {
        if !SPOKEN.contains(&interface.protocol_binding.as_str()) {
            continue;
        }
        let url = reqwest::Url::parse(&interface.url).map_err(|e| {
            format!(
                "its {} interface URL {:?} is not a URL: {e}",
                interface.protocol_binding, interface.url
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "its interface URL {:?} is not http(s)",
                interface.url
            ));
        }
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let named = host == own || also.iter().any(|h| h.trim().eq_ignore_ascii_case(&host));
        if !named {
            return Err(format!(
                "its {} interface points at host {host}, not at {own} where the card is served; \
                 list {host} in the peer's interface-hosts to allow it",
                interface.protocol_binding
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn card(interfaces: Value) -> PeerCard {
        PeerCard::parse(&json!({"name": "b", "supportedInterfaces": interfaces,
            "capabilities": {"streaming": true},
            "securitySchemes": {"user": {"apiKeySecurityScheme":
                {"location": "header", "name": "X-User"}}}}))
        .unwrap()
    }

    #[test]
    fn the_first_v1_interface_in_a_spoken_binding_is_preferred() {
        let card = card(json!([
            {"url": "h:1", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": "http://b/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": "http://b/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        ]));
        assert_eq!(card.preferred().unwrap().url, "http://b/rest");
        assert!(card.streaming);
        assert_eq!(card.user_header.as_deref(), Some("X-User"));
        let old = self::card(json!([
            {"url": "http://b/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"},
            {"url": "http://b/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ]));
        assert_eq!(old.preferred().unwrap().url, "http://b/a2a");
        let v03 = PeerCard::parse(&json!({"name": "old", "url": "http://b/",
            "protocolVersion": "0.3.0", "preferredTransport": "GRPC",
            "additionalInterfaces": [{"url": "http://b/rpc", "transport": "JSONRPC"}]}))
        .unwrap();
        assert_eq!(v03.preferred().unwrap().url, "http://b/rpc");
        let grpc = self::card(json!([
            {"url": "b:1", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
        ]));
        let error = grpc.preferred().unwrap_err();
        assert!(
            error.contains("GRPC 1.0") && error.contains("v0.3"),
            "{error}"
        );
    }

    #[test]
    fn interfaces_on_another_host_are_refused_unless_listed() {
        let card = card(json!([
            {"url": "http://elsewhere:9/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        ]));
        let at = reqwest::Url::parse("http://b.example/.well-known/agent-card.json").unwrap();
        let error = check_hosts(&card, &at, &[]).unwrap_err();
        assert!(
            error.contains("host elsewhere") && error.contains("interface-hosts"),
            "{error}"
        );
        assert_eq!(check_hosts(&card, &at, &["ELSEWHERE".into()]), Ok(()));
    }

    #[test]
    fn a_page_that_is_no_card_says_so() {
        let error = PeerCard::parse(&json!({"hello": 1})).unwrap_err();
        assert!(error.contains("agent card"), "{error}");
    }
}
