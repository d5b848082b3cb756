//! Auditing one page: decode, parse within the limits, run every rule, and report in
//! axe-core's result shape.

use std::borrow::Cow;

use encoding_rs::Encoding;
use fundi_runtime::cpu::Budget;
use serde::Serialize;

use super::page::{self, Limits, Page, PageError};
use super::rules::{self, Impact, NodeResult};

/// One rule's failing (or needs-review) elements.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleReport {
    /// axe-core's rule id.
    pub id: Cow<'static, str>,
    /// axe-core's impact.
    pub impact: Impact,
    /// WCAG and category tags.
    pub tags: Vec<Cow<'static, str>>,
    /// What the rule asks for.
    pub help: Cow<'static, str>,
    /// Where to read more.
    pub help_url: String,
    /// The elements.
    pub nodes: Vec<NodeResult>,
}

/// How many elements passed a rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassCount {
    /// The rule.
    pub id: Cow<'static, str>,
    /// Elements that passed.
    pub count: usize,
}

/// The audit of one page.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageReport {
    /// The page's URL (or `inline:<name>`).
    pub url: String,
    /// Its `<title>`.
    pub title: Option<String>,
    /// Rules with failing elements.
    pub violations: Vec<RuleReport>,
    /// Rules with elements a person must check.
    pub incomplete: Vec<RuleReport>,
    /// Rules with passing elements, and how many.
    pub passes: Vec<PassCount>,
    /// Rules that found nothing to check.
    pub inapplicable: Vec<Cow<'static, str>>,
}

impl PageReport {
    /// Failing elements, over all rules.
    pub fn violation_count(&self) -> usize {
        self.violations.iter().map(|r| r.nodes.len()).sum()
    }

    /// Elements needing review, over all rules.
    pub fn incomplete_count(&self) -> usize {
        self.incomplete.iter().map(|r| r.nodes.len()).sum()
    }
}

/// Decodes page bytes as a browser would: a byte-order mark, then the Content-Type
/// charset, then a `<meta charset>` in the first 1024 bytes; then UTF-8 if the bytes
/// are valid UTF-8, else windows-1252. Undecodable bytes become U+FFFD.
pub fn decode(bytes: &[u8], content_type: Option<&str>) -> String {
    let from_header = content_type.and_then(|ct| {
        ct.split(';')
            .filter_map(|p| p.trim().strip_prefix("charset="))
            .next()
            .and_then(|label| Encoding::for_label(label.trim_matches('"').as_bytes()))
    });
    let encoding = Encoding::for_bom(bytes)
        .map(|(encoding, _)| encoding)
        .or(from_header)
        .or_else(|| meta_charset(bytes))
        .unwrap_or_else(|| {
            if std::str::from_utf8(bytes).is_ok() {
                encoding_rs::UTF_8
            } else {
                encoding_rs::WINDOWS_1252
            }
        });
    encoding.decode(bytes).0.into_owned()
}

fn meta_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = &bytes[..bytes.len().min(1024)];
    let text: String = head
        .iter()
        .map(|&b| (b as char).to_ascii_lowercase())
        .collect();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("<meta") {
        rest = &rest[at + 5..];
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        if let Some(pos) = tag.find("charset") {
            let value = tag[pos + 7..].trim_start().strip_prefix('=')?.trim_start();
            let value = value.trim_start_matches(['"', '\'']);
            let end = value
                .find(|c: char| c == '"' || c == '\'' || c == ';' || c.is_whitespace() || c == '/')
                .unwrap_or(value.len());
            if let Some(encoding) = Encoding::for_label(&value.as_bytes()[..end]) {
                // A page cannot claim UTF-16 in its own ASCII bytes.
                return Some(
                    if encoding == encoding_rs::UTF_16LE || encoding == encoding_rs::UTF_16BE {
                        encoding_rs::UTF_8
                    } else {
                        encoding
                    },
                );
            }
        }
    }
    None
}

/// Audits `source` as the page at `url`; returns the report and the page's links
/// (`href`s of `<a>`, as written).
///
/// The work looks at `budget` often (a page's time limit is a deadline in it, see
/// `Budget::within`): it stops soon after the budget runs out or its task is canceled.
pub fn audit(
    source: &str,
    url: &str,
    limits: Limits,
    budget: &Budget,
) -> Result<(PageReport, Vec<String>), PageError> {
    let html = page::parse(source, limits, budget)?;
    let page = Page::new(&html, budget)?;
    let results = rules::run_all(&page, budget)?;
    let title = (0..page.elements.len())
        .find(|&i| page.name(i) == "title" && !page.ancestors(i).any(|a| page.name(a) == "svg"))
        .map(|i| page.text(i))
        .filter(|t| !t.is_empty());
    let mut report = PageReport {
        url: url.to_owned(),
        title,
        violations: Vec::new(),
        incomplete: Vec::new(),
        passes: Vec::new(),
        inapplicable: Vec::new(),
    };
    for (info, outcome) in results {
        let rule_report = |nodes: Vec<NodeResult>| RuleReport {
            id: info.id.into(),
            impact: info.impact,
            tags: info.tags.iter().map(|t| Cow::Borrowed(*t)).collect(),
            help: info.help.into(),
            help_url: info.help_url(),
            nodes,
        };
        let applied =
            !outcome.violations.is_empty() || !outcome.incomplete.is_empty() || outcome.passes > 0;
        if !applied {
            report.inapplicable.push(info.id.into());
        }
        if outcome.passes > 0 {
            report.passes.push(PassCount {
                id: info.id.into(),
                count: outcome.passes,
            });
        }
        if !outcome.violations.is_empty() {
            report.violations.push(rule_report(outcome.violations));
        }
        if !outcome.incomplete.is_empty() {
            report.incomplete.push(rule_report(outcome.incomplete));
        }
    }
    let links = (0..page.elements.len())
        .filter(|&i| page.name(i) == "a")
        .filter_map(|i| page.attr_text(i, "href").map(str::to_owned))
        .collect();
    Ok((report, links))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charsets_are_sniffed_as_browsers_do() {
        // "café" in windows-1252, declared by a meta tag.
        let mut latin = b"<meta charset=\"windows-1252\"><p>caf".to_vec();
        latin.push(0xe9);
        assert!(decode(&latin, None).contains("café"));
        // Undeclared and not UTF-8: windows-1252.
        assert!(decode(&[b'c', b'a', b'f', 0xe9], None).ends_with("café"));
        // The header wins over the meta tag.
        let utf8 = "<meta charset=latin1><p>café".as_bytes();
        assert!(decode(utf8, Some("text/html; charset=utf-8")).contains("café"));
        // A BOM wins over everything.
        let mut bom = vec![0xef, 0xbb, 0xbf];
        bom.extend_from_slice("<p>é".as_bytes());
        assert!(decode(&bom, Some("text/html; charset=latin1")).contains('é'));
    }
}
