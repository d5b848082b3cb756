//! Which file of the repository an issue is in: the one the input names, or the page
//! file a URL under the site's prefix maps to, or the one server configuration the
//! repository holds.

use fundi_ops::issues::NewIssue;

use super::remedy::{Place, RemedyError, Tree};

/// The HTML file of the page the issue was found on.
pub(crate) fn page_file(
    issue: &NewIssue,
    place: &Place,
    tree: &Tree,
) -> Result<String, RemedyError> {
    if let Some(file) = &place.file {
        return tracked(file, tree);
    }
    if let Some(name) = issue.location.strip_prefix("inline:") {
        return tracked(name, tree);
    }
    let Some(site) = &place.site else {
        return Err(RemedyError::NoFile(format!(
            "which file serves {} is not known: name it with `file`, or give the `site` \
             that the repository serves",
            issue.location
        )));
    };
    let path = issue.location.strip_prefix(site.as_str()).ok_or_else(|| {
        RemedyError::NoFile(format!("{} is not under the site {site}", issue.location))
    })?;
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let path = path.trim_start_matches('/');
    let root = place.root.as_deref().unwrap_or("").trim_matches('/');
    let joined = |p: &str| match root.is_empty() {
        true => p.to_owned(),
        false => format!("{root}/{p}"),
    };
    let candidates = if path.is_empty() || path.ends_with('/') {
        vec![joined(&format!("{path}index.html"))]
    } else {
        vec![
            joined(path),
            joined(&format!("{path}.html")),
            joined(&format!("{path}/index.html")),
        ]
    };
    candidates
        .iter()
        .find(|c| tree.paths().contains(c))
        .cloned()
        .ok_or_else(|| {
            RemedyError::NoFile(format!(
                "no file of the repository serves {} (looked for {})",
                issue.location,
                candidates.join(", ")
            ))
        })
}

/// The kinds of server configuration fixes are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConfigKind {
    /// An nginx configuration with a `server` block.
    Nginx,
    /// A Caddyfile.
    Caddy,
    /// A static host's `_headers` file (Netlify, Cloudflare Pages).
    Headers,
}

/// What a file's name says it is.
pub(crate) fn config_kind(path: &str) -> Option<ConfigKind> {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name {
        "_headers" => Some(ConfigKind::Headers),
        "Caddyfile" => Some(ConfigKind::Caddy),
        n if n.ends_with(".caddyfile") => Some(ConfigKind::Caddy),
        n if n == "nginx.conf" || n.ends_with(".conf") => Some(ConfigKind::Nginx),
        _ => None,
    }
}

/// The server configuration of the site: the file named, or the only one the
/// repository tracks (`_headers`, a Caddyfile, or an nginx `.conf`).
pub(crate) fn config_file(place: &Place, tree: &Tree) -> Result<(String, ConfigKind), RemedyError> {
    if let Some(file) = &place.file {
        let path = tracked(file, tree)?;
        let kind = config_kind(&path).ok_or_else(|| {
            RemedyError::NotHandled(format!(
                "{path} is not an nginx .conf, a Caddyfile or a _headers file"
            ))
        })?;
        return Ok((path, kind));
    }
    let found: Vec<(String, ConfigKind)> = tree
        .paths()
        .iter()
        .filter_map(|p| config_kind(p).map(|k| (p.clone(), k)))
        .collect();
    match found.len() {
        1 => Ok(found[0].clone()),
        0 => Err(RemedyError::NoFile(
            "the repository has no server configuration to set headers in (an nginx .conf, \
             a Caddyfile or a _headers file)"
                .into(),
        )),
        _ => Err(RemedyError::NoFile(format!(
            "the repository has several server configurations ({}): name one with `file`",
            found
                .iter()
                .map(|(p, _)| p.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

fn tracked(file: &str, tree: &Tree) -> Result<String, RemedyError> {
    let file = file.trim_start_matches("./");
    if file.split('/').any(|part| part == "..") || file.starts_with('/') {
        return Err(RemedyError::NoFile(format!(
            "file {file:?} must be a path inside the repository"
        )));
    }
    match tree.paths().iter().any(|p| p == file) {
        true => Ok(file.to_owned()),
        false => Err(RemedyError::NoFile(format!(
            "the repository tracks no file {file:?}"
        ))),
    }
}
