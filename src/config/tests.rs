//! Loading and checking `fundi serve`'s settings.

use super::*;

/// The shipped file must parse, and say what the defaults are (plus the one
/// documented difference, the default skill).
#[test]
fn the_shipped_config_file_is_the_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_CONFIG_PATH);
    let from_file: AppConfig = Figment::from(Serialized::defaults(AppConfig::default()))
        .merge(Toml::file_exact(path))
        .extract()
        .unwrap();
    let mut expected = AppConfig::default();
    expected.runtime.default_skill = Some("echo".into());
    assert_eq!(from_file, expected);
}

fn parse(toml: &str) -> Result<AppConfig, String> {
    Figment::from(Serialized::defaults(AppConfig::default()))
        .merge(Toml::string(toml))
        .extract::<AppConfig>()
        .map_err(describe)
}

#[test]
fn bad_values_are_refused_naming_the_field() {
    let err = parse("[store]\ndurability = \"sometimes\"").unwrap_err();
    assert!(err.contains("store.durability"), "{err}");
    let err = parse("[runtime]\ncancel-grace-ms = \"soon\"").unwrap_err();
    assert!(err.contains("runtime.cancel-grace-ms"), "{err}");
    let err = parse("[server]\nbindd = \"127.0.0.1:1\"").unwrap_err();
    assert!(err.contains("bindd"), "{err}");
    let mut config = parse("[skills]\nenabled = [\"echo\", \"nope\"]").unwrap();
    let err = config.validate().unwrap_err().to_string();
    assert!(
        err.contains("skills.enabled") && err.contains("nope"),
        "{err}"
    );
    config = parse("[store.postgres]\nstatement-timeout = \"a while\"").unwrap();
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("store.postgres.statement-timeout"), "{err}");
    config = parse("[store.postgres]\nstatements-at-once = 0").unwrap();
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("store.postgres.statements-at-once"), "{err}");
    // A pool smaller than the default needs no setting of its own.
    config = parse("[store.postgres]\npool-size = 1").unwrap();
    config.validate().unwrap();
    assert_eq!(AppConfig::default().store.postgres.statements_at_once, 2);
    config = parse("[store.postgres]\nstatement-timeout = \"0s\"").unwrap();
    assert_eq!(config.store.postgres_statement_timeout().unwrap(), None);
    assert_eq!(
        AppConfig::default()
            .store
            .postgres_statement_timeout()
            .unwrap(),
        Some(std::time::Duration::from_secs(30))
    );
    for (toml, field) in [
        ("node-id = \"\"", "store.postgres.node-id"),
        (
            "node-id = \"n1\"\nlease-time = \"soon\"",
            "store.postgres.lease-time",
        ),
        ("node-id = \"n1\"\nlease-time = \"100ms\"", "at least 1s"),
        (
            "node-id = \"n1\"\nrenew-deadline = \"later\"",
            "store.postgres.renew-deadline",
        ),
        (
            "node-id = \"n1\"\nlease-time = \"10s\"\nrenew-deadline = \"10s\"",
            "at most nine tenths",
        ),
    ] {
        config = parse(&format!(
            "[store]\nkind = \"postgres\"\n[store.postgres]\n{toml}"
        ))
        .unwrap();
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains(field), "{toml}: {err}");
    }
    config = parse("[store.postgres]\nnode-id = \"n1\"").unwrap();
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("needs store.kind = \"postgres\""), "{err}");
    config = parse("[store]\nkind = \"postgres\"\n[store.postgres]\nnode-id = \"n1\"").unwrap();
    let lease = config.store.postgres_lease().unwrap().unwrap();
    assert_eq!(
        (lease.node.as_str(), lease.ttl, lease.renew_deadline),
        (
            "n1",
            std::time::Duration::from_secs(10),
            std::time::Duration::from_secs(10) * 2 / 3
        )
    );
    config = parse(
        "[store]\nkind = \"postgres\"\n[store.postgres]\nnode-id = \"n1\"\nrenew-deadline = \"5s\"",
    )
    .unwrap();
    let lease = config.store.postgres_lease().unwrap().unwrap();
    assert_eq!(lease.renew_deadline, std::time::Duration::from_secs(5));
    assert_eq!(AppConfig::default().store.postgres_lease().unwrap(), None);
    config = parse("[runtime]\nmax-concurrent-runs = 0").unwrap();
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("runtime.max-concurrent-runs"), "{err}");
    config = parse("[skills.chaos-run]\nallowed-targets = [\"db.internal\"]").unwrap();
    let err = config.validate().unwrap_err().to_string();
    assert!(
        err.contains("skills.chaos-run.allowed-targets") && err.contains("host:port"),
        "{err}"
    );
    for (toml, field) in [
        (
            "workspaces = [\"srv\"]",
            "workspaces[0] must be an absolute path",
        ),
        ("cookie-flags = [\"Partitioned\"]", "cookie-flags"),
        (
            "[[skills.heal-issue.loop]]\nsource = \"chaos-run\"\nsite = \"http://x/\"\n\
             repository = \"/srv\"",
            "loop[0].source",
        ),
        (
            "[[skills.heal-issue.loop]]\nsource = \"a11y-audit\"\nmin-severity = \"high\"\n\
             site = \"http://x/\"\nrepository = \"/srv\"",
            "loop[0].min-severity",
        ),
    ] {
        config = parse(&format!("[skills.heal-issue]\n{toml}")).unwrap();
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains(field), "{toml}: {err}");
    }
}
