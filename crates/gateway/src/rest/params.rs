//! An HTTP+JSON request's parts (path ids, query, body) as the `params` object the
//! JSON-RPC binding would carry, so that both bindings decode, check and answer through
//! the same code. Query parameters are camelCase ProtoJSON names (spec §11.5); numbers
//! and booleans are typed here, and anything else is left for the method's decoder to
//! refuse with the field's name.

use serde_json::{Map, Value};

use super::route::Route;
use crate::dialect::Method;
use crate::error::ApiError;

/// Query parameters that are integers in the proto.
const INTEGERS: &[&str] = &["historyLength", "pageSize"];
/// Query parameters that are booleans in the proto.
const BOOLEANS: &[&str] = &["includeArtifacts"];

/// The params of `route`'s operation, from the query string and the body (JSON text,
/// empty when there is none).
pub(crate) fn params(route: &Route, query: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    let mut params = match route.method {
        // The body is the request message.
        Method::SendMessage | Method::SendStreamingMessage | Method::CreatePushConfig => {
            body_object(body)?
        }
        // Bodies of the other operations carry nothing the path and query do not.
        _ => query_object(query)?,
    };
    match route.method {
        Method::CreatePushConfig => set_path_id(&mut params, "taskId", route.task_id.as_deref())?,
        Method::GetPushConfig | Method::ListPushConfigs | Method::DeletePushConfig => {
            set_path_id(&mut params, "taskId", route.task_id.as_deref())?;
            set_path_id(&mut params, "id", route.config_id.as_deref())?;
        }
        _ => set_path_id(&mut params, "id", route.task_id.as_deref())?,
    }
    set_path_id(&mut params, "tenant", route.tenant.as_deref())?;
    Ok(Value::Object(params))
}

/// A request body that must be a JSON object (an empty body is an empty object).
fn body_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice(body).map_err(ApiError::parse_error)? {
        Value::Object(object) => Ok(object),
        _ => Err(ApiError::invalid_request(
            "the request body must be a JSON object",
        )),
    }
}

fn query_object(query: Option<&str>) -> Result<Map<String, Value>, ApiError> {
    let mut object = Map::new();
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        let key = key.into_owned();
        let typed = if INTEGERS.contains(&key.as_str()) {
            value
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| Value::String(value.into_owned()))
        } else if BOOLEANS.contains(&key.as_str()) {
            match value.as_ref() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => Value::String(value.into_owned()),
            }
        } else {
            Value::String(value.into_owned())
        };
        if object.insert(key.clone(), typed).is_some() {
            return Err(ApiError::invalid_params(
                key,
                "is given more than once; it takes one value",
            ));
        }
    }
    Ok(object)
}

/// Puts an id from the path into the params; one the body or query gives as well must
/// agree with it.
fn set_path_id(
    params: &mut Map<String, Value>,
    field: &str,
    id: Option<&str>,
) -> Result<(), ApiError> {
    let Some(id) = id else {
        return Ok(());
    };
    match params.get(field) {
        None | Some(Value::Null) => {}
        Some(Value::String(given)) if given.is_empty() || given == id => {}
        Some(given) => {
            return Err(ApiError::invalid_params(
                field,
                format!("is {given} but the path names {id:?}"),
            ));
        }
    }
    params.insert(field.to_owned(), Value::String(id.to_owned()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn route(method: Method, task: Option<&str>, config: Option<&str>) -> Route {
        Route {
            method,
            task_id: task.map(str::to_owned),
            config_id: config.map(str::to_owned),
            tenant: None,
            v03: false,
        }
    }

    #[test]
    fn path_ids_query_and_body_become_params() {
        let get = route(Method::GetTask, Some("t"), None);
        assert_eq!(
            params(&get, Some("historyLength=2"), b"").unwrap(),
            json!({"id": "t", "historyLength": 2})
        );
        let list = route(Method::ListTasks, None, None);
        assert_eq!(
            params(
                &list,
                Some("contextId=c%201&status=TASK_STATE_WORKING&pageSize=5&includeArtifacts=true"),
                b""
            )
            .unwrap(),
            json!({"contextId": "c 1", "status": "TASK_STATE_WORKING", "pageSize": 5,
                   "includeArtifacts": true})
        );
        let send = route(Method::SendMessage, None, None);
        assert_eq!(
            params(&send, None, br#"{"message": {"messageId": "m"}}"#).unwrap(),
            json!({"message": {"messageId": "m"}})
        );
        let create = route(Method::CreatePushConfig, Some("t"), None);
        assert_eq!(
            params(&create, None, br#"{"url": "http://x/", "taskId": "t"}"#).unwrap(),
            json!({"url": "http://x/", "taskId": "t"})
        );
        let delete = route(Method::DeletePushConfig, Some("t"), Some("c"));
        assert_eq!(
            params(&delete, None, b"").unwrap(),
            json!({"taskId": "t", "id": "c"})
        );
    }

    #[test]
    fn a_value_the_path_contradicts_or_a_bad_body_is_refused() {
        let create = route(Method::CreatePushConfig, Some("t"), None);
        let error = params(&create, None, br#"{"taskId": "other"}"#).unwrap_err();
        assert_eq!(error.code(), -32602);
        assert!(error.message().contains("taskId"), "{error}");
        let send = route(Method::SendMessage, None, None);
        assert_eq!(params(&send, None, b"{oops").unwrap_err().code(), -32700);
        assert_eq!(params(&send, None, b"[1]").unwrap_err().code(), -32600);
        let list = route(Method::ListTasks, None, None);
        let error = params(&list, Some("pageSize=1&pageSize=2"), b"").unwrap_err();
        assert!(error.message().contains("pageSize"), "{error}");
        // Left as text for the decoder, which names the field.
        assert_eq!(
            params(&list, Some("pageSize=ten"), b"").unwrap(),
            json!({"pageSize": "ten"})
        );
    }
}
