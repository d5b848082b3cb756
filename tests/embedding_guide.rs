//! docs/embedding.md's crate of its own, built as its text says: the `Cargo.toml` and the
//! `main` of "Serving it over A2A" written to a directory outside the workspace (the
//! `fundi` path pointed at this checkout, the workspace's lockfile beside it) and checked
//! with cargo, offline. A guide whose dependencies or code no longer build fails here.

use std::path::Path;
use std::process::Command;

/// The first fenced block of `kind` after `heading` in `text`, its hidden lines (`# `)
/// shown, as rustdoc compiles them.
fn block<'a>(text: &'a str, heading: &str, kind: &str) -> String {
    let section = &text[text.find(heading).unwrap_or_else(|| panic!("{heading}"))..];
    let fence = format!("```{kind}\n");
    let start = section
        .find(&fence)
        .unwrap_or_else(|| panic!("a {kind} block"))
        + fence.len();
    let body: &'a str = &section[start..start + section[start..].find("```").unwrap()];
    body.lines()
        .map(|line| match line {
            "#" => "",
            hidden if hidden.starts_with("# ") => &hidden[2..],
            shown => shown,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_embedding_guides_crate_builds_outside_the_workspace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(root.join("docs/embedding.md")).unwrap();
    let heading = "## Serving it over A2A";
    let manifest = block(&guide, heading, "toml");
    let main = block(&guide, heading, "rust,no_run");
    assert!(
        manifest.contains("fundi = { path = \"../fundi\" }"),
        "the guide names fundi by path: {manifest}"
    );
    let manifest = manifest.replace("../fundi", &root.display().to_string());

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    // An empty [workspace]: the crate is a workspace of its own, not one of this one's.
    std::fs::write(
        dir.path().join("Cargo.toml"),
        format!("{manifest}\n[workspace]\n"),
    )
    .unwrap();
    std::fs::write(dir.path().join("src/main.rs"), main).unwrap();
    std::fs::copy(root.join("Cargo.lock"), dir.path().join("Cargo.lock")).unwrap();
    // Beside clippy's build of the style test, whose dependencies it shares.
    let target = root.join("target/style");
    let output = Command::new(env!("CARGO"))
        .args(["check", "--offline", "--quiet"])
        .current_dir(dir.path())
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo");
    assert!(
        output.status.success(),
        "the guide's crate does not build:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
