//! The agent card's versions, checked field by field.

use super::*;

/// The top-level keys of `card` that are not in `other`.
fn extra_keys<'a>(
    card: &'a serde_json::Map<String, Value>,
    other: &serde_json::Map<String, Value>,
) -> Vec<&'a str> {
    card.keys()
        .filter(|k| !other.contains_key(*k))
        .map(String::as_str)
        .collect()
}

#[test]
fn a_signed_card_verifies_and_the_card_both_versions_read_carries_its_signature() {
    let config = GatewayConfig::default();
    let skills = [SkillCard::new("audit", "audits").scope("fundi:audit")];
    let key = CardKey::generate();
    let cards = Cards::new(&CardFacts {
        config: &config,
        public_url: "http://agent.test:8080/",
        skills: &skills,
        user_header: "X-User",
        push: false,
        signer: Some(&key),
        access_requests: None,
        grpc: None,
    });
    let v1: Value = serde_json::from_str(&cards.v1.json).unwrap();
    let jwks = json!({"keys": [key.public_jwk()]});
    let signer = fundi_peers::signature::verify(&v1, &jwks).unwrap();
    assert_eq!(
        signer.jku.as_deref(),
        Some("http://agent.test:8080/.well-known/jwks.json")
    );
    let both: Value = serde_json::from_str(&cards.unversioned.json).unwrap();
    assert_eq!(both["signatures"], v1["signatures"]);
    let v03: Value = serde_json::from_str(&cards.v03.json).unwrap();
    assert!(v03.get("signatures").is_none());
}

fn facts_cards(rest: bool) -> (Value, Value, Value) {
    facts_cards_with(rest, None)
}

fn facts_cards_with(rest: bool, grpc: Option<&str>) -> (Value, Value, Value) {
    let config = GatewayConfig {
        rest,
        ..GatewayConfig::default()
    };
    let skills = [SkillCard::new("audit", "audits").scope("fundi:audit")];
    let facts = CardFacts {
        config: &config,
        public_url: "http://agent.test:8080/",
        skills: &skills,
        user_header: "X-User",
        push: true,
        signer: None,
        access_requests: None,
        grpc,
    };
    let cards = Cards::new(&facts);
    let parse = |body: &CardBody| serde_json::from_str(&body.json).unwrap();
    (
        parse(&cards.v1),
        parse(&cards.v03),
        parse(&cards.unversioned),
    )
}

#[test]
fn each_version_has_only_its_own_fields_and_the_unversioned_card_has_both() {
    let (v1, v03, both) = facts_cards(true);
    let (v1, v03, both) = (
        v1.as_object().unwrap(),
        v03.as_object().unwrap(),
        both.as_object().unwrap(),
    );
    let mut only_v03 = extra_keys(v03, v1);
    only_v03.sort_unstable();
    assert_eq!(
        only_v03,
        [
            "additionalInterfaces",
            "preferredTransport",
            "protocolVersion",
            "security",
            "supportsAuthenticatedExtendedCard",
            "url"
        ]
    );
    let mut only_v1 = extra_keys(v1, v03);
    only_v1.sort_unstable();
    assert_eq!(only_v1, ["securityRequirements", "supportedInterfaces"]);
    assert!(extra_keys(both, v1).len() == 6 && extra_keys(both, v03).len() == 2);
    // Each scheme in both forms, and each skill's scope in both shapes.
    let user = &both["securitySchemes"]["userToken"];
    assert_eq!(user["in"], "header");
    assert_eq!(user["apiKeySecurityScheme"]["location"], "header");
    assert_eq!(both["skills"][0]["security"][0]["bearer"][0], "fundi:audit");
    assert_eq!(
        both["skills"][0]["securityRequirements"][0]["schemes"]["bearer"]["list"][0],
        "fundi:audit"
    );
    assert_eq!(
        v03["securitySchemes"]["userToken"].get("apiKeySecurityScheme"),
        None
    );
    assert_eq!(v1["securitySchemes"]["userToken"].get("in"), None);
}

#[test]
fn the_rest_interface_is_listed_only_when_served() {
    let (v1, _, _) = facts_cards(true);
    let bindings: Vec<(&str, &str, &str)> = v1["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["protocolBinding"].as_str().unwrap(),
                i["protocolVersion"].as_str().unwrap(),
                i["url"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        bindings,
        [
            ("JSONRPC", "1.0", "http://agent.test:8080/a2a"),
            ("HTTP+JSON", "1.0", "http://agent.test:8080"),
            ("JSONRPC", "0.3", "http://agent.test:8080/a2a"),
            ("HTTP+JSON", "0.3", "http://agent.test:8080"),
        ]
    );
    let (v1, _, _) = facts_cards(false);
    let listed = v1["supportedInterfaces"].as_array().unwrap();
    assert!(listed.iter().all(|i| i["protocolBinding"] == "JSONRPC"));
}

#[test]
fn the_grpc_interface_is_listed_only_when_served_with_the_address_clients_dial() {
    let (v1, _, _) = facts_cards_with(true, Some("agent.test:8080"));
    let listed = v1["supportedInterfaces"].as_array().unwrap();
    assert_eq!(
        listed[2],
        json!({"url": "agent.test:8080", "protocolBinding": "GRPC", "protocolVersion": "1.0"})
    );
    let (v1, _, _) = facts_cards(true);
    let listed = v1["supportedInterfaces"].as_array().unwrap();
    assert!(listed.iter().all(|i| i["protocolBinding"] != "GRPC"));
    assert_eq!(
        grpc_address("https://agent.example/").as_deref(),
        Some("agent.example:443")
    );
    assert_eq!(
        grpc_address("http://[::1]:8080").as_deref(),
        Some("[::1]:8080")
    );
    assert_eq!(
        grpc_address("http://127.0.0.1:9/").as_deref(),
        Some("127.0.0.1:9")
    );
}
