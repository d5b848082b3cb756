//! Which A2A operation an HTTP+JSON request names: its HTTP method and path, with an
//! optional leading tenant segment (`/{tenant}/tasks/{id}`). Pure, so every route and
//! every near miss is tested here.
//!
//! axum's router cannot match a segment such as `{id}:cancel`, so the path is split
//! here: a task segment's verb is what follows its last `:`.

use axum::http::Method as Http;
use percent_encoding::percent_decode_str;

use crate::dialect::Method;

/// A request's operation and the ids its path carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Route {
    /// The A2A operation.
    pub(crate) method: Method,
    /// The task in the path (`/tasks/{id}...`).
    pub(crate) task_id: Option<String>,
    /// The push config in the path (`.../pushNotificationConfigs/{configId}`).
    pub(crate) config_id: Option<String>,
    /// The leading tenant segment (`/{tenant}/tasks/{id}`).
    pub(crate) tenant: Option<String>,
    /// A v0.3 route (`/v1/...`, `v03/rest.rs`).
    pub(crate) v03: bool,
}

/// Why a request names no operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Miss {
    /// No operation lives at this path.
    NotFound,
    /// The path names a resource, but not with this HTTP method; the ones it takes.
    MethodNotAllowed(&'static [Http]),
}

/// The operation that `method` on `path` asks for, and the tenant a leading segment
/// names (which the operation's params carry, and which fundi refuses: it serves none).
pub(crate) fn route(method: &Http, path: &str) -> Result<Route, Miss> {
    let segments: Vec<String> = path
        .trim_start_matches('/')
        .split('/')
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    if segments.iter().any(String::is_empty) {
        return Err(Miss::NotFound);
    }
    // v0.3's routes: `/v1/message:send`, `/v1/tasks/{id}`, ..., and `/v1/card`.
    if segments.len() > 1 && segments[0] == crate::v03::rest::PREFIX {
        let found = match segments[1..] {
            [ref card] if card == "card" => match *method == Http::GET {
                true => Ok(Route::of(Method::GetExtendedAgentCard)),
                false => Err(Miss::MethodNotAllowed(&[Http::GET])),
            },
            _ => resource(method, &segments[1..]),
        };
        // v0.3 has no ListTasks.
        return match found {
            Ok(found) if found.method == Method::ListTasks => Err(Miss::NotFound),
            found => found.map(|found| Route { v03: true, ..found }),
        };
    }
    // The path without a tenant first: `/tasks/tasks` is the task named "tasks".
    match resource(method, &segments) {
        Err(Miss::NotFound) if segments.len() > 1 => {
            resource(method, &segments[1..]).map(|found| Route {
                tenant: Some(segments[0].clone()),
                ..found
            })
        }
        other => other,
    }
}

impl Route {
    fn of(method: Method) -> Route {
        Route {
            method,
            task_id: None,
            config_id: None,
            tenant: None,
            v03: false,
        }
    }
}

fn resource(http: &Http, segments: &[String]) -> Result<Route, Miss> {
    let strs: Vec<&str> = segments.iter().map(String::as_str).collect();
    let found = |method: Method, task: Option<&str>, config: Option<&str>| Route {
        method,
        task_id: task.map(str::to_owned),
        config_id: config.map(str::to_owned),
        tenant: None,
        v03: false,
    };
    let only = |allowed: &'static [Http], method: Method, task, config| {
        if allowed.contains(http) {
            Ok(found(method, task, config))
        } else {
            Err(Miss::MethodNotAllowed(allowed))
        }
    };
    const GET: &[Http] = &[Http::GET];
    const POST: &[Http] = &[Http::POST];
    match strs.as_slice() {
        ["message:send"] => only(POST, Method::SendMessage, None, None),
        ["message:stream"] => only(POST, Method::SendStreamingMessage, None, None),
        ["extendedAgentCard"] => only(GET, Method::GetExtendedAgentCard, None, None),
        ["tasks"] => only(GET, Method::ListTasks, None, None),
        ["tasks", task] => task_segment(http, task),
        ["tasks", task, "pushNotificationConfigs"] => match *http {
            Http::POST => Ok(found(Method::CreatePushConfig, Some(task), None)),
            Http::GET => Ok(found(Method::ListPushConfigs, Some(task), None)),
            _ => Err(Miss::MethodNotAllowed(&[Http::GET, Http::POST])),
        },
        ["tasks", task, "pushNotificationConfigs", config] => match *http {
            Http::GET => Ok(found(Method::GetPushConfig, Some(task), Some(config))),
            Http::DELETE => Ok(found(Method::DeletePushConfig, Some(task), Some(config))),
            _ => Err(Miss::MethodNotAllowed(&[Http::GET, Http::DELETE])),
        },
        _ => Err(Miss::NotFound),
    }
}

