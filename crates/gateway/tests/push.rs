//! Push notifications end to end: a real gateway on 127.0.0.1:0 and real webhook
//! receivers (axum on 127.0.0.1:0) that record every request.

mod common;

use fundi_gateway::PushSettings;
use fundi_runtime::TaskId;
use serde_json::{Value, json};

use common::push::{Mode, Receiver, fixture, got_terminal, seqs, settings};
use common::{DEADLINE, message, request};

#[tokio::test]
async fn every_event_is_delivered_in_order_with_the_configured_headers() {
    let fx = fixture(settings()).await;
    let receiver = Receiver::start(Mode::Ok).await;
    let card: Value = fx
        .http
        .get(format!("{}/.well-known/agent-card.json", fx.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["capabilities"]["pushNotifications"], json!(true));

    let config = json!({"url": receiver.url, "token": "tok-123",
                        "authentication": {"scheme": "bearer", "credentials": "s3cret"}});
    let task = fx.send_with_push(json!({"steps": 3}), config, true).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let id = task["id"].as_str().unwrap();
    let hits = receiver
        .wait_until("the terminal event", got_terminal)
        .await;
    assert_eq!(seqs(&hits), fx.deliverable(id).await);
    assert_eq!(
        hits.len(),
        seqs(&hits).len(),
        "no duplicates without failures"
    );
    assert!(
        hits[0].body["task"]["id"] == json!(id),
        "first comes the task: {:?}",
        hits[0]
    );
    for hit in &hits {
        let h = &hit.headers;
        assert_eq!(h["x-a2a-notification-token"], "tok-123");
        assert_eq!(h["authorization"], "Bearer s3cret");
        assert_eq!(h["content-type"], "application/json");
        let trace = h["traceparent"].to_str().unwrap();
        let parts: Vec<&str> = trace.split('-').collect();
        assert_eq!(
            (parts.len(), parts[0], parts[1].len(), parts[3]),
            (4, "00", 32, "01"),
            "{trace}"
        );
        // A bare StreamResponse: exactly one member.
        let object = hit.body.as_object().unwrap();
        assert_eq!(object.len(), 1, "{}", hit.body);
        let kind = object.keys().next().unwrap();
        assert!(
            ["task", "statusUpdate", "artifactUpdate"].contains(&kind.as_str()),
            "{kind}"
        );
    }
}

/// A blocking send's task is stored before its skill starts, with a push config (whose
/// worker reads the task as soon as the config is attached) or without.
#[tokio::test]
async fn a_blocking_send_with_a_push_config_is_stored_before_its_skill_starts() {
    let fx = fixture(settings()).await;
    let receiver = Receiver::start(Mode::Ok).await;
    for with_push in [true, false] {
        let mut configuration = json!({"returnImmediately": false});
        if with_push {
            configuration["taskPushNotificationConfig"] = json!({"url": receiver.url});
        }
        let mut peek = message("peek", Value::Null);
        peek["metadata"] = json!({"skill": "peek"});
        let sent = fx
            .ok(
                "SendMessage",
                json!({"message": peek, "configuration": configuration}),
            )
            .await;
        let task = &sent["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
        let id = TaskId::from(task["id"].as_str().unwrap().to_owned());
        let stored = fx.stored_at_start.lock().unwrap().get(&id).copied();
        assert_eq!(stored, Some(true), "push config: {with_push}");
    }
    let hits = receiver
        .wait_until("the terminal event", got_terminal)
        .await;
    assert!(hits[0].body["task"]["id"].is_string(), "{:?}", hits[0]);
}

/// A push config given with a streaming send is attached as with a blocking one: the
/// receiver gets every event the stream carried, from the task on.
#[tokio::test]
async fn a_streaming_send_with_a_push_config_delivers_what_it_streams() {
    let fx = fixture(settings()).await;
    let receiver = Receiver::start(Mode::Ok).await;
    let c = &fx.credentials;
    let response = fx
        .http
        .post(format!("{}/a2a", fx.url))
        .bearer_auth(&c.admin_token)
        .header("X-Fundi-User-Token", &c.alice)
        .timeout(DEADLINE)
        .json(&request(
            "SendStreamingMessage",
            json!({"message": message("push", json!({"steps": 3})),
                   "configuration": {"taskPushNotificationConfig": {"url": receiver.url}}}),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // The stream ends after the terminal event.
    let body = response.text().await.unwrap();
    let streamed: Vec<Value> = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str::<Value>(data.trim()).unwrap()["result"].clone())
        .collect();
    let id = streamed[0]["task"]["id"].as_str().unwrap().to_owned();
    let hits = receiver
        .wait_until("the terminal event", got_terminal)
        .await;
    assert_eq!(seqs(&hits), fx.deliverable(&id).await);
    assert!(hits[0].body["task"]["id"] == json!(id), "{:?}", hits[0]);
    let delivered: Vec<&Value> = hits.iter().map(|h| &h.body).collect();
    let streamed_updates: Vec<&Value> = streamed
        .iter()
        .filter(|item| item.get("message").is_none())
        .collect();
    assert_eq!(delivered.len(), streamed_updates.len(), "{body}");
}

#[tokio::test]
async fn a_receiver_down_for_a_while_gets_every_event_in_order_once_up() {
    let fx = fixture(settings()).await;
    // A port with nothing listening: every attempt is refused until the receiver starts.
    let reserved = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = reserved.local_addr().unwrap();
    drop(reserved);
    let config = json!({"url": format!("http://{addr}/hook")});
    let task = fx.send_with_push(json!({"steps": 5}), config, true).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    let id = task["id"].as_str().unwrap();
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let receiver = Receiver::on(listener, Mode::Ok);
    let hits = receiver
        .wait_until("the terminal event", got_terminal)
        .await;
    assert_eq!(
        seqs(&hits),
        fx.deliverable(id).await,
        "every event, in order"
    );
}

#[tokio::test]
async fn a_dead_letter_waits_for_an_operator_then_delivers_in_order() {
    let fx = fixture(PushSettings {
        max_attempts: 3,
        ..settings()
    })
    .await;
    let receiver = Receiver::start(Mode::Status(500)).await;
    let task = fx
        .send_with_push(
            json!({"steps": 2}),
            json!({"url": receiver.url, "id": "hook"}),
            true,
        )
        .await;
    let id = task["id"].as_str().unwrap().to_owned();
    let letters = fx.dead_letters().await;
    assert_eq!(letters[0]["taskId"], json!(id));
    assert_eq!(letters[0]["configId"], "hook");
    assert_eq!(
        letters[0]["seq"],
        json!(1),
        "stuck at the first event: {letters}"
    );
    assert_eq!(letters[0]["attempts"], json!(3));
    assert!(
        letters[0]["lastError"]
            .as_str()
            .unwrap()
            .contains("HTTP 500"),
        "{letters}"
    );
    // Parked: three attempts of the first event, nothing after it.
    assert!(receiver.hits().iter().all(|h| h.seq == 1));
    assert_eq!(receiver.hits().len(), 3);

    // Only admins see or replay dead letters.
    let auditor = fx.credentials.audit_token.clone();
    let (status, _) = fx
        .admin_as(
            &auditor,
            reqwest::Method::GET,
            "/admin/push/dead-letters",
            None,
        )
        .await;
    assert_eq!(status, 403);
    let (status, _) = fx
        .admin(
            reqwest::Method::POST,
            "/admin/push/replay",
            Some(json!({"taskId": id, "configId": "nope"})),
        )
        .await;
    assert_eq!(status, 404);

    receiver.set(Mode::Ok);
    let (status, body) = fx
        .admin(
            reqwest::Method::POST,
            "/admin/push/replay",
            Some(json!({"taskId": id, "configId": "hook"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let hits = receiver
        .wait_until("the terminal event", got_terminal)
        .await;
    assert_eq!(seqs(&hits), fx.deliverable(&id).await);
    let (_, body) = fx
        .admin(reqwest::Method::GET, "/admin/push/dead-letters", None)
        .await;
    assert_eq!(body["deadLetters"], json!([]));
}

#[tokio::test]
async fn a_hanging_receiver_delays_neither_the_task_nor_other_receivers() {
    let fx = fixture(PushSettings {
        timeout_ms: 120_000,
        ..settings()
    })
    .await;
    let stuck = Receiver::start(Mode::Hang).await;
    let fine = Receiver::start(Mode::Ok).await;
    let task = fx
        .send_with_push(
            json!({"hold": true}),
            json!({"url": stuck.url, "id": "stuck"}),
            false,
        )
        .await;
    let id = task["id"].as_str().unwrap().to_owned();
    fx.ok(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "id": "fine", "url": fine.url}),
    )
    .await;
    // While the first receiver holds its first request: the task is canceled at once,
    // another task runs to completion, and the other receiver gets the end.
    let canceled = fx.ok("CancelTask", json!({"id": id})).await;
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let done = fx
        .call(
            "SendMessage",
            json!({"message": message("other", json!({"steps": 2}))}),
        )
        .await;
    assert_eq!(
        done["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    fine.wait_until("the terminal event", got_terminal).await;
    assert_eq!(
        stuck.hits().len(),
        1,
        "the hanging receiver holds the first delivery"
    );
}

#[tokio::test]
async fn deleting_a_config_stops_its_deliveries() {
    let fx = fixture(settings()).await;
    let gone = Receiver::start(Mode::Ok).await;
    let kept = Receiver::start(Mode::Ok).await;
    let task = fx
        .send_with_push(
            json!({"ask": true}),
            json!({"url": gone.url, "id": "gone"}),
            true,
        )
        .await;
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let id = task["id"].as_str().unwrap().to_owned();
    let asked = fx.deliverable(&id).await;
    gone.wait_until("everything up to input-required", |h| seqs(h) == asked)
        .await;
    fx.ok(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "id": "kept", "url": kept.url}),
    )
    .await;
    let deleted = fx
        .ok(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "gone"}),
        )
        .await;
    assert_eq!(deleted, json!({}));
    let answer = json!({"messageId": "answer", "role": "ROLE_USER", "taskId": id,
                        "parts": [{"text": "go on"}]});
    let done = fx.ok("SendMessage", json!({"message": answer})).await;
    assert_eq!(done["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    kept.wait_until("the terminal event", got_terminal).await;
    let last_asked = *asked.last().unwrap();
    assert!(
        gone.hits().iter().all(|h| h.seq <= last_asked),
        "a deleted config got events: {:?}",
        gone.hits()
    );
    // The config created later gets only what came after it.
    assert!(
        kept.hits().iter().all(|h| h.seq > last_asked),
        "{:?}",
        kept.hits()
    );
}

#[tokio::test]
async fn the_config_methods_work_in_both_dialects_for_the_owner_only() {
    let fx = fixture(PushSettings {
        max_configs_per_task: 2,
        ..settings()
    })
    .await;
    let receiver = Receiver::start(Mode::Ok).await;
    let id = fx.hold().await;

    // v1.0: flat objects; a config without an id gets the task's id.
    let created = fx
        .ok(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": receiver.url, "token": "t"}),
        )
        .await;
    assert_eq!(
        created,
        json!({"id": id, "taskId": id, "url": receiver.url, "token": "t"})
    );
    let got = fx
        .ok(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": id}),
        )
        .await;
    assert_eq!(got, created);
    // v0.3: nested objects, a bare list, null from delete.
    let set = fx
        .ok(
            "tasks/pushNotificationConfig/set",
            json!({"taskId": id, "pushNotificationConfig": {"id": "b", "url": receiver.url,
                   "authentication": {"schemes": ["Bearer"], "credentials": "c"}}}),
        )
        .await;
    assert_eq!(
        set,
        json!({"taskId": id, "pushNotificationConfig": {"id": "b", "url": receiver.url,
               "authentication": {"schemes": ["Bearer"], "credentials": "c"}}})
    );
    let listed = fx
        .ok("tasks/pushNotificationConfig/list", json!({"id": id}))
        .await;
    assert_eq!(listed.as_array().unwrap().len(), 2);
    let listed = fx
        .ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(listed["configs"].as_array().unwrap().len(), 2, "{listed}");
    assert_eq!(
        listed["configs"][1]["authentication"],
        json!({"scheme": "Bearer", "credentials": "c"})
    );

    // The per-task limit; replacing an existing id is not a new config.
    let third = fx
        .call(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": "c", "url": receiver.url}),
        )
        .await;
    assert_eq!(third["error"]["code"], json!(-32602), "{third}");
    assert!(
        third["error"]["message"]
            .as_str()
            .unwrap()
            .contains("push.max-configs-per-task")
    );
    fx.ok(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "id": "b", "url": receiver.url}),
    )
    .await;

    let missing = fx
        .call(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "zzz"}),
        )
        .await;
    assert_eq!(missing["error"]["code"], json!(-32001), "{missing}");
    let deleted = fx
        .ok(
            "tasks/pushNotificationConfig/delete",
            json!({"id": id, "pushNotificationConfigId": "b"}),
        )
        .await;
    assert_eq!(deleted, Value::Null);
    // Idempotent.
    fx.ok(
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": id, "id": "b"}),
    )
    .await;
    let listed = fx
        .ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(listed["configs"].as_array().unwrap().len(), 1);

    // Bob: every method on alice's task is "not found", as for no task at all.
    let c = &fx.credentials;
    for (method, params) in [
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": receiver.url}),
        ),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": id}),
        ),
        ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": id}),
        ),
        ("tasks/pushNotificationConfig/get", json!({"id": id})),
    ] {
        let answer = fx.call_as(&c.admin_token, &c.bob, method, params).await;
        assert_eq!(answer["error"]["code"], json!(-32001), "{method}: {answer}");
    }
    let still = fx
        .ok(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": id}),
        )
        .await;
    assert_eq!(still, created, "bob's delete changed nothing");
    for (method, params) in [
        ("CreateTaskPushNotificationConfig", json!({"taskId": id})),
        ("GetTaskPushNotificationConfig", json!({"id": id})),
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": receiver.url, "authentication": {"credentials": "x"}}),
        ),
    ] {
        let answer = fx.call(method, params).await;
        assert_eq!(answer["error"]["code"], json!(-32602), "{method}: {answer}");
    }
    fx.ok("CancelTask", json!({"id": id})).await;
}

