//! GetExtendedAgentCard on every binding: an authenticated caller reads the card
//! narrowed to the skills it may run, with who it is to fundi and its limits; turned off,
//! the public card says so and the method answers -32007. And a tenant, which fundi
//! does not serve, is refused on every binding.

mod common;

use a2a_pb::proto::a2a_service_client::A2aServiceClient;
use a2a_pb::{proto, protojson};
use axum::body::Body;
use axum::http::Request;
use common::*;
use fundi_gateway::{DEFAULT_USER_HEADER, GatewayConfig};
use http_body_util::BodyExt;
use prost::Message as _;
use serde_json::{Value, json};
use tonic::Code;

const CALLER: &str = "urn:fundi:caller:1";

fn skill_ids(card: &Value) -> Vec<&str> {
    card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect()
}

fn caller_extension(card: &Value) -> &Value {
    card["capabilities"]["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["uri"] == CALLER)
        .expect("the caller extension")
}

async fn get(gw: &Gateway, uri: &str) -> (u16, Value) {
    let request = Request::get(uri)
        .header("host", "agent.test:8080")
        .header("authorization", format!("Bearer {}", gw.identity.0))
        .header(DEFAULT_USER_HEADER, &gw.identity.1)
        .body(Body::empty())
        .unwrap();
    let response = gw.send(request).await;
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn each_caller_reads_the_skills_it_may_run_on_every_binding() {
    let gw = gateway().await;
    let (_, public) = get(&gw, "/.well-known/agent-card.json?A2A-Version=1.0").await;
    assert_eq!(public["capabilities"]["extendedAgentCard"], true);
    assert_eq!(skill_ids(&public), ["steps", "audit", "chaos"]);

    // The admin client holds every skill.
    let card = gw.ok("GetExtendedAgentCard", json!({})).await;
    assert_eq!(skill_ids(&card), ["steps", "audit", "chaos"]);
    let about = &caller_extension(&card)["params"];
    assert_eq!(about["user"], "alice");
    assert_eq!(about["scopes"], json!(["fundi:admin"]));
    assert_eq!(about["rateLimitPerMinute"], 1200);
    assert_eq!(card["name"], public["name"]);

    // A client holding fundi:audit reads the unscoped skill and audit, not chaos.
    let auditor = gw.as_identity(&gw.credentials.audit_token, &gw.credentials.alice);
    let card = auditor.ok("GetExtendedAgentCard", Value::Null).await;
    assert_eq!(skill_ids(&card), ["steps", "audit"]);
    assert_eq!(
        caller_extension(&card)["params"]["scopes"],
        json!(["fundi:audit"])
    );

    // The same card over HTTP+JSON and over gRPC.
    let (status, rest) = get(&auditor, "/extendedAgentCard").await;
    assert_eq!(status, 200, "{rest}");
    assert_eq!(rest, card);
    let address = serve_on_loopback(&gw).await;
    let mut grpc = A2aServiceClient::connect(format!("http://{address}"))
        .await
        .unwrap();
    let call = grpc_call(&auditor, proto::GetExtendedAgentCardRequest::default());
    let answer = grpc
        .get_extended_agent_card(call)
        .await
        .unwrap()
        .into_inner();
    let twin = protojson::AgentCard::decode(answer.encode_to_vec().as_slice()).unwrap();
    let over_grpc = serde_json::to_value(twin).unwrap();
    assert_eq!(skill_ids(&over_grpc), ["steps", "audit"]);
    assert_eq!(caller_extension(&over_grpc)["params"]["user"], "alice");

    // v0.3 asks by its own name and reads the v0.3 card.
    let card = auditor
        .ok("agent/getAuthenticatedExtendedCard", json!({}))
        .await;
    assert_eq!(card["protocolVersion"], "0.3.0");
    assert_eq!(skill_ids(&card), ["steps", "audit"]);

    // Without credentials: refused, as every call is.
    let anonymous = gw.as_identity("", "");
    let (status, _) = anonymous
        .post_raw(request("GetExtendedAgentCard", json!({})).to_string())
        .await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn an_extended_card_turned_off_is_not_declared_and_says_so() {
    let gw = gateway_with({
        let mut gateway_config = GatewayConfig::default();
        gateway_config.extended_card = false;
        gateway_config
    })
    .await;
    let (_, public) = get(&gw, "/.well-known/agent-card.json").await;
    assert_eq!(public["capabilities"]["extendedAgentCard"], false);
    assert_eq!(public["supportsAuthenticatedExtendedCard"], false);
    let error = gw.err("GetExtendedAgentCard", json!({})).await;
    assert_eq!(error["code"], -32007);
    assert_eq!(
        error["data"][0]["reason"],
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
    );
    let (status, rest) = get(&gw, "/extendedAgentCard").await;
    assert_eq!(status, 400);
    assert_eq!(rest["error"]["status"], "FAILED_PRECONDITION");
}

#[tokio::test]
async fn a_tenant_is_refused_on_every_binding() {
    let gw = gateway().await;
    let error = gw
        .err("GetTask", json!({"id": "t", "tenant": "acme"}))
        .await;
    assert_eq!(error["code"], -32602);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("\"acme\" is not served here")
    );
    assert_eq!(error["data"][0]["fieldViolations"][0]["field"], "tenant");
    // An empty tenant is no tenant.
    let error = gw.err("GetTask", json!({"id": "t", "tenant": ""})).await;
    assert_eq!(error["code"], -32001);
    // A stream refuses it before it opens.
    let (_, events) = gw
        .stream(
            "SendStreamingMessage",
            json!({"message": message("x", Value::Null), "tenant": "acme"}),
            None,
        )
        .await;
    assert_eq!(events[0].1["error"]["code"], -32602);
    // gRPC.
    let address = serve_on_loopback(&gw).await;
    let mut grpc = A2aServiceClient::connect(format!("http://{address}"))
        .await
        .unwrap();
    let request = proto::GetTaskRequest {
        id: "t".into(),
        tenant: "acme".into(),
        ..Default::default()
    };
    let refused = grpc.get_task(grpc_call(&gw, request)).await.unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(refused.message().contains("acme"));
}