/// `/tasks/{id}` (GET), `/tasks/{id}:cancel` (POST), `/tasks/{id}:subscribe` (POST in
/// the specification's text, GET in the proto's HTTP annotation: both).
fn task_segment(http: &Http, segment: &str) -> Result<Route, Miss> {
    let route = |method: Method, id: &str| Route {
        method,
        task_id: Some(id.to_owned()),
        config_id: None,
        tenant: None,
        v03: false,
    };
    if let Some((id, verb)) = segment.rsplit_once(':')
        && !id.is_empty()
    {
        match verb {
            "cancel" if *http == Http::POST => return Ok(route(Method::CancelTask, id)),
            "cancel" => return Err(Miss::MethodNotAllowed(&[Http::POST])),
            "subscribe" if matches!(*http, Http::POST | Http::GET) => {
                return Ok(route(Method::SubscribeToTask, id));
            }
            "subscribe" => return Err(Miss::MethodNotAllowed(&[Http::GET, Http::POST])),
            // Not a verb: a task id with a colon in it.
            _ => {}
        }
    }
    match *http {
        Http::GET => Ok(route(Method::GetTask, segment)),
        _ => Err(Miss::MethodNotAllowed(&[Http::GET])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(method: Http, path: &str) -> (Method, Option<String>, Option<String>) {
        let route = route(&method, path).unwrap_or_else(|e| panic!("{method} {path}: {e:?}"));
        (route.method, route.task_id, route.config_id)
    }

    fn s(text: &str) -> Option<String> {
        Some(text.to_owned())
    }

    #[test]
    fn every_operation_has_its_route() {
        assert_eq!(
            ok(Http::POST, "/message:send"),
            (Method::SendMessage, None, None)
        );
        assert_eq!(
            ok(Http::POST, "/message:stream"),
            (Method::SendStreamingMessage, None, None)
        );
        assert_eq!(ok(Http::GET, "/tasks"), (Method::ListTasks, None, None));
        assert_eq!(
            ok(Http::GET, "/tasks/t-1"),
            (Method::GetTask, s("t-1"), None)
        );
        assert_eq!(
            ok(Http::POST, "/tasks/t-1:cancel"),
            (Method::CancelTask, s("t-1"), None)
        );
        for method in [Http::POST, Http::GET] {
            assert_eq!(
                ok(method, "/tasks/t-1:subscribe"),
                (Method::SubscribeToTask, s("t-1"), None)
            );
        }
        assert_eq!(
            ok(Http::POST, "/tasks/t-1/pushNotificationConfigs"),
            (Method::CreatePushConfig, s("t-1"), None)
        );
        assert_eq!(
            ok(Http::GET, "/tasks/t-1/pushNotificationConfigs"),
            (Method::ListPushConfigs, s("t-1"), None)
        );
        assert_eq!(
            ok(Http::GET, "/tasks/t-1/pushNotificationConfigs/c-1"),
            (Method::GetPushConfig, s("t-1"), s("c-1"))
        );
        assert_eq!(
            ok(Http::DELETE, "/tasks/t-1/pushNotificationConfigs/c-1"),
            (Method::DeletePushConfig, s("t-1"), s("c-1"))
        );
        assert_eq!(
            ok(Http::GET, "/extendedAgentCard"),
            (Method::GetExtendedAgentCard, None, None)
        );
    }

    #[test]
    fn a_tenant_segment_is_read_before_any_route() {
        assert_eq!(
            ok(Http::POST, "/acme/tasks/t-1:cancel"),
            (Method::CancelTask, s("t-1"), None)
        );
        assert_eq!(
            ok(Http::POST, "/acme/message:send"),
            (Method::SendMessage, None, None)
        );
        assert_eq!(
            ok(Http::DELETE, "/acme/tasks/t/pushNotificationConfigs/c"),
            (Method::DeletePushConfig, s("t"), s("c"))
        );
        // Without a tenant first: the task named "tasks".
        assert_eq!(
            ok(Http::GET, "/tasks/tasks"),
            (Method::GetTask, s("tasks"), None)
        );
        // A tenant and nothing it could name.
        assert_eq!(route(&Http::GET, "/acme/nothing"), Err(Miss::NotFound));
        // The tenant is kept for the params (and refused there).
        let named = route(&Http::GET, "/acme/tasks/t").unwrap();
        assert!(!named.v03);
        assert_eq!(named.tenant.as_deref(), Some("acme"));
        assert_eq!(route(&Http::GET, "/tasks/t").unwrap().tenant, None);
    }

    #[test]
    fn v1_prefixed_paths_are_v03_routes() {
        let cancel = route(&Http::POST, "/v1/tasks/t-1:cancel").unwrap();
        assert!(cancel.v03 && cancel.tenant.is_none());
        assert_eq!(cancel.method, Method::CancelTask);
        let card = route(&Http::GET, "/v1/card").unwrap();
        assert_eq!(
            (card.method, card.v03),
            (Method::GetExtendedAgentCard, true)
        );
        assert_eq!(
            route(&Http::POST, "/v1/card"),
            Err(Miss::MethodNotAllowed(&[Http::GET]))
        );
        assert_eq!(
            ok(Http::GET, "/v1/tasks/t/pushNotificationConfigs/c"),
            (Method::GetPushConfig, s("t"), s("c"))
        );
        assert_eq!(route(&Http::GET, "/v1/tasks"), Err(Miss::NotFound));
    }

    #[test]
    fn ids_are_percent_decoded_and_may_hold_colons() {
        assert_eq!(
            ok(Http::GET, "/tasks/a%2Fb"),
            (Method::GetTask, s("a/b"), None)
        );
        assert_eq!(
            ok(Http::GET, "/tasks/urn:x:1"),
            (Method::GetTask, s("urn:x:1"), None)
        );
        assert_eq!(
            ok(Http::POST, "/tasks/urn:x:1:cancel"),
            (Method::CancelTask, s("urn:x:1"), None)
        );
    }

    #[test]
    fn near_misses_are_told_apart() {
        assert_eq!(route(&Http::GET, "/"), Err(Miss::NotFound));
        assert_eq!(
            route(&Http::GET, "/nothing/here/at/all"),
            Err(Miss::NotFound)
        );
        assert_eq!(route(&Http::GET, "/tasks//x"), Err(Miss::NotFound));
        assert_eq!(
            route(&Http::GET, "/message:send"),
            Err(Miss::MethodNotAllowed(&[Http::POST]))
        );
        assert_eq!(
            route(&Http::GET, "/tasks/t-1:cancel"),
            Err(Miss::MethodNotAllowed(&[Http::POST]))
        );
        assert_eq!(
            route(&Http::DELETE, "/tasks/t-1"),
            Err(Miss::MethodNotAllowed(&[Http::GET]))
        );
        assert_eq!(
            route(&Http::PUT, "/tasks/t-1/pushNotificationConfigs/c"),
            Err(Miss::MethodNotAllowed(&[Http::GET, Http::DELETE]))
        );
        // ":cancel" alone is no task.
        assert_eq!(
            route(&Http::POST, "/tasks/:cancel"),
            Err(Miss::MethodNotAllowed(&[Http::GET]))
        );
    }
}