#[tokio::test]
async fn webhook_addresses_inside_the_network_are_refused() {
    let fx = fixture(PushSettings {
        allowed_hosts: Vec::new(),
        ..settings()
    })
    .await;
    let id = fx.hold().await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://10.0.0.1/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]:9/hook",
        "http://localhost:9/hook",
        "http://0.0.0.0/hook",
        "file:///etc/passwd",
    ] {
        let answer = fx
            .call(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "url": url}),
            )
            .await;
        assert_eq!(answer["error"]["code"], json!(-32602), "{url}: {answer}");
        let text = answer["error"]["message"].as_str().unwrap();
        assert!(text.contains("url"), "{url}: {text}");
        assert!(
            text.contains("which webhooks may not use") || text.contains("not an http(s) URL"),
            "{url}: {text}"
        );
    }
    // In a send, the refusal comes before the task is created.
    let before = fx.task_count().await;
    let answer = fx
        .call(
            "SendMessage",
            json!({"message": message("x", Value::Null),
                   "configuration": {"taskPushNotificationConfig": {"url": "http://10.1.2.3/x"}}}),
        )
        .await;
    assert_eq!(answer["error"]["code"], json!(-32602), "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("configuration.taskPushNotificationConfig.url"),
        "{answer}"
    );
    assert_eq!(fx.task_count().await, before);
    fx.ok("CancelTask", json!({"id": id})).await;
}

