//! Calls to a peer over the interface its card prefers: JSON-RPC or HTTP+JSON, A2A v1.0.
//! Every answer is classified by what the caller should do (see [`PeerError`]): a 401
//! is final, 429 and 503 carry their `Retry-After`, other 5xx and broken connections
//! are worth another try, an A2A error is the peer's last word.

mod shape;
mod sse;
mod v03;

use std::time::Duration;

use fundi_runtime::telemetry::traceparent_of;
use fundi_runtime::{Message, error_chain};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::card::Interface;
use crate::error::{PeerError, env_name};
use crate::remote::{RemoteTask, Sent};
use shape::{query, retry_after, said, segment, start};
pub(crate) use sse::Events;

/// The user-token header of a fundi peer whose card names none.
const DEFAULT_USER_HEADER: &str = "X-Fundi-User-Token";

/// The binding of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Binding {
    JsonRpc,
    Rest,
    /// JSON-RPC at A2A v0.3.
    JsonRpc03,
}

/// One peer's endpoint with fundi's credentials for it.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) peer: String,
    pub(crate) http: reqwest::Client,
    /// For streams, which last as long as the task: no overall timeout.
    pub(crate) streaming: reqwest::Client,
    pub(crate) interface: Interface,
    pub(crate) token: Option<String>,
    /// The header and the user token, when one is configured.
    pub(crate) user: Option<(String, String)>,
}

impl Endpoint {
    /// The user token's header: the one the card names, else fundi's own.
    pub(crate) fn user_header(card_header: Option<&str>) -> String {
        card_header.unwrap_or(DEFAULT_USER_HEADER).to_owned()
    }

    fn binding(&self) -> Binding {
        match self.interface.protocol_binding.as_str() {
            _ if self.interface.protocol_version.starts_with("0.3") => Binding::JsonRpc03,
            "HTTP+JSON" => Binding::Rest,
            _ => Binding::JsonRpc,
        }
    }

    /// Sends `message` (a new task's first, or one to `message.task_id`) and returns at
    /// once with the peer's task (or its whole reply, when it answers without one).
    pub(crate) async fn send(&self, message: &Message) -> Result<Sent, PeerError> {
        if self.binding() == Binding::JsonRpc03 {
            let answer = self.call("SendMessage", v03::send_params(message)).await?;
            let answer = v03::event(answer).map_err(|reason| self.unexpected(reason))?;
            return Sent::parse(&answer).map_err(|reason| self.unexpected(reason));
        }
        let params = json!({"message": message, "configuration": {"returnImmediately": true}});
        let answer = self.call("SendMessage", params).await?;
        Sent::parse(&answer).map_err(|reason| self.unexpected(reason))
    }

    /// The peer's task `id`, with its artifacts and no history.
    pub(crate) async fn get_task(&self, id: &str) -> Result<RemoteTask, PeerError> {
        let answer = self
            .call("GetTask", json!({"id": id, "historyLength": 0}))
            .await?;
        self.task(answer)
    }

    /// Cancels the peer's task `id`.
    pub(crate) async fn cancel_task(&self, id: &str) -> Result<RemoteTask, PeerError> {
        let answer = self.call("CancelTask", json!({"id": id})).await?;
        self.task(answer)
    }

    /// A task answer, read as v1.0 whatever the binding.
    fn task(&self, answer: Value) -> Result<RemoteTask, PeerError> {
        let answer = match self.binding() {
            Binding::JsonRpc03 => v03::task(answer).map_err(|reason| self.unexpected(reason))?,
            _ => answer,
        };
        RemoteTask::parse(&answer).map_err(|reason| self.unexpected(reason))
    }

    /// The events of the peer's task `id` from now on (its current state first).
    pub(crate) async fn subscribe(&self, id: &str) -> Result<Events, PeerError> {
        let (method, url, body) = self.request("SubscribeToTask", json!({"id": id}));
        let response = self
            .authorised(self.streaming.request(method, &url))
            .header("Accept", "text/event-stream")
            .json(&body)
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if is_stream && response.status().is_success() {
            let frames = match self.binding() {
                Binding::JsonRpc => sse::Frames::Enveloped,
                Binding::JsonRpc03 => sse::Frames::EnvelopedV03,
                Binding::Rest => sse::Frames::Bare,
            };
            return Ok(sse::events(response, self.peer.clone(), frames));
        }
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let text = response.text().await.unwrap_or_default();
        let answer = self.classify(status, retry_after, &text)?;
        Err(self.unexpected(format!(
            "a subscription answered without a stream: {}",
            start(&answer.to_string())
        )))
    }

    /// A call's result (JSON-RPC `result`, or the HTTP+JSON body).
    pub(crate) async fn call(&self, method: &str, params: Value) -> Result<Value, PeerError> {
        let (verb, url, body) = self.request(method, params);
        let mut request = self.authorised(self.http.request(verb, &url));
        if !body.is_null() {
            request = request.json(&body);
        }
        let response = request.send().await.map_err(|e| self.unreachable(e))?;
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let text = response.text().await.map_err(|e| self.unreachable(e))?;
        self.classify(status, retry_after, &text)
    }

