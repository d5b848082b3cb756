//! The JSON-RPC 2.0 envelope: classified by hand from a `Value`, so that every malformed
//! request gets the right code (-32700, -32600, -32601) and its id echoed when valid.

use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::dialect::{Dialect, Method};
use crate::error::ApiError;

/// The longest string `id` a request may carry, in bytes.
pub(crate) const MAX_RPC_ID_LEN: usize = 256;

/// A request whose envelope is valid.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id, echoed with its JSON type (string, number or null).
    pub id: Value,
    /// What to do.
    pub method: Method,
    /// In which dialect.
    pub dialect: Dialect,
    /// The params as sent (`Null` when absent); checked by the method's decoder, so that a
    /// streaming method reports a bad one as an SSE event.
    pub params: Value,
}

/// An envelope error with the id to answer with (`null` when it is not known).
#[derive(Debug, Clone, PartialEq)]
pub struct EnvelopeError {
    /// The id to echo.
    pub id: Value,
    /// The error.
    pub error: ApiError,
}

/// Parses and classifies a request body.
pub fn parse(body: &[u8]) -> Result<Request, Box<EnvelopeError>> {
    let fail = |id: Value, error: ApiError| Box::new(EnvelopeError { id, error });
    let value: Value =
        serde_json::from_slice(body).map_err(|e| fail(Value::Null, ApiError::parse_error(e)))?;
    let mut object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Err(fail(
                Value::Null,
                ApiError::invalid_request("batch requests are not supported"),
            ));
        }
        _ => {
            return Err(fail(
                Value::Null,
                ApiError::invalid_request("the request must be a JSON object"),
            ));
        }
    };
    let id = match object.remove("id") {
        None | Some(Value::Null) => Value::Null,
        // Refused before it could be echoed: an answer is never as large as its id.
        Some(Value::String(id)) if id.len() > MAX_RPC_ID_LEN => {
            return Err(fail(
                Value::Null,
                ApiError::invalid_request(format!(
                    "id is {} bytes; at most {MAX_RPC_ID_LEN} are accepted",
                    id.len()
                )),
            ));
        }
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        Some(_) => {
            return Err(fail(
                Value::Null,
                ApiError::invalid_request("id must be a string, a number or null"),
            ));
        }
    };
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(fail(
            id,
            ApiError::invalid_request("jsonrpc must be \"2.0\""),
        ));
    }
    let name = match object.get("method") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        _ => {
            return Err(fail(
                id,
                ApiError::invalid_request("method must be a non-empty string"),
            ));
        }
    };
    let Some((method, dialect)) = Method::parse(&name) else {
        return Err(fail(id, ApiError::method_not_found(&name)));
    };
    let params = object.remove("params").unwrap_or(Value::Null);
    Ok(Request {
        id,
        method,
        dialect,
        params,
    })
}

/// A success response.
pub(crate) fn success(id: &Value, result: &RawValue) -> String {
    #[derive(serde::Serialize)]
    struct Success<'a> {
        jsonrpc: &'static str,
        id: &'a Value,
        result: &'a RawValue,
    }
    let success = Success {
        jsonrpc: "2.0",
        id,
        result,
    };
    // An id is a `Value` and a result valid JSON text: writing them cannot fail.
    serde_json::to_string(&success).unwrap_or_default()
}

/// An error response.
pub(crate) fn failure(id: &Value, error: &ApiError, dialect: Dialect) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_json(dialect)})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &str) -> (i32, Value) {
        let e = parse(body.as_bytes()).unwrap_err();
        (e.error.code(), e.id)
    }

    #[test]
    fn envelope_errors_get_their_codes_and_ids() {
        assert_eq!(code("{not json"), (-32700, Value::Null));
        assert_eq!(code("[]"), (-32600, Value::Null));
        assert_eq!(code("3"), (-32600, Value::Null));
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"GetTask"}"#),
            (-32600, Value::Null)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"1.0","id":7,"method":"GetTask"}"#),
            (-32600, json!(7))
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":"x","method":""}"#),
            (-32600, json!("x"))
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":"x","method":5}"#),
            (-32600, json!("x"))
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"tasks/list"}"#),
            (-32601, json!(1))
        );
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":"{}","method":"GetTask"}}"#,
            "i".repeat(257)
        );
        assert_eq!(code(&long), (-32600, Value::Null));
    }

    #[test]
    fn valid_envelopes_pick_the_dialect_from_the_method_name() {
        let r =
            parse(br#"{"jsonrpc":"2.0","id":"a","method":"message/send","params":{}}"#).unwrap();
        assert_eq!((r.method, r.dialect), (Method::SendMessage, Dialect::V03));
        // No id is answered like a null id (A2A has no notifications).
        let r = parse(br#"{"jsonrpc":"2.0","method":"ListTasks"}"#).unwrap();
        assert_eq!(
            (r.method, r.dialect, r.params),
            (Method::ListTasks, Dialect::V1, Value::Null)
        );
    }
}
