//! Fixes of findings in a page's HTML source: a11y-audit's `lang` on `<html>`, a
//! `<title>`, `alt=""` on images marked decorative, and a label's `for` where a visible
//! label stands next to its input; security-scan's `rel="noopener"` on links that open
//! another site in a new window. Each edit adds or changes one attribute or element and
//! leaves the rest of the file byte for byte. Re-checked with the rules of the skill
//! that found it.

use fundi_ops::issues::NewIssue;
use fundi_runtime::cpu::Budget;

use super::git::FileWrite;
use super::place::page_file;
use super::remedy::{Place, Remediator, Remedy, RemedyError, Tree, includes};
use super::tags::{self, StartTag, start_tags};
use crate::a11y::Limits;
use crate::a11y::audit::audit;
use crate::security::page_findings;

/// The a11y-audit rules fixed here.
const RULES: [&str; 4] = ["html-has-lang", "document-title", "image-alt", "label"];
/// The security-scan rule fixed here.
const NOOPENER: &str = "target-blank-no-noopener";

/// The remediator of a11y-audit's page findings.
pub struct HtmlRemediator {
    lang: String,
}

impl HtmlRemediator {
    /// Pages without a language get `lang`.
    pub fn new(lang: impl Into<String>) -> HtmlRemediator {
        HtmlRemediator { lang: lang.into() }
    }
}

impl Remediator for HtmlRemediator {
    fn name(&self) -> &str {
        "html"
    }

    fn handles(&self, issue: &NewIssue) -> bool {
        (issue.source == "a11y-audit" && RULES.contains(&issue.rule.as_str()))
            || (issue.source == "security-scan" && issue.rule == NOOPENER)
    }

    fn files(
        &self,
        issue: &NewIssue,
        place: &Place,
        tree: &Tree,
    ) -> Result<Vec<String>, RemedyError> {
        Ok(vec![page_file(issue, place, tree)?])
    }

    fn remediate(
        &self,
        issue: &NewIssue,
        place: &Place,
        tree: &Tree,
    ) -> Result<Remedy, RemedyError> {
        let path = page_file(issue, place, tree)?;
        let source = tree.text(&path)?;
        let (content, summary, notes) = match issue.rule.as_str() {
            "html-has-lang" => self.lang(source, &path)?,
            "document-title" => title(source, &path)?,
            "image-alt" => decorative_alt(source, issue, &path)?,
            "label" => label_for(source, issue, &path)?,
            NOOPENER => noopener(source, issue, &path)?,
            other => return Err(RemedyError::NotHandled(format!("rule {other}"))),
        };
        Ok(Remedy {
            writes: vec![FileWrite { path, content }],
            summary,
            notes,
        })
    }

    fn still_found(
        &self,
        issue: &NewIssue,
        place: &Place,
        tree: &Tree,
    ) -> Result<bool, RemedyError> {
        let path = page_file(issue, place, tree)?;
        let source = tree.text(&path)?;
        if issue.source == "security-scan" {
            let found = page_findings(&issue.location, source).map_err(RemedyError::NotHandled)?;
            return Ok(includes(issue, &found));
        }
        let limits = Limits {
            max_bytes: 5 * 1024 * 1024,
            max_elements: 100_000,
            max_depth: 512,
            max_attributes: 1_000,
        };
        let (report, _) = audit(source, &issue.location, limits, &Budget::unlimited())
            .map_err(|e| RemedyError::NoFile(format!("{path} cannot be audited: {e}")))?;
        Ok(report.violations.iter().any(|rule| {
            rule.id == issue.rule
                && rule
                    .nodes
                    .iter()
                    .any(|n| issue.target.as_ref().is_none_or(|t| &n.target == t))
        }))
    }
}

type Edit = (String, String, Vec<String>);

impl HtmlRemediator {
    fn lang(&self, source: &str, path: &str) -> Result<Edit, RemedyError> {
        let html = first(source, "html")
            .ok_or_else(|| RemedyError::NotHandled(format!("{path} has no <html> start tag")))?;
        let lang = self.lang.as_str();
        let content = match html.attrs.iter().find(|a| a.name == "lang") {
            Some(attr) => match attr.value_span {
                Some(span) => tags::replace(source, span, lang),
                None => tags::insert(source, html.insert_at, &format!("=\"{lang}\"")),
            },
            None => tags::insert(source, html.insert_at, &format!(" lang=\"{lang}\"")),
        };
        let note = format!(
            "the page's language is set to {lang:?}, the configured default: change it if the \
             page is in another language"
        );
        Ok((
            content,
            format!("Set lang=\"{lang}\" on <html> in {path}"),
            vec![note],
        ))
    }
}

fn first(source: &str, name: &str) -> Option<StartTag> {
    start_tags(source).into_iter().find(|t| t.name == name)
}

/// A `<title>` from the page's first `<h1>`: a page with no heading needs a person.
fn title(source: &str, path: &str) -> Result<Edit, RemedyError> {
    let heading = first(source, "h1")
        .map(|h1| tags::text_until_close(source, h1.end, "h1"))
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            RemedyError::NeedsPerson(format!(
                "{path} has no <h1> to take a title from: a person must write one"
            ))
        })?;
    let summary = format!("Give {path} the title {heading:?}, from its first heading");
    // An empty <title> is filled; else one is put first in <head>, indented as the
    // line after it is.
    if let Some(existing) = first(source, "title") {
        let close = tags::find_ci(source, existing.end, "</title").unwrap_or(existing.end);
        let content = tags::replace(source, (existing.end, close), &heading);
        return Ok((content, summary, Vec::new()));
    }
    let head = first(source, "head").ok_or_else(|| {
        RemedyError::NotHandled(format!("{path} has no <head> to put a <title> in"))
    })?;
    let rest = &source[head.end..];
    let indent: String = rest
        .strip_prefix('\n')
        .or_else(|| rest.strip_prefix("\r\n"))
        .map(|line| {
            line.chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect()
        })
        .unwrap_or_default();
    let newline = if rest.starts_with('\n') || rest.starts_with("\r\n") {
        format!("\n{indent}")
    } else {
        String::new()
    };
    let content = tags::insert(
        source,
        head.end,
        &format!("{newline}<title>{heading}</title>"),
    );
    Ok((content, summary, Vec::new()))
}

