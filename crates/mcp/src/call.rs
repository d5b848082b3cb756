//! One tool call: the caller's credentials, the fundi it reaches, and the A2A calls every
//! tool makes through it.

use serde_json::{Value, json};

use crate::Settings;
use fundi_client::{Client, ClientError, Credentials};

/// One tool call.
pub(crate) struct Call<'a> {
    pub(crate) fundi: &'a Client,
    pub(crate) credentials: &'a Credentials,
    pub(crate) settings: &'a Settings,
}

pub(crate) type Answer = Result<(String, Value), String>;

impl Call<'_> {
    pub(crate) async fn rpc(&self, method: &str, params: Value) -> Result<Value, String> {
        self.fundi
            .call(self.credentials, method, params)
            .await
            .map_err(said)
    }

    /// The proposals waiting in the inbox, if the caller may see them.
    pub(crate) async fn proposals(&self) -> Option<Vec<Value>> {
        let listed = self.fundi.get(self.credentials, "/inbox").await.ok()?;
        listed["proposals"].as_array().cloned()
    }

    /// Sends `message` as the caller's (its id the arguments' `idempotencyKey`, else a
    /// new one) and returns at once with its task, shaped for the model.
    pub(crate) async fn send_now(
        &self,
        mut message: Value,
        arguments: &Value,
    ) -> Result<(String, Value), String> {
        message["messageId"] = json!(match arguments["idempotencyKey"].as_str() {
            Some(key) if !key.is_empty() => key.to_owned(),
            _ => format!("mcp-{}", uuid::Uuid::new_v4()),
        });
        message["role"] = json!("ROLE_USER");
        let params = json!({"message": message, "configuration": {"returnImmediately": true}});
        let result = self.rpc("SendMessage", params).await?;
        Ok(crate::shape::task(&result["task"]))
    }

    /// The bridge's settings.
    pub(crate) fn settings(&self) -> &Settings {
        self.settings
    }
}

/// A required string argument.
pub(crate) fn string<'a>(arguments: &'a Value, name: &str) -> Result<&'a str, String> {
    arguments[name]
        .as_str()
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| format!("{name} is required (a string)"))
}

/// What a failed call says to the model.
pub(crate) fn said(error: ClientError) -> String {
    error.to_string()
}
