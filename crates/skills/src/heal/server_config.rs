//! Reading and editing the headers a site's server configuration sends, in nginx
//! (`add_header` in a `server` block), a Caddyfile (`header` in a site block) or a
//! static host's `_headers` file (the `/*` section). One directive per line is read;
//! an edit changes or adds one line, indented as its neighbours.

use super::place::ConfigKind;

/// The site's part of a configuration file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scope {
    /// Headers set for every response: lowercased name, value, line index.
    pub(crate) headers: Vec<(String, String, usize)>,
    /// The cookie flags the server adds (nginx `proxy_cookie_flags`, a Caddy
    /// `Set-Cookie` rewrite), lowercased, and the line.
    pub(crate) cookie_flags: Option<(Vec<String>, usize)>,
    /// Where a new line goes (before this line index).
    pub(crate) insert_before: usize,
    /// Its indentation.
    pub(crate) indent: String,
    /// Whether a nested block sets headers of its own (in nginx, that block then sends
    /// none of the site's).
    pub(crate) nested_headers: bool,
}

/// The lines of a file, each with its line ending.
pub(crate) fn lines(source: &str) -> Vec<&str> {
    source.split_inclusive('\n').collect()
}

fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') => return &line[..i],
            _ => {}
        }
    }
    line
}

fn unquote(value: &str) -> String {
    let v = value.trim();
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner.to_owned();
        }
    }
    v.to_owned()
}

/// Splits `Name value...` into the name and the rest, first word quoted or not.
fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote = None;
    let mut quoted = false;
    for c in text.chars() {
        match (quote, c) {
            (None, '"' | '\'') => {
                quote = Some(c);
                quoted = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if !current.is_empty() || quoted {
                    words.push(std::mem::take(&mut current));
                    quoted = false;
                }
            }
            (_, c) => current.push(c),
        }
    }
    if !current.is_empty() || quoted {
        words.push(current);
    }
    words
}