    fn authorised(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let version = match self.binding() {
            Binding::JsonRpc03 => "0.3",
            _ => "1.0",
        };
        let mut request = request.header("A2A-Version", version);
        // The peer's spans join the delegating task's trace (W3C Trace Context).
        if let Some(traceparent) = traceparent_of(&tracing::Span::current()) {
            request = request.header("traceparent", traceparent);
        }
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some((header, token)) = &self.user {
            request = request.header(header.as_str(), token.as_str());
        }
        request
    }

    /// The HTTP method, URL and body of `method` with `params` on this binding.
    fn request(&self, method: &str, mut params: Value) -> (Method, String, Value) {
        if let Some(tenant) = &self.interface.tenant {
            params["tenant"] = json!(tenant);
        }
        let base = self.interface.url.trim_end_matches('/');
        if self.binding() != Binding::Rest {
            let method = match self.binding() {
                Binding::JsonRpc03 => v03::method(method),
                _ => method,
            };
            let body = json!({"jsonrpc": "2.0", "id": uuid::Uuid::now_v7().to_string(),
                "method": method, "params": params});
            return (Method::POST, base.to_owned(), body);
        }
        let base = match &self.interface.tenant {
            Some(tenant) => format!("{base}/{}", segment(tenant)),
            None => base.to_owned(),
        };
        let text = |key: &str| segment(params[key].as_str().unwrap_or_default());
        let task = format!("{base}/tasks/{}", text("id"));
        let configs = format!("{base}/tasks/{}/pushNotificationConfigs", text("taskId"));
        match method {
            "SendMessage" => (Method::POST, format!("{base}/message:send"), params),
            "GetTask" => (
                Method::GET,
                format!("{task}{}", query(&params, &["id", "tenant"])),
                Value::Null,
            ),
            "CancelTask" => (Method::POST, format!("{task}:cancel"), json!({})),
            "SubscribeToTask" => (Method::GET, format!("{task}:subscribe"), Value::Null),
            "ListTasks" => (
                Method::GET,
                format!("{base}/tasks{}", query(&params, &["tenant"])),
                Value::Null,
            ),
            "GetExtendedAgentCard" => (
                Method::GET,
                format!("{base}/extendedAgentCard"),
                Value::Null,
            ),
            "CreateTaskPushNotificationConfig" => (Method::POST, configs, params),
            "ListTaskPushNotificationConfigs" => (
                Method::GET,
                format!("{configs}{}", query(&params, &["taskId", "tenant"])),
                Value::Null,
            ),
            "GetTaskPushNotificationConfig" => (
                Method::GET,
                format!("{configs}/{}", text("id")),
                Value::Null,
            ),
            "DeleteTaskPushNotificationConfig" => (
                Method::DELETE,
                format!("{configs}/{}", text("id")),
                Value::Null,
            ),
            other => (Method::POST, format!("{base}/{other}"), params),
        }
    }

    /// An answer classified: the result, or what kind of failure it is.
    fn classify(
        &self,
        status: StatusCode,
        retry_after: Option<Duration>,
        text: &str,
    ) -> Result<Value, PeerError> {
        let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let said = said(&body, text);
        if status == StatusCode::UNAUTHORIZED {
            return Err(PeerError::Unauthorized {
                peer: self.peer.clone(),
                env: env_name(&self.peer),
                said,
                user_token: format!(
                    " and peers.{}.user-token (FUNDI__PEERS__{}__USER_TOKEN) for a fundi peer",
                    self.peer,
                    env_name(&self.peer)
                ),
            });
        }
        if status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE {
            return Err(PeerError::Busy {
                peer: self.peer.clone(),
                status: status.as_u16(),
                said,
                retry_after,
            });
        }
        if status.is_server_error() || status == StatusCode::REQUEST_TIMEOUT {
            return Err(PeerError::Unreachable {
                peer: self.peer.clone(),
                reason: format!("HTTP {status}: {said}"),
            });
        }
        if !status.is_success() {
            return Err(PeerError::Refused {
                peer: self.peer.clone(),
                message: format!("{said} (HTTP {})", status.as_u16()),
                code: None,
            });
        }
        if self.binding() == Binding::Rest && text.trim().is_empty() {
            // An empty success (a deleted push config).
            return Ok(json!({}));
        }
        if body.is_null() {
            return Err(self.unexpected(format!("an answer that is not JSON: {}", start(text))));
        }
        if self.binding() == Binding::Rest {
            return Ok(body);
        }
        if let Some(error) = body.get("error") {
            return Err(PeerError::Refused {
                peer: self.peer.clone(),
                message: said,
                code: error["code"].as_i64(),
            });
        }
        body.get("result").cloned().ok_or_else(|| {
            self.unexpected(format!(
                "a JSON-RPC answer without a result: {}",
                start(text)
            ))
        })
    }

    fn unreachable(&self, error: reqwest::Error) -> PeerError {
        PeerError::Unreachable {
            peer: self.peer.clone(),
            reason: error_chain(&error),
        }
    }

    fn unexpected(&self, reason: String) -> PeerError {
        PeerError::Unexpected {
            peer: self.peer.clone(),
            reason,
        }
    }
}

#[cfg(test)]
mod tests;
