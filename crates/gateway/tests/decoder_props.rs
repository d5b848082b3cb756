//! No input makes the endpoint panic, hang, or answer with anything but a JSON-RPC
//! response: property tests over arbitrary bytes and arbitrary JSON requests.

mod common;

use common::*;
use fundi_gateway::GatewayConfig;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const METHODS: [&str; 14] = [
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "CreateTaskPushNotificationConfig",
    "GetExtendedAgentCard",
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/cancel",
    "tasks/resubscribe",
    "nonsense/method",
];

const CODES: [i64; 10] = [
    -32700, -32600, -32601, -32602, -32603, -32001, -32002, -32003, -32004, -32009,
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-zA-Z_ ]{0,12}".prop_map(Value::from),
        prop_oneof![
            Just("ROLE_USER"),
            Just("TASK_STATE_WORKING"),
            Just("text"),
            Just("data"),
            Just("url"),
            Just("raw"),
            Just("user"),
            Just("kind"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("message".to_owned()),
                        Just("parts".to_owned()),
                        Just("messageId".to_owned()),
                        Just("role".to_owned()),
                        Just("id".to_owned()),
                        Just("text".to_owned()),
                        Just("configuration".to_owned()),
                        Just("historyLength".to_owned()),
                        Just("pageSize".to_owned()),
                        Just("pageToken".to_owned()),
                        Just("status".to_owned()),
                        Just("taskId".to_owned()),
                        Just("contextId".to_owned()),
                        Just("kind".to_owned()),
                        Just("file".to_owned()),
                        Just("data".to_owned()),
                        "[a-z]{1,6}",
                    ],
                    inner,
                ),
                0..6,
            )
            .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn check_response(status: u16, body: &Value) -> Result<(), TestCaseError> {
    prop_assert!(status == 200 || status == 413, "status {status}");
    prop_assert_eq!(&body["jsonrpc"], &json!("2.0"), "body {}", body);
    if let Some(error) = body.get("error") {
        let code = error["code"].as_i64().unwrap_or(0);
        prop_assert!(CODES.contains(&code), "unexpected code in {}", body);
        prop_assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
    } else {
        prop_assert!(
            body.get("result").is_some(),
            "neither result nor error: {}",
            body
        );
    }
    Ok(())
}

fn runtime_and_gateway() -> (tokio::runtime::Runtime, Gateway) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let gw = rt.block_on(gateway_with({
        let mut gateway_config = GatewayConfig::default();
        gateway_config.request_timeout_ms = 500;
        gateway_config
    }));
    (rt, gw)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_get_a_json_rpc_answer(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let (rt, gw) = runtime_and_gateway();
        let (status, body) = rt.block_on(gw.post_raw(bytes));
        check_response(status, &body)?;
    }

    #[test]
    fn arbitrary_requests_get_a_json_rpc_answer(
        method in prop::sample::select(METHODS.to_vec()),
        params in json_value(),
        id in prop_oneof![Just(json!(1)), Just(json!("x")), Just(Value::Null), Just(json!({"o": 1}))],
    ) {
        let (rt, gw) = runtime_and_gateway();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if method.contains("Stream") || method.contains("stream") || method.contains("ubscribe") {
            let fut = gw.stream(method, body["params"].clone(), None);
            let (content_type, events) = rt.block_on(async {
                tokio::time::timeout(DEADLINE, fut).await.expect("stream ended")
            });
            prop_assert_eq!(content_type, "text/event-stream");
            for (_, event) in &events {
                check_response(200, event)?;
            }
        } else {
            let (status, response) = rt.block_on(gw.post_raw(body.to_string()));
            check_response(status, &response)?;
        }
    }
}