fn indent_of(line: &str) -> String {
    line.chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

/// The site's scope in `source`; `host` picks among several nginx server blocks or
/// Caddy site blocks by name.
pub(crate) fn scope(kind: ConfigKind, source: &str, host: &str) -> Result<Scope, String> {
    match kind {
        ConfigKind::Headers => Ok(headers_file(source)),
        ConfigKind::Nginx | ConfigKind::Caddy => block(kind, source, host),
    }
}

fn headers_file(source: &str) -> Scope {
    let lines = lines(source);
    let mut scope = Scope {
        headers: Vec::new(),
        cookie_flags: None,
        insert_before: lines.len(),
        indent: "  ".into(),
        nested_headers: false,
    };
    let mut in_all = false;
    let mut found = false;
    for (i, line) in lines.iter().enumerate() {
        let text = line.trim_end();
        if text.trim().is_empty() || text.trim_start().starts_with('#') {
            continue;
        }
        if !line.starts_with([' ', '\t']) {
            if in_all {
                scope.insert_before = last_content(&lines, i) + 1;
            }
            in_all = text.trim() == "/*";
            found |= in_all;
            continue;
        }
        if in_all && let Some((name, value)) = text.trim().split_once(':') {
            scope.indent = indent_of(line);
            scope
                .headers
                .push((name.trim().to_ascii_lowercase(), value.trim().to_owned(), i));
            scope.insert_before = i + 1;
        }
    }
    if !found {
        scope.insert_before = usize::MAX; // a new `/*` section goes at the end
    }
    scope
}

fn last_content(lines: &[&str], before: usize) -> usize {
    (0..before)
        .rev()
        .find(|&i| !lines[i].trim().is_empty())
        .unwrap_or(0)
}

/// The block of the site: nginx `server { ... }`, a Caddy site block.
fn block(kind: ConfigKind, source: &str, host: &str) -> Result<Scope, String> {
    let lines = lines(source);
    // (opening line, closing line, names) of each candidate block.
    let mut blocks: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let mut depth = 0usize;
    let mut open: Option<(usize, usize, Vec<String>)> = None;
    for (i, line) in lines.iter().enumerate() {
        let text = strip_comment(line);
        let trimmed = text.trim();
        if open.is_none() && trimmed.ends_with('{') {
            let head = trimmed.trim_end_matches('{').trim();
            let candidate = match kind {
                ConfigKind::Nginx => head == "server",
                // A site block: top level, not the global options `{` or a `(snippet)`.
                _ => depth == 0 && !head.is_empty() && !head.starts_with('('),
            };
            if candidate {
                let names = match kind {
                    ConfigKind::Caddy => head.split([' ', ',']).map(site_host).collect(),
                    _ => Vec::new(),
                };
                open = Some((i, depth, names));
            }
        }
        if let Some((_, at, names)) = &mut open
            && kind == ConfigKind::Nginx
            && depth == *at + 1
            && let Some(rest) = trimmed.strip_prefix("server_name")
        {
            names.extend(
                rest.trim_end_matches(';')
                    .split_whitespace()
                    .map(str::to_owned),
            );
        }
        depth += text.matches('{').count();
        depth = depth.saturating_sub(text.matches('}').count());
        if let Some((start, at, names)) = &open
            && depth == *at
            && i > *start
        {
            blocks.push((*start, i, names.clone()));
            open = None;
        }
    }
    let chosen = match blocks.len() {
        0 => {
            return Err(match kind {
                ConfigKind::Nginx => "it has no server block".into(),
                _ => "it has no site block".into(),
            });
        }
        1 => blocks.remove(0),
        n => blocks
            .into_iter()
            .find(|(_, _, names)| names.iter().any(|name| name == host))
            .ok_or_else(|| format!("it has {n} site blocks and none is named {host}"))?,
    };
    read_block(kind, &lines, chosen.0, chosen.1)
}

fn site_host(address: &str) -> String {
    let address = address.trim();
    let address = address
        .strip_prefix("https://")
        .or_else(|| address.strip_prefix("http://"))
        .unwrap_or(address);
    address
        .split([':', '/'])
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn read_block(
    kind: ConfigKind,
    lines: &[&str],
    open: usize,
    close: usize,
) -> Result<Scope, String> {
    let mut scope = Scope {
        headers: Vec::new(),
        cookie_flags: None,
        insert_before: close,
        indent: format!("{}    ", indent_of(lines[open])),
        nested_headers: false,
    };
    let mut first_directive = true;
    let mut last_header = None;
    let mut depth = 1usize;
    let mut header_block = false;
    for (i, line) in lines.iter().enumerate().take(close).skip(open + 1) {
        let text = strip_comment(line);
        let trimmed = text.trim();
        let words = split_words(trimmed.trim_end_matches(';'));
        if depth == 1 && !trimmed.is_empty() && first_directive {
            scope.indent = indent_of(line);
            first_directive = false;
        }
        match kind {
            ConfigKind::Nginx if words.first().is_some_and(|w| w == "add_header") => {
                if depth == 1 && words.len() >= 3 {
                    scope
                        .headers
                        .push((words[1].to_ascii_lowercase(), words[2].clone(), i));
                    last_header = Some(i);
                } else if depth > 1 {
                    scope.nested_headers = true;
                }
            }
            ConfigKind::Nginx
                if depth == 1 && words.first().is_some_and(|w| w == "proxy_cookie_flags") =>
            {
                let flags = words
                    .iter()
                    .skip(2)
                    .map(|w| w.to_ascii_lowercase())
                    .collect();
                scope.cookie_flags = Some((flags, i));
            }
            ConfigKind::Caddy if words.first().is_some_and(|w| w == "header") => {
                if trimmed.ends_with('{') {
                    header_block = depth == 1;
                } else if depth == 1 && words.len() >= 3 {
                    let name = words[1]
                        .trim_start_matches(['+', '>', '?'])
                        .to_ascii_lowercase();
                    if name == "set-cookie" && words.len() >= 4 {
                        let flags = cookie_flags_of(&words[3]);
                        scope.cookie_flags = Some((flags, i));
                    } else {
                        scope.headers.push((name, words[2].clone(), i));
                    }
                    last_header = Some(i);
                }
            }
            ConfigKind::Caddy if header_block && depth == 2 && words.len() >= 2 => {
                let name = words[0]
                    .trim_start_matches(['+', '>', '?'])
                    .to_ascii_lowercase();
                scope.headers.push((name, words[1..].join(" "), i));
            }
            _ => {}
        }
        depth += text.matches('{').count();
        depth = depth.saturating_sub(text.matches('}').count());
        if depth == 1 {
            header_block = false;
        }
    }
    if let Some(line) = last_header {
        scope.insert_before = line + 1;
    }
    Ok(scope)
}

fn cookie_flags_of(replacement: &str) -> Vec<String> {
    unquote(replacement)
        .split(';')
        .skip(1)
        .map(|f| f.trim().to_ascii_lowercase().replace(' ', ""))
        .filter(|f| !f.is_empty())
        .collect()
}

/// The line that sets a header, in the file's kind.
pub(crate) fn header_line(kind: ConfigKind, indent: &str, name: &str, value: &str) -> String {
    match kind {
        ConfigKind::Nginx => format!("{indent}add_header {name} \"{value}\" always;"),
        ConfigKind::Caddy => format!("{indent}header {name} \"{value}\""),
        ConfigKind::Headers => format!("{indent}{name}: {value}"),
    }
}

/// The line that adds flags to every cookie the server passes on; `None` where the
/// kind has no such directive.
pub(crate) fn cookie_line(kind: ConfigKind, indent: &str, flags: &[String]) -> Option<String> {
    match kind {
        ConfigKind::Nginx => Some(format!(
            "{indent}proxy_cookie_flags ~ {};",
            flags
                .iter()
                .map(|f| f.to_ascii_lowercase())
                .collect::<Vec<_>>()
                .join(" ")
        )),
        ConfigKind::Caddy => Some(format!(
            "{indent}header >Set-Cookie \"(.*)\" \"$1; {}\"",
            flags.join("; ")
        )),
        ConfigKind::Headers => None,
    }
}

/// `source` with line `at` replaced by `text` (its line ending kept), or with `text`
/// put before line `at` (at the end when `at` is past the last line).
pub(crate) fn put_line(source: &str, at: usize, text: &str, replace: bool) -> String {
    let newline = if source.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let mut lines: Vec<String> = lines(source).into_iter().map(str::to_owned).collect();
    let appending = at >= lines.len();
    if let Some(last) = lines.last_mut()
        && !last.ends_with('\n')
        && appending
    {
        last.push_str(newline);
    }
    let new = format!("{text}{newline}");
    match (replace, at < lines.len()) {
        (true, true) => {
            let ending = if lines[at].ends_with("\r\n") {
                "\r\n"
            } else if lines[at].ends_with('\n') {
                "\n"
            } else {
                ""
            };
            lines[at] = format!("{text}{ending}");
        }
        (_, true) => lines.insert(at, new),
        (_, false) => lines.push(new),
    }
    lines.concat()
}
