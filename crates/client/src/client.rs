//! How a client reaches fundi: its A2A JSON-RPC endpoint, the agent card and fundi's own
//! routes, over HTTP, with the two credentials every call needs. 429 and 5xx answers
//! are tried again with backoff; a 401 never is: its message names the setting to fix.

use std::time::Duration;

use serde_json::{Value, json};

/// Tries of a call answered 429 or 5xx (or not answered at all).
const TRIES: u32 = 3;

/// The first pause before a try again; doubled each time.
const BACKOFF: Duration = Duration::from_millis(200);

use crate::{ClientError, Credentials};

/// A fundi server, as its clients call it. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Client {
    http: reqwest::Client,
    /// For streams, which last as long as their task: a connect timeout only.
    http_streaming: reqwest::Client,
    base: String,
    /// What to say about a 401: which settings hold the credentials.
    credentials_hint: String,
}

impl Client {
    /// The server at `base` (e.g. `http://127.0.0.1:8080`; a trailing `/a2a` is fine).
    pub fn new(base: &str, credentials_hint: impl Into<String>) -> Client {
        let base = base.trim_end_matches('/');
        let base = base.strip_suffix("/a2a").unwrap_or(base).to_owned();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap_or_default();
        let http_streaming = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        Client {
            http,
            http_streaming,
            base,
            credentials_hint: credentials_hint.into(),
        }
    }

