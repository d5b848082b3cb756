//! The binding's routes, escaping and Retry-After, checked without a peer.

use super::shape::{retry_after, segment};
use super::*;

#[test]
fn retry_after_is_read_as_seconds_or_a_date() {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("retry-after", "3".parse().unwrap());
    assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
    headers.insert(
        "retry-after",
        "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
    );
    assert_eq!(retry_after(&headers), Some(Duration::ZERO));
    headers.insert("retry-after", "soon".parse().unwrap());
    assert_eq!(retry_after(&headers), None);
}

fn endpoint(binding: &str, tenant: Option<&str>) -> Endpoint {
    Endpoint {
        peer: "b".into(),
        http: reqwest::Client::new(),
        streaming: reqwest::Client::new(),
        interface: Interface {
            url: "http://b/rest/".into(),
            protocol_binding: binding.into(),
            protocol_version: "1.0".into(),
            tenant: tenant.map(str::to_owned),
        },
        token: None,
        user: None,
    }
}

#[test]
fn each_method_has_its_http_json_route() {
    let rest = endpoint("HTTP+JSON", None);
    for (method, params, verb, url) in [
        (
            "GetTask",
            json!({"id": "t/1", "historyLength": 0}),
            Method::GET,
            "http://b/rest/tasks/t%2F1?historyLength=0",
        ),
        (
            "CancelTask",
            json!({"id": "t"}),
            Method::POST,
            "http://b/rest/tasks/t:cancel",
        ),
        (
            "SubscribeToTask",
            json!({"id": "t"}),
            Method::GET,
            "http://b/rest/tasks/t:subscribe",
        ),
        (
            "ListTasks",
            json!({"pageSize": 5, "status": "TASK_STATE_WORKING"}),
            Method::GET,
            "http://b/rest/tasks?pageSize=5&status=TASK_STATE_WORKING",
        ),
        (
            "GetExtendedAgentCard",
            json!({}),
            Method::GET,
            "http://b/rest/extendedAgentCard",
        ),
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t", "url": "http://h/"}),
            Method::POST,
            "http://b/rest/tasks/t/pushNotificationConfigs",
        ),
        (
            "ListTaskPushNotificationConfigs",
            json!({"taskId": "t"}),
            Method::GET,
            "http://b/rest/tasks/t/pushNotificationConfigs",
        ),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": "t", "id": "c"}),
            Method::GET,
            "http://b/rest/tasks/t/pushNotificationConfigs/c",
        ),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": "t", "id": "c"}),
            Method::DELETE,
            "http://b/rest/tasks/t/pushNotificationConfigs/c",
        ),
        (
            "SendMessage",
            json!({"message": {}}),
            Method::POST,
            "http://b/rest/message:send",
        ),
    ] {
        let (got_verb, got_url, _) = rest.request(method, params);
        assert_eq!((got_verb, got_url.as_str()), (verb, url), "{method}");
    }
    let tenant = endpoint("HTTP+JSON", Some("acme"));
    assert_eq!(
        tenant.request("CancelTask", json!({"id": "t"})).1,
        "http://b/rest/acme/tasks/t:cancel"
    );
    let (verb, url, body) =
        endpoint("JSONRPC", Some("acme")).request("GetTask", json!({"id": "t"}));
    assert_eq!((verb, url.as_str()), (Method::POST, "http://b/rest"));
    assert_eq!(
        (body["method"].as_str(), body["params"]["tenant"].as_str()),
        (Some("GetTask"), Some("acme"))
    );
}

#[test]
fn task_ids_are_escaped_in_paths() {
    assert_eq!(segment("a/b c"), "a%2Fb%20c");
}
