//! Where a type's inherent `impl` blocks may be: in the module that defines the type
//! (its file), or in that module's own children (`foo.rs` and `foo/`), never in a
//! sibling or an unrelated module. Trait impls may live with the concern the trait
//! names.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The inherent `impl` blocks of `files` (under the crate sources `src`) whose type is
/// not defined in their file nor in one of its ancestor modules, as "file: Type".
pub(crate) fn misplaced(src: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        for name in inherent_impls(super::without_tests(&text)) {
            let defined = ancestors(src, file).iter().any(|module| {
                std::fs::read_to_string(module).is_ok_and(|text| defines(&text, &name))
            });
            if !defined {
                let shown = file.strip_prefix(src).unwrap_or(file).display();
                found.push(format!("{shown}: {name}"));
            }
        }
    }
    found
}

/// The types of the inherent `impl` blocks in `text` (`impl Foo {`, `impl<T> Foo<T> {`;
/// not `impl Trait for Foo`).
fn inherent_impls(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("\nimpl") {
        rest = &rest[at + 1..];
        let header = &rest[..rest.find('{').unwrap_or(rest.len())];
        let after_impl = &header["impl".len()..];
        if !after_impl.starts_with(['<', ' ', '\n']) {
            continue;
        }
        let header = header.split(" where").next().unwrap_or(header);
        if header.split_whitespace().any(|word| word == "for") {
            continue;
        }
        let ty = skip_generics(after_impl.trim_start()).trim();
        let path = ty.split('<').next().unwrap_or(ty).trim();
        if let Some(name) = path.rsplit("::").next().filter(|n| !n.is_empty()) {
            names.push(name.to_owned());
        }
    }
    names
}

/// `text` after a leading `<...>` (balanced), if it starts with one.
fn skip_generics(text: &str) -> &str {
    if !text.starts_with('<') {
        return text;
    }
    let mut depth = 0;
    for (at, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return &text[at + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}

/// Whether `text` defines a type named `name` (a struct, an enum, a union or an alias).
fn defines(text: &str, name: &str) -> bool {
    text.lines().any(|line| {
        let mut line = line.trim_start();
        if let Some(rest) = line.strip_prefix("pub") {
            line = rest.trim_start();
            if line.starts_with('(') {
                line = line[line.find(')').map_or(line.len(), |at| at + 1)..].trim_start();
            }
        }
        ["struct ", "enum ", "union ", "type "].iter().any(|kind| {
            line.strip_prefix(kind).is_some_and(|rest| {
                let ident: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                ident == name
            })
        })
    })
}

/// `file` and the files of its ancestor modules, up to the crate root (`lib.rs`,
/// `main.rs`; a binary under `bin/` is a crate root of its own).
fn ancestors(src: &Path, file: &Path) -> Vec<PathBuf> {
    let mut modules = vec![file.to_path_buf()];
    let roots: BTreeSet<PathBuf> = ["lib.rs", "main.rs"].iter().map(|r| src.join(r)).collect();
    if roots.contains(file) || file.parent() == Some(&src.join("bin")) {
        return modules;
    }
    let mut dir = file.parent().map(Path::to_path_buf);
    while let Some(current) = dir {
        if current == src {
            modules.extend(roots.iter().cloned());
            break;
        }
        modules.push(current.with_extension("rs"));
        dir = current.parent().map(Path::to_path_buf);
    }
    modules
}
