//! How the tools reach fundi: its A2A JSON-RPC endpoint (and the agent card, and the
//! inbox routes) over HTTP, with the two credentials every call needs. 429 and 5xx
//! answers are tried again with backoff; a 401 never is: its message names the setting
//! to fix.

use std::time::Duration;

use serde_json::{Value, json};

/// Tries of a call answered 429 or 5xx (or not answered at all).
const TRIES: u32 = 3;

/// The first pause before a try again; doubled each time.
const BACKOFF: Duration = Duration::from_millis(200);

/// The two credentials of a call.
#[derive(Clone)]
pub struct Credentials {
    /// The client application's bearer token.
    pub token: String,
    /// The end user's token.
    pub user_token: String,
    /// The header carrying the user's token.
    pub user_header: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user_header", &self.user_header)
            .finish_non_exhaustive()
    }
}

/// Why a call to fundi did not give an answer to use.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// fundi refused the credentials.
    #[error("fundi refused the credentials (HTTP 401): {0}")]
    Unauthenticated(String),
    /// fundi answered with an error about the request (the message says what).
    #[error("{0}")]
    Refused(String),
    /// fundi could not be reached, or kept failing.
    #[error("fundi at {url} is not answering: {reason}")]
    Unreachable {
        /// Where.
        url: String,
        /// Why.
        reason: String,
    },
}

/// A fundi server, as the tools call it.
#[derive(Clone, Debug)]
pub struct Fundi {
    http: reqwest::Client,
    base: String,
    /// What to say about a 401: which settings hold the credentials.
    credentials_hint: String,
}

impl Fundi {
    /// The server at `base` (e.g. `http://127.0.0.1:8080`; a trailing `/a2a` is fine).
    pub fn new(base: &str, credentials_hint: impl Into<String>) -> Fundi {
        let base = base.trim_end_matches('/');
        let base = base.strip_suffix("/a2a").unwrap_or(base).to_owned();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap_or_default();
        Fundi {
            http,
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
    ) -> Result<Value, BackendError> {
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
            return Err(BackendError::Refused(message.to_owned()));
        }
        Ok(answer["result"].clone())
    }

    /// The public agent card.
    pub async fn card(&self) -> Result<Value, BackendError> {
        let url = format!("{}/.well-known/agent-card.json", self.base);
        let response = self
            .http
            .get(&url)
            .header("A2A-Version", "1.0")
            .send()
            .await
            .map_err(|e| self.unreachable(e.to_string()))?;
        response
            .json()
            .await
            .map_err(|e| self.unreachable(format!("the agent card is not JSON: {e}")))
    }

    /// A GET of one of fundi's own routes (`/inbox`).
    pub async fn get(&self, credentials: &Credentials, path: &str) -> Result<Value, BackendError> {
        let url = format!("{}{path}", self.base);
        self.send(|| self.http.get(&url), credentials).await
    }

    /// A POST of one of fundi's own routes (`/inbox/{task}/respond`).
    pub async fn post(
        &self,
        credentials: &Credentials,
        path: &str,
        body: &Value,
    ) -> Result<Value, BackendError> {
        let url = format!("{}{path}", self.base);
        self.send(|| self.http.post(&url).json(body), credentials)
            .await
    }

    async fn send(
        &self,
        request: impl Fn() -> reqwest::RequestBuilder,
        credentials: &Credentials,
    ) -> Result<Value, BackendError> {
        let mut pause = BACKOFF;
        let mut tries = 0;
        loop {
            tries += 1;
            let sent = request()
                .bearer_auth(&credentials.token)
                .header(credentials.user_header.as_str(), &credentials.user_token)
                .send()
                .await;
            let again = match sent {
                Ok(response) => {
                    let status = response.status();
                    let body: Value = response.json().await.unwrap_or(Value::Null);
                    if status == reqwest::StatusCode::UNAUTHORIZED {
                        return Err(BackendError::Unauthenticated(format!(
                            "{}; {}",
                            error_text(&body),
                            self.credentials_hint
                        )));
                    }
                    if !(status.is_server_error()
                        || status == reqwest::StatusCode::TOO_MANY_REQUESTS)
                    {
                        if status.is_success() || body.get("jsonrpc").is_some() {
                            return Ok(body);
                        }
                        return Err(BackendError::Refused(format!(
                            "{} (HTTP {status})",
                            error_text(&body)
                        )));
                    }
                    format!("HTTP {status}: {}", error_text(&body))
                }
                Err(error) => error.to_string(),
            };
            if tries >= TRIES {
                return Err(self.unreachable(again));
            }
            tokio::time::sleep(pause).await;
            pause *= 2;
        }
    }

    fn unreachable(&self, reason: String) -> BackendError {
        BackendError::Unreachable {
            url: self.base.clone(),
            reason,
        }
    }
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
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::http::StatusCode;
    use axum::routing::post;

    use super::*;

    /// A fake fundi answering `/a2a` with `statuses` in turn (then 200), counting calls.
    async fn fake(statuses: Vec<StatusCode>) -> (Fundi, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let router = axum::Router::new().route(
            "/a2a",
            post(move || {
                let n = seen.fetch_add(1, Ordering::SeqCst);
                let status = statuses.get(n).copied().unwrap_or(StatusCode::OK);
                async move {
                    let body = match status {
                        StatusCode::OK => {
                            json!({"jsonrpc": "2.0", "id": 1, "result": {"fine": true}})
                        }
                        _ => json!({"error": {"message": "not now"}}),
                    };
                    (status, axum::Json(body))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await });
        (Fundi::new(&url, "set FUNDI_TOKEN"), calls)
    }

    fn credentials() -> Credentials {
        Credentials {
            token: "t".into(),
            user_token: "u".into(),
            user_header: "X-Fundi-User-Token".into(),
        }
    }

    #[tokio::test]
    async fn busy_answers_are_tried_again_and_a_refused_credential_never_is() {
        let (fundi, calls) = fake(vec![
            StatusCode::SERVICE_UNAVAILABLE,
            StatusCode::TOO_MANY_REQUESTS,
        ])
        .await;
        let result = fundi
            .call(&credentials(), "GetTask", json!({}))
            .await
            .unwrap();
        assert_eq!(result, json!({"fine": true}));
        assert_eq!(
            calls.load(Ordering::SeqCst),
            3,
            "two tries again, with backoff"
        );

        let (fundi, calls) = fake(vec![StatusCode::UNAUTHORIZED; 5]).await;
        let refused = fundi
            .call(&credentials(), "GetTask", json!({}))
            .await
            .unwrap_err();
        assert!(matches!(refused, BackendError::Unauthenticated(_)));
        assert!(refused.to_string().contains("set FUNDI_TOKEN"), "{refused}");
        assert_eq!(calls.load(Ordering::SeqCst), 1, "a 401 is not tried again");

        let (fundi, calls) = fake(vec![StatusCode::BAD_GATEWAY; 5]).await;
        let down = fundi
            .call(&credentials(), "GetTask", json!({}))
            .await
            .unwrap_err();
        assert!(matches!(down, BackendError::Unreachable { .. }), "{down}");
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }
}
