//! The house style's checks (CONTRIBUTING.md), run with the rest of the suite so that CI
//! enforces them: formatting, clippy with the workspace's lints, no module cycles,
//! modules laid out as `foo.rs` beside `foo/`, and a type's inherent impls in its own
//! module (`impls`).

#[path = "style/impls.rs"]
mod impls;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs cargo with `args` at the workspace's root, and says what it printed when it fails.
fn cargo(args: &[&str], target_dir: Option<&str>) {
    let mut command = Command::new(env!("CARGO"));
    command.args(args).current_dir(root());
    if let Some(dir) = target_dir {
        // A target directory of its own: the suite's cargo holds the lock of the usual one.
        command.env("CARGO_TARGET_DIR", root().join(dir));
    }
    let output = command.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo {}:\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_code_is_formatted() {
    cargo(&["fmt", "--all", "--", "--check"], None);
}

#[test]
fn clippy_finds_nothing() {
    cargo(
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--offline",
            "--quiet",
            "--",
            "-D",
            "warnings",
        ],
        Some("target/style"),
    );
}

/// The `.rs` files under `dir`, test folders and files left out.
fn sources(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "tests" && name != "testing" {
                sources(&path, into);
            }
        } else if name.ends_with(".rs") && !name.ends_with("tests.rs") {
            into.push(path);
        }
    }
}

/// The module path of `file` in the crate whose sources are in `src`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("lib" | "main" | "mod")
    ) {
        parts.pop();
    }
    parts
}

/// `text` without its `#[cfg(test)] mod tests { ... }` (what tests import is not a
/// dependency of the module).
fn without_tests(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    }
}

/// The paths a file names: `crate::a::b`, `super::a`, and the items of
/// `use crate::{a::b, c}`, each as module path segments (relative to the crate's root).
fn named_paths(module: &[String], text: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let bytes = text.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let segments_at = |mut at: usize| {
        let mut segments = Vec::new();
        while text[at..].starts_with("::") {
            at += 2;
            let start = at;
            while at < bytes.len() && ident(bytes[at]) {
                at += 1;
            }
            if start == at {
                break;
            }
            segments.push(text[start..at].to_owned());
        }
        segments
    };
    for (keyword, relative) in [("crate", false), ("super", true)] {
        let mut from = 0;
        while let Some(found) = text[from..].find(keyword) {
            let at = from + found;
            from = at + keyword.len();
            // Part of a longer word, a macro's `$crate`, or a path's later `super`.
            if at > 0 && (ident(bytes[at - 1]) || bytes[at - 1] == b'$' || bytes[at - 1] == b':')
                || !text[from..].starts_with("::")
            {
                continue;
            }
            let base: Vec<String> = match relative {
                true => module[..module.len().saturating_sub(1)].to_vec(),
                false => Vec::new(),
            };
            let mut base = base;
            let mut rest = segments_at(from).into_iter().peekable();
            while relative && rest.next_if(|segment| segment == "super").is_some() {
                base.pop();
            }
            paths.push(base.into_iter().chain(rest).collect());
            if !relative && text[from..].starts_with("::{") {
                let open = from + 3;
                let close = text[open..].find("};").map_or(open, |c| open + c);
                for item in text[open..close].split(|c: char| c == ',' || c.is_whitespace()) {
                    let item = item.trim_matches(|c: char| c == '{' || c == '}');
                    if !item.is_empty() {
                        paths.push(item.split("::").map(str::to_owned).collect());
                    }
                }
            }
        }
    }
    paths
}

/// The import cycles among the files of the crate whose sources are in `src`.
fn cycles(src: &Path) -> Vec<Vec<String>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|file| (module_of(src, file), file.clone()))
        .collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        let targets = edges.entry(module.clone()).or_default();
        for path in named_paths(module, without_tests(&text)) {
            // The longest prefix of the path that is a file of the crate.
            if let Some(target) = (1..=path.len())
                .rev()
                .map(|k| path[..k].to_vec())
                .find(|prefix| modules.contains_key(prefix))
                && &target != module
            {
                targets.insert(target);
            }
        }
    }
    strongly_connected(&edges)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            let mut names: Vec<String> = component.iter().map(|m| m.join("/")).collect();
            names.sort();
            names
        })
        .collect()
}

/// Tarjan's strongly connected components of `edges`.
fn strongly_connected(
    edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> Vec<Vec<Vec<String>>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        found: Vec<Vec<Vec<String>>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a Vec<String>) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let Some((w, _)) = self.edges.get_key_value(w) else {
                    continue;
                };
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                self.found.push(component);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

/// Every crate's sources: `src/` and `crates/*/src`.
fn crate_sources() -> Vec<PathBuf> {
    let mut all = vec![root().join("src")];
    for entry in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let src = entry.path().join("src");
        if src.is_dir() {
            all.push(src);
        }
    }
    all.sort();
    all
}

#[test]
fn no_two_files_of_a_crate_import_each_other() {
    let found: Vec<String> = crate_sources()
        .iter()
        .flat_map(|src| {
            cycles(src).into_iter().map(move |cycle| {
                format!(
                    "{}: {}",
                    src.strip_prefix(root()).unwrap().display(),
                    cycle.join(" <-> ")
                )
            })
        })
        .collect();
    assert_eq!(found, Vec::<String>::new());
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(src.join("a.rs"), "mod inner;\nuse crate::b::B;\n").unwrap();
    std::fs::write(src.join("a/inner.rs"), "use super::super::b;\n").unwrap();
    std::fs::write(src.join("b.rs"), "use crate::{a::A, c};\npub struct B;\n").unwrap();
    std::fs::write(src.join("c.rs"), "pub struct C;\n").unwrap();
    assert_eq!(cycles(src), vec![vec!["a".to_owned(), "b".to_owned()]]);
}

#[test]
fn a_module_with_children_is_a_file_beside_their_folder() {
    let mut files = Vec::new();
    for src in crate_sources() {
        sources(&src, &mut files);
    }
    let mod_files: Vec<String> = files
        .iter()
        .filter(|file| file.file_name().is_some_and(|name| name == "mod.rs"))
        .map(|file| file.strip_prefix(root()).unwrap().display().to_string())
        .collect();
    assert_eq!(mod_files, Vec::<String>::new());
}

#[test]
fn a_types_inherent_impls_are_in_the_module_that_defines_it() {
    let found: Vec<String> = crate_sources()
        .iter()
        .flat_map(|src| {
            let mut files = Vec::new();
            sources(src, &mut files);
            let name = src.strip_prefix(root()).unwrap().display().to_string();
            impls::misplaced(src, &files)
                .into_iter()
                .map(move |misplaced| format!("{name}/{misplaced}"))
        })
        .collect();
    assert_eq!(found, Vec::<String>::new());
}

#[test]
fn the_impl_check_finds_an_impl_in_a_sibling() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("a")).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "//! x\nmod a;\nmod b;\npub struct Top;\n",
    )
    .unwrap();
    let a = "//! x\nmod child;\npub(crate) struct A<T>(T);\nimpl<T> A<T> {}\nimpl Top {}\n";
    std::fs::write(src.join("a.rs"), a).unwrap();
    std::fs::write(src.join("a/child.rs"), "//! x\nimpl<T> super::A<T> {}\n").unwrap();
    let b = "//! x\nimpl crate::a::A<u8> {}\nimpl Clone for Top {}\n";
    std::fs::write(src.join("b.rs"), b).unwrap();
    let mut files = Vec::new();
    sources(src, &mut files);
    assert_eq!(impls::misplaced(src, &files), vec!["b.rs: A".to_owned()]);
}