    /// A JSON-RPC call's result.
    pub async fn call(
        &self,
        credentials: &Credentials,
        method: &str,
        params: Value,
    ) -> Result<Value, ClientError> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let url = format!("{}/a2a", self.base);
        let answer = self
            .send(
                || {
                    self.http
                        .post(&url)
                        .header("A2A-Version", "1.0")
                        .json(&body)
                },
                credentials,
            )
            .await?;
        if let Some(error) = answer.get("error") {
            let message = error["message"]
                .as_str()
                .unwrap_or("fundi refused the call");
            return Err(ClientError::Refused {
                message: message.to_owned(),
                code: error["code"].as_i64(),
            });
        }
        Ok(answer["result"].clone())
    }

    /// A streaming JSON-RPC call (`SendStreamingMessage`, `SubscribeToTask`): each result
    /// as the server sends it. A refusal before the stream opens (401, 403, 429, a bad
    /// request) is the error; it is not tried again.
    pub async fn stream_call(
        &self,
        credentials: &Credentials,
        method: &str,
        params: Value,
    ) -> Result<crate::Results, ClientError> {
        let response = self.open_stream(credentials, method, params, None).await?;
        Ok(crate::stream::results(response))
    }

    /// `SubscribeToTask` on `task`, resuming after the event `after` (sent as
    /// `Last-Event-ID`) when given: each result with its event id, so that a dropped
    /// stream can be resumed where it broke off.
    pub async fn subscribe(
        &self,
        credentials: &Credentials,
        task: &str,
        after: Option<&str>,
    ) -> Result<crate::Events, ClientError> {
        let params = json!({"id": task});
        let response = self
            .open_stream(credentials, "SubscribeToTask", params, after)
            .await?;
        Ok(crate::stream::events(response))
    }

    async fn open_stream(
        &self,
        credentials: &Credentials,
        method: &str,
        params: Value,
        after: Option<&str>,
    ) -> Result<reqwest::Response, ClientError> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let url = format!("{}/a2a", self.base);
        let mut request = self
            .http_streaming
            .post(&url)
            .header("A2A-Version", "1.0")
            .header("Accept", "text/event-stream")
            .bearer_auth(&credentials.token)
            .header(credentials.user_header.as_str(), &credentials.user_token);
        if let Some(after) = after {
            request = request.header("Last-Event-ID", after);
        }
        let response = request
            .json(&body)
            .send()
            .await
            .map_err(|e| self.unreachable(e.to_string(), !e.is_connect()))?;
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if is_stream {
            return Ok(response);
        }
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        let Ok(answer) = serde_json::from_str::<Value>(&text) else {
            return Err(self.not_json(status, &text));
        };
        if status == reqwest::StatusCode::UNAUTHORIZED {
            return Err(ClientError::Unauthenticated(format!(
                "{}; {}",
                error_text(&answer),
                self.credentials_hint
            )));
        }
        Err(ClientError::Refused {
            message: error_text(&answer),
            code: answer["error"]["code"].as_i64(),
        })
    }

    /// The public agent card.
    pub async fn card(&self) -> Result<Value, ClientError> {
        let url = format!("{}/.well-known/agent-card.json", self.base);
        let response = self
            .http
            .get(&url)
            .header("A2A-Version", "1.0")
            .send()
            .await
            .map_err(|e| self.unreachable(e.to_string(), !e.is_connect()))?;
        response
            .json()
            .await
            .map_err(|e| self.unreachable(format!("the agent card is not JSON: {e}"), true))
    }

    /// A GET of one of fundi's own routes (`/inbox`).
    pub async fn get(&self, credentials: &Credentials, path: &str) -> Result<Value, ClientError> {
        let url = format!("{}{path}", self.base);
        self.send(|| self.http.get(&url), credentials).await
    }

    /// A POST of one of fundi's own routes (`/inbox/{task}/respond`), with `body` as
    /// JSON, or empty.
    pub async fn post(
        &self,
        credentials: &Credentials,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ClientError> {
        let url = format!("{}{path}", self.base);
        let request = || match body {
            Some(body) => self.http.post(&url).json(body),
            None => self.http.post(&url),
        };
        self.send(request, credentials).await
    }

    /// A DELETE of one of fundi's own routes (`/admin/schedules/{id}`).
    pub async fn delete(
        &self,
        credentials: &Credentials,
        path: &str,
    ) -> Result<Value, ClientError> {
        let url = format!("{}{path}", self.base);
        self.send(|| self.http.delete(&url), credentials).await
    }

    async fn send(
        &self,
        request: impl Fn() -> reqwest::RequestBuilder,
        credentials: &Credentials,
    ) -> Result<Value, ClientError> {
        let mut pause = BACKOFF;
        let mut tries = 0;
        let mut answered = false;
        loop {
            tries += 1;
            let sent = request()
                .bearer_auth(&credentials.token)
                .header(credentials.user_header.as_str(), &credentials.user_token)
                .send()
                .await;
            let again = match sent {
                Ok(response) => {
                    answered = true;
                    let status = response.status();
                    let busy = status.is_server_error()
                        || status == reqwest::StatusCode::TOO_MANY_REQUESTS;
                    let text = response.text().await.unwrap_or_default();
                    let body = match serde_json::from_str::<Value>(&text) {
                        Ok(body) => body,
                        // An empty success (204) says nothing more than its status.
                        Err(_) if status.is_success() && text.trim().is_empty() => Value::Null,
                        Err(_) if busy || status == reqwest::StatusCode::UNAUTHORIZED => {
                            Value::Null
                        }
                        Err(_) => return Err(self.not_json(status, &text)),
                    };
                    if status == reqwest::StatusCode::UNAUTHORIZED {
                        return Err(ClientError::Unauthenticated(format!(
                            "{}; {}",
                            error_text(&body),
                            self.credentials_hint
                        )));
                    }
                    if !busy {
                        if status.is_success() || body.get("jsonrpc").is_some() {
                            return Ok(body);
                        }
                        return Err(ClientError::Refused {
                            message: format!("{} (HTTP {status})", error_text(&body)),
                            code: None,
                        });
                    }
                    format!("HTTP {status}: {}", error_text(&body))
                }
                Err(error) => error.to_string(),
            };
            if tries >= TRIES {
                return Err(ClientError::Unreachable {
                    url: self.base.clone(),
                    reason: again,
                    answered,
                });
            }
            tokio::time::sleep(pause).await;
            pause *= 2;
        }
    }

    /// Sends `message` (a new task, or one continuing `message.task_id`) and returns the
    /// task as the server answers: done, waiting for input, or (with
    /// `return_immediately`) as just accepted.
    pub async fn send_message(
        &self,
        credentials: &Credentials,
        message: &a2a::Message,
        return_immediately: bool,
    ) -> Result<a2a::Task, ClientError> {
        let params = json!({
            "message": message,
            "configuration": {"returnImmediately": return_immediately},
        });
        let result = self.call(credentials, "SendMessage", params).await?;
        match result.get("task") {
            Some(task) => decoded(task.clone(), "a task"),
            None => Err(ClientError::Unexpected(format!(
                "SendMessage answered without a task: {result}"
            ))),
        }
    }

    /// The task `id`, with at most `history_length` recent history messages.
    pub async fn get_task(
        &self,
        credentials: &Credentials,
        id: &str,
        history_length: Option<u32>,
    ) -> Result<a2a::Task, ClientError> {
        let mut params = json!({"id": id});
        if let Some(length) = history_length {
            params["historyLength"] = json!(length);
        }
        decoded(self.call(credentials, "GetTask", params).await?, "a task")
    }

    /// Cancels the task `id`; the task as canceled.
    pub async fn cancel_task(
        &self,
        credentials: &Credentials,
        id: &str,
    ) -> Result<a2a::Task, ClientError> {
        let result = self
            .call(credentials, "CancelTask", json!({"id": id}))
            .await?;
        decoded(result, "a task")
    }

    fn unreachable(&self, reason: String, answered: bool) -> ClientError {
        ClientError::Unreachable {
            url: self.base.clone(),
            reason,
            answered,
        }
    }

    /// An answer whose body is not JSON: likely not a fundi server at all.
    fn not_json(&self, status: reqwest::StatusCode, text: &str) -> ClientError {
        let start: String = text.chars().take(120).collect();
        ClientError::Unexpected(format!(
            "{} answered HTTP {status} with something that is not JSON (is it a fundi \
             server?): {start}",
            self.base
        ))
    }
}

/// `value` as the A2A type it should be.
fn decoded<T: serde::de::DeserializeOwned>(value: Value, what: &str) -> Result<T, ClientError> {
    serde_json::from_value(value).map_err(|e| {
        ClientError::Unexpected(format!(
            "fundi answered with something that is not {what}: {e}"
        ))
    })
}

/// A user's message of `text`, with `data` as a data part when given, for `skill` when
/// given (named in the message's metadata, as fundi's own clients send it).
pub fn user_message(text: &str, data: Option<Value>, skill: Option<&str>) -> a2a::Message {
    let mut parts = vec![a2a::Part::text(text)];
    if let Some(data) = data {
        parts.push(a2a::Part::data(data));
    }
    let mut message = a2a::Message::new(a2a::Role::User, parts);
    if let Some(skill) = skill {
        message.metadata = Some([("skill".to_owned(), json!(skill))].into_iter().collect());
    }
    message
}

/// The message of an error answer (JSON-RPC, google.rpc.Status or `{"error": "..."}`).
fn error_text(body: &Value) -> String {
    body["error"]["message"]
        .as_str()
        .or_else(|| body["error"].as_str())
        .unwrap_or("no message")
        .to_owned()
}

#[cfg(test)]
mod tests;
