//! Light active checks, only when asked (`"active": true`): well-known sensitive paths,
//! directory listings, TRACE, and open redirects through common parameters. Every
//! request counts against `max-active-requests` and is paced to
//! `active-requests-per-second`; the content of a hit is checked, so a site that
//! answers 200 to everything is not reported.

use std::time::{Duration, Instant};

use reqwest::{Method, Url};

use crate::security::catalogue::found;
use crate::security::finding::Finding;
use crate::security::http::{Fetcher, Response};

/// Paths, the check they belong to, and what their content must show.
const SENSITIVE: &[(&str, &str, Signature)] = &[
    (
        "/.git/HEAD",
        "exposed-git",
        Signature::StartsWith("ref: refs/"),
    ),
    ("/.git/config", "exposed-git", Signature::Contains("[core]")),
    ("/.svn/entries", "exposed-svn", Signature::SvnEntries),
    ("/.env", "exposed-env", Signature::EnvFile),
    (
        "/.DS_Store",
        "exposed-ds-store",
        Signature::Bytes(b"\x00\x00\x00\x01Bud1"),
    ),
    (
        "/server-status",
        "exposed-server-status",
        Signature::Contains("Apache Server Status"),
    ),
    (
        "/phpinfo.php",
        "exposed-phpinfo",
        Signature::Contains("phpinfo()"),
    ),
    (
        "/backup.zip",
        "exposed-backup-file",
        Signature::Bytes(b"PK\x03\x04"),
    ),
    (
        "/backup.tar.gz",
        "exposed-backup-file",
        Signature::Bytes(b"\x1f\x8b"),
    ),
    (
        "/index.php.bak",
        "exposed-backup-file",
        Signature::Contains("<?php"),
    ),
    (
        "/config.php~",
        "exposed-backup-file",
        Signature::Contains("<?php"),
    ),
    (
        "/wp-config.php.bak",
        "exposed-backup-file",
        Signature::Contains("DB_PASSWORD"),
    ),
];

/// Parameters sites commonly redirect through.
const REDIRECT_PARAMETERS: &[&str] = &[
    "next",
    "url",
    "redirect",
    "redirect_uri",
    "redirect_url",
    "return",
    "returnTo",
    "return_to",
    "continue",
    "dest",
    "destination",
    "goto",
];

/// Where an open redirect would send users.
const REDIRECT_TARGET: &str = "https://fundi-scan.invalid/";

#[derive(Debug)]
enum Signature {
    StartsWith(&'static str),
    Contains(&'static str),
    SvnEntries,
    Bytes(&'static [u8]),
    EnvFile,
}

impl Signature {
    fn matches(&self, body: &[u8]) -> bool {
        let text = String::from_utf8_lossy(body);
        match self {
            Signature::StartsWith(prefix) => text.starts_with(prefix),
            Signature::Contains(needle) => text.contains(needle),
            // A format number on the first line, then entries like "dir".
            Signature::SvnEntries => {
                text.chars().next().is_some_and(|c| c.is_ascii_digit()) && text.contains("\ndir\n")
            }
            Signature::Bytes(prefix) => body.starts_with(prefix),
            Signature::EnvFile => {
                let lines: Vec<&str> = text
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .collect();
                !lines.is_empty()
                    && !text.contains("<html")
                    && lines.iter().all(|l| {
                        l.split_once('=').is_some_and(|(k, _)| {
                            !k.is_empty()
                                && k.trim_start_matches("export ")
                                    .chars()
                                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
                        })
                    })
            }
        }
    }
}

/// Makes the requests of the active checks, within the budget and the pace.
pub(crate) struct Budget<'f> {
    fetcher: &'f Fetcher,
    left: usize,
    interval: Duration,
    last: Option<Instant>,
}

impl<'f> Budget<'f> {
    pub(crate) fn new(fetcher: &'f Fetcher, requests: usize, per_second: u32) -> Budget<'f> {
        Budget {
            fetcher,
            left: requests,
            interval: Duration::from_secs(1) / per_second.max(1),
            last: None,
        }
    }

    async fn request(&mut self, method: Method, url: &Url) -> Option<Result<Response, String>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        if let Some(last) = self.last {
            let next = last + self.interval;
            // Pacing a scan against someone's server, not waiting for a result.
            tokio::time::sleep_until(next.into()).await;
        }
        self.last = Some(Instant::now());
        Some(self.fetcher.request(method, url, &[]).await)
    }

    /// Requests left.
    pub(crate) fn left(&self) -> usize {
        self.left
    }
}

pub(crate) async fn check(
    budget: &mut Budget<'_>,
    base: &Url,
    paths: &[Url],
    findings: &mut Vec<Finding>,
) {
    for (path, id, signature) in SENSITIVE {
        let Ok(url) = base.join(path) else { continue };
        let Some(result) = budget.request(Method::GET, &url).await else {
            return;
        };
        if let Ok(response) = result
            && response.status == 200
            && signature.matches(&response.body)
        {
            let excerpt: String = response.text().chars().take(120).collect();
            findings.push(found(
                id,
                format!("{path} is publicly readable"),
                excerpt,
                url.as_str(),
                *path,
            ));
        }
    }
    let mut directories: Vec<Url> = Vec::new();
    for url in paths {
        let mut directory = url.clone();
        directory.set_query(None);
        if !directory.path().ends_with('/') {
            let parent = directory
                .path()
                .rsplit_once('/')
                .map(|(p, _)| format!("{p}/"))
                .unwrap_or_else(|| "/".into());
            directory.set_path(&parent);
        }
        if !directories.contains(&directory) {
            directories.push(directory);
        }
    }
    for directory in &directories {
        let Some(result) = budget.request(Method::GET, directory).await else {
            return;
        };
        if let Ok(response) = result {
            let text = response.text();
            let listing = response.status == 200
                && (text.contains("<title>Index of /")
                    || text.contains("<h1>Index of /")
                    || text.contains("<title>Directory listing for /"));
            if listing {
                findings.push(found(
                    "directory-listing",
                    format!("{} lists its files", directory.path()),
                    text.chars().take(120).collect::<String>(),
                    directory.as_str(),
                    directory.path(),
                ));
            }
        }
    }
    if let Some(Ok(response)) = budget.request(Method::TRACE, base).await
        && response.status == 200
        && response.text().contains("TRACE ")
    {
        findings.push(found(
            "trace-enabled",
            "the server answers TRACE, echoing requests back",
            response.text().chars().take(120).collect::<String>(),
            base.as_str(),
            "TRACE",
        ));
    }
    let target = paths.first().unwrap_or(base);
    for parameter in REDIRECT_PARAMETERS {
        let mut url = target.clone();
        url.query_pairs_mut()
            .append_pair(parameter, REDIRECT_TARGET);
        let Some(result) = budget.request(Method::GET, &url).await else {
            return;
        };
        if let Ok(response) = result
            && (300..400).contains(&response.status)
            && response.header("location").is_some_and(|l| {
                l.starts_with(REDIRECT_TARGET) || l.starts_with("//fundi-scan.invalid")
            })
        {
            findings.push(found(
                "open-redirect",
                format!("the {parameter} parameter redirects to any site"),
                format!(
                    "GET {url} → {} Location: {}",
                    response.status,
                    response.header("location").unwrap_or("")
                ),
                target.as_str(),
                format!("{}?{parameter}=", target.path()),
            ));
            break;
        }
    }
}
