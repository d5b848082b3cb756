//! The plan's reading: defaults, and errors that name the field.

use serde_json::json;

use super::*;

fn config() -> ChaosConfig {
    ChaosConfig {
        allowed_targets: vec!["127.0.0.1:9000".into(), "http://127.0.0.1:9001".into()],
        max_duration_s: 60,
        // This server's own listener, on every address.
        own_listeners: vec!["0.0.0.0:8080".parse().unwrap()],
        ..ChaosConfig::default()
    }
}

#[test]
fn a_plan_is_read_with_its_defaults() {
    let plan = Plan::parse(
        &json!({"target": "http://127.0.0.1:9001/", "plan": [
            {"name": "baseline", "durationMs": 1000},
            {"durationMs": 2000, "faults": [{"type": "http_error"}], "slo": null}],
            "probe": {}, "slo": {"successRate": 0.99}}),
        &config(),
    )
    .unwrap();
    assert_eq!(plan.listen, SocketAddr::from(([127, 0, 0, 1], 0)));
    assert_eq!(plan.duration(), Duration::from_secs(3));
    assert_eq!(plan.phases[1].name, "phase-2");
    assert!(
        plan.phases[0].slo.is_some(),
        "the plan's slo holds per phase"
    );
    assert!(
        plan.phases[1].slo.is_none(),
        "unless a phase says otherwise"
    );
    let probe = plan.probe.unwrap();
    assert_eq!(probe.kind, ProbeKind::Http { path: "/".into() });
    assert_eq!((probe.rate, probe.timeout), (5, Duration::from_secs(2)));
}

#[test]
fn bad_plans_are_refused_naming_the_field() {
    let one = |faults: Value| json!([{"name": "p", "durationMs": 1000, "faults": faults}]);
    for (data, says) in [
        (json!({"plan": one(json!([]))}), "data.target is missing"),
        (
            json!({"target": "10.0.0.1:22", "plan": one(json!([]))}),
            "not an allowed target",
        ),
        (
            json!({"target": "127.0.0.1:9000"}),
            "data.plan must be a list",
        ),
        (
            json!({"target": "127.0.0.1:9000", "plan": []}),
            "data.plan must be a list",
        ),
        (
            json!({"target": "127.0.0.1:9000", "plan": one(json!([])), "listen": "0.0.0.0:0"}),
            "allow-non-loopback-listen",
        ),
        (
            json!({"target": "127.0.0.1:9000", "plan": one(json!([])), "listen": "here"}),
            "data.listen",
        ),
        (
            json!({"target": "127.0.0.1:9000", "plan": one(json!([])), "listen": "127.0.0.1:80"}),
            "skills.chaos-run.listen-ports",
        ),
        (
            json!({"target": "127.0.0.1:9000", "plan": one(json!([])), "listen": "127.0.0.1:8080"}),
            "where this fundi server itself listens",
        ),
        (
            json!({"target": "127.0.0.1:9000",
                   "plan": [{"durationMs": 40000}, {"durationMs": 30000}]}),
            "at most 60 s (skills.chaos-run.max-duration-s)",
        ),
        (
            json!({"target": "127.0.0.1:9000", "plan": [{"durationMs": 99}]}),
            "data.plan[0].durationMs",
        ),
        (
            json!({"target": "127.0.0.1:9000",
                   "plan": [{"name": "a", "durationMs": 100}, {"name": "a", "durationMs": 100}]}),
            "data.plan[1].name \"a\" names an earlier phase",
        ),
        (
            json!({"target": "127.0.0.1:9000", "plan": one(json!([{"type": "http_error"}]))}),
            "needs an http(s):// target",
        ),
        (
            json!({"target": "127.0.0.1:9000",
                   "plan": one(json!([{"type": "latency", "attributes": {"latency": "x"}}]))}),
            "data.plan[0].faults[0].attributes.latency",
        ),
        (
            json!({"target": "127.0.0.1:9000", "plan": one(json!([])), "slo": {"p99Ms": 5}}),
            "needs a probe",
        ),
        (
            json!({"target": "127.0.0.1:9000", "plan": one(json!([])),
                   "probe": {"ratePerSecond": 500}}),
            "data.probe.ratePerSecond must be probes a second from 1 to 50",
        ),
        (
            json!({"target": "127.0.0.1:9000", "plan": one(json!([])), "probe": {"path": "/"}}),
            "for http probes",
        ),
        (
            json!({"target": "127.0.0.1:9000", "plan": one(json!([])), "chaos": true}),
            "data.chaos is not a field",
        ),
    ] {
        let error = Plan::parse(&data, &config()).unwrap_err();
        assert!(error.contains(says), "{data}: {error}");
    }
}