#[tokio::test]
async fn redirects_are_not_followed_and_endless_answers_are_cut_short() {
    let fx = fixture(PushSettings {
        max_attempts: 2,
        ..settings()
    })
    .await;
    let target = Receiver::start(Mode::Ok).await;
    let redirecting = Receiver::start(Mode::Redirect(target.url.clone())).await;
    let endless = Receiver::start(Mode::Endless).await;
    let task = fx
        .send_with_push(
            json!({"steps": 1}),
            json!({"url": redirecting.url, "id": "r"}),
            true,
        )
        .await;
    let id = task["id"].as_str().unwrap().to_owned();
    fx.ok(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "id": "e", "url": endless.url}),
    )
    .await;
    // The config made after the end gets nothing more; send a fresh task for it.
    let second = fx
        .send_with_push(
            json!({"steps": 1}),
            json!({"url": endless.url, "id": "e"}),
            true,
        )
        .await;
    let second_id = second["id"].as_str().unwrap().to_owned();
    let hits = endless.wait_until("the terminal event", got_terminal).await;
    assert_eq!(
        seqs(&hits),
        fx.deliverable(&second_id).await,
        "endless bodies still count as delivered"
    );

    let letters = fx.dead_letters().await;
    assert!(
        letters[0]["lastError"]
            .as_str()
            .unwrap()
            .contains("HTTP 307"),
        "{letters}"
    );
    assert!(target.hits().is_empty(), "the redirect was followed");
}
