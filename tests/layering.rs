//! The workspace's layering, checked on its dependency graph: an embedder of the runtime
//! alone compiles no store engine, no database client and none of the operations
//! services, and each crate depends only on the crates below it (docs/architecture.md).

use std::process::Command;

/// The packages `package` compiles (normal dependencies, every feature it asks for), by
/// name.
fn compiled_by(package: &str) -> Vec<String> {
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--locked",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(["--format", "{p}", "-p", package])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut names: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Which of `forbidden` `package` compiles.
fn compiled_of(package: &str, forbidden: &[&str]) -> Vec<String> {
    compiled_by(package)
        .into_iter()
        .filter(|name| forbidden.contains(&name.as_str()))
        .collect()
}

#[test]
fn a_program_embedding_the_runtime_alone_compiles_no_store_engine_and_no_operations() {
    let heavy = [
        "fundi-sled",
        "fundi-store-sled",
        "fundi-postgres",
        "tokio-postgres",
        "fundi-ops",
        "croner",
        "chrono-tz",
        "fundi-gateway",
        "fundi-console",
        "fundi-skills",
        "axum",
    ];
    let compiled = compiled_by("example-embedded-skill");
    assert!(
        compiled.iter().any(|name| name == "fundi-runtime"),
        "the example embeds the runtime: {compiled:?}"
    );
    assert_eq!(
        compiled_of("example-embedded-skill", &heavy),
        Vec::<String>::new()
    );
}

#[test]
fn each_crate_depends_only_on_the_crates_below_it() {
    let fundi = [
        "fundi-runtime",
        "fundi-ops",
        "fundi-store-sled",
        "fundi-postgres",
        "fundi-skills",
        "fundi-peers",
        "fundi-gateway",
        "fundi-console",
        "fundi-mcp",
        "fundi-client",
    ];
    let below: [(&str, &[&str]); 10] = [
        ("fundi-runtime", &[]),
        ("fundi-ops", &["fundi-runtime"]),
        ("fundi-store-sled", &["fundi-runtime", "fundi-ops"]),
        ("fundi-postgres", &["fundi-runtime", "fundi-ops"]),
        ("fundi-skills", &["fundi-runtime", "fundi-ops"]),
        ("fundi-peers", &["fundi-runtime", "fundi-ops"]),
        (
            "fundi-gateway",
            &["fundi-runtime", "fundi-ops", "fundi-peers"],
        ),
        (
            "fundi-console",
            &["fundi-runtime", "fundi-ops", "fundi-peers", "fundi-gateway"],
        ),
        ("fundi-client", &[]),
        ("fundi-mcp", &["fundi-client"]),
    ];
    for (package, allowed) in below {
        let mut allowed = allowed.to_vec();
        allowed.push(package);
        let beyond: Vec<String> = compiled_of(package, &fundi)
            .into_iter()
            .filter(|name| !allowed.contains(&name.as_str()))
            .collect();
        assert_eq!(beyond, Vec::<String>::new(), "{package} depends on them");
    }
}