/// The start tags of `source` that are the element the finding's evidence shows
/// (same name and attributes, whatever the quoting).
fn matching(source: &str, evidence: &str) -> Vec<StartTag> {
    let Some(shown) = start_tags(evidence).into_iter().next() else {
        return Vec::new();
    };
    let mut wanted: Vec<(String, String)> = shown
        .attrs
        .iter()
        .map(|a| (a.name.clone(), a.value.clone().unwrap_or_default()))
        .collect();
    wanted.sort();
    start_tags(source)
        .into_iter()
        .filter(|t| {
            let mut attrs: Vec<(String, String)> = t
                .attrs
                .iter()
                .map(|a| (a.name.clone(), a.value.clone().unwrap_or_default()))
                .collect();
            attrs.sort();
            t.name == shown.name && attrs == wanted
        })
        .collect()
}

fn the_element(source: &str, issue: &NewIssue, path: &str) -> Result<StartTag, RemedyError> {
    let mut found = matching(source, &issue.evidence);
    match found.len() {
        0 => Err(RemedyError::NoFile(format!(
            "{path} has no element like {}: the page may have changed since it was audited",
            issue.evidence
        ))),
        1 => Ok(found.remove(0)),
        n => Err(RemedyError::NeedsPerson(format!(
            "{path} has {n} elements like {}: which one the finding means is not certain",
            issue.evidence
        ))),
    }
}

/// `alt=""` on an image its author marked decorative (`data-decorative`, or the class
/// `decorative`); any other image's text is a person's to write.
fn decorative_alt(source: &str, issue: &NewIssue, path: &str) -> Result<Edit, RemedyError> {
    let img = the_element(source, issue, path)?;
    let decorative = img.attr("data-decorative").is_some() || img.has_class("decorative");
    if !decorative {
        return Err(RemedyError::NeedsPerson(format!(
            "the image {} in {path} may carry meaning: a person must describe it (an image \
             marked data-decorative or class=\"decorative\" gets alt=\"\")",
            issue.evidence
        )));
    }
    let content = tags::insert(source, img.insert_at, " alt=\"\"");
    let src = img.attr("src").unwrap_or("?");
    Ok((
        content,
        format!("Mark the decorative image {src} in {path} with alt=\"\""),
        Vec::new(),
    ))
}

/// A `<label>` with text written just before an input it does not name gets `for`.
fn label_for(source: &str, issue: &NewIssue, path: &str) -> Result<Edit, RemedyError> {
    let input = the_element(source, issue, path)?;
    let id = input
        .attr("id")
        .filter(|id| !id.is_empty())
        .ok_or_else(|| {
            RemedyError::NeedsPerson(format!(
                "the field {} in {path} has no id for a label to name",
                issue.evidence
            ))
        })?;
    let before = &source[..input.start];
    let close = before
        .to_ascii_lowercase()
        .rfind("</label>")
        .filter(|&at| before[at + "</label>".len()..].trim().is_empty());
    let label = close.and_then(|close| {
        start_tags(&source[..close])
            .into_iter()
            .rfind(|t| t.name == "label")
            .filter(|l| l.attr("for").is_none())
            .map(|l| (l.clone(), tags::text_until_close(source, l.end, "label")))
    });
    let Some((label, text)) = label.filter(|(_, text)| !text.is_empty()) else {
        return Err(RemedyError::NeedsPerson(format!(
            "the field {} in {path} has no visible label next to it: a person must write one",
            issue.evidence
        )));
    };
    let content = tags::insert(source, label.insert_at, &format!(" for=\"{id}\""));
    Ok((
        content,
        format!("Tie the label {text:?} to the field #{id} in {path}"),
        Vec::new(),
    ))
}

/// `noopener` in the `rel` of every link like the finding's (the same link written
/// twice is the same risk twice).
fn noopener(source: &str, issue: &NewIssue, path: &str) -> Result<Edit, RemedyError> {
    let links = matching(source, &issue.evidence);
    if links.is_empty() {
        return Err(RemedyError::NoFile(format!(
            "{path} has no element like {}: the page may have changed since it was scanned",
            issue.evidence
        )));
    }
    // From the last, so that the earlier offsets hold.
    let mut content = source.to_owned();
    for link in links.iter().rev() {
        content = match link.attrs.iter().find(|a| a.name == "rel") {
            Some(rel) => match rel.value_span {
                Some((_, end)) if rel.value.as_deref().is_some_and(|v| !v.trim().is_empty()) => {
                    tags::insert(&content, end, " noopener")
                }
                Some(span) => tags::replace(&content, span, "noopener"),
                None => {
                    return Err(RemedyError::NeedsPerson(format!(
                        "a link like {} in {path} has a rel without a value",
                        issue.evidence
                    )));
                }
            },
            None => tags::insert(&content, link.insert_at, " rel=\"noopener\""),
        };
    }
    let href = links[0].attr("href").unwrap_or("?");
    Ok((
        content,
        format!("Open {href} with rel=\"noopener\" in {path}"),
        Vec::new(),
    ))
}
