//! The auditing skills' reports as tables: the accessibility report grouped by impact
//! with each failing element's markup, and the security report's grade with its
//! findings and how to fix them. They read the reports' JSON, so a field a report
//! leaves out shows as a blank rather than failing the page.

use maud::{Markup, html};
use serde_json::Value;

use crate::words::link;

/// axe-core's impacts, worst first.
const IMPACTS: [&str; 4] = ["critical", "serious", "moderate", "minor"];
/// The security scan's severities, worst first.
const SEVERITIES: [&str; 4] = ["high", "medium", "low", "info"];

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn list<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// An `a11y-report`: per impact, a table of the failing elements.
pub(crate) fn accessibility(report: &Value) -> Markup {
    let pages = list(report, "pages");
    // (impact, rule, page url, element)
    let mut failing: Vec<(&str, &Value, &str, &Value)> = Vec::new();
    for page in pages {
        for rule in list(page, "violations") {
            for node in list(rule, "nodes") {
                failing.push((text(rule, "impact"), rule, text(page, "url"), node));
            }
        }
    }
    html! {
        p { (failing.len()) " failing elements on " (pages.len()) " pages." }
        @for impact in IMPACTS {
            @let rows: Vec<_> = failing.iter().filter(|row| row.0 == impact).collect();
            @if !rows.is_empty() {
                h4 { (capitalized(impact)) " (" (rows.len()) ")" }
                table class="report" {
                    thead { tr { th scope="col" { "Rule" } th scope="col" { "Page" }
                                 th scope="col" { "Element" } th scope="col" { "What is wrong" } } }
                    tbody {
                        @for (_, rule, url, node) in rows {
                            tr {
                                td { (rule_link(rule)) br; span class="help" { (text(rule, "help")) } }
                                td { (link(url)) }
                                td { code { (text(node, "target")) } pre class="snippet" { code { (text(node, "html")) } } }
                                td { (text(node, "failureSummary")) }
                            }
                        }
                    }
                }
            }
        }
        @for error in list(report, "errors") {
            p class="problem" { "Not audited: " (error.as_str().map_or_else(|| error.to_string(), str::to_owned)) }
        }
    }
}

fn rule_link(rule: &Value) -> Markup {
    let id = text(rule, "id");
    let url = text(rule, "helpUrl");
    html! {
        @if url.starts_with("https://") { a href=(url) rel="noopener noreferrer" { code { (id) } } }
        @else { code { (id) } }
    }
}

/// A `security-report`: the grade, then the findings worst first.
pub(crate) fn security(report: &Value) -> Markup {
    let grade = text(report, "grade");
    let score = report.get("score").and_then(Value::as_i64);
    let mut findings: Vec<&Value> = list(report, "findings").iter().collect();
    findings.sort_by_key(|f| {
        let severity = text(f, "severity");
        SEVERITIES
            .iter()
            .position(|s| *s == severity)
            .unwrap_or(SEVERITIES.len())
    });
    html! {
        p class="grade" {
            span class={ "letter grade-" (grade.chars().next().unwrap_or('x').to_ascii_lowercase()) } { (grade) }
            " grade"
            @if let Some(score) = score { ", score " (score) " of 100" }
        }
        @if findings.is_empty() {
            p { "No findings." }
        } @else {
            table class="report" {
                thead { tr { th scope="col" { "Severity" } th scope="col" { "Finding" }
                             th scope="col" { "Seen" } th scope="col" { "How to fix it" } } }
                tbody {
                    @for finding in findings {
                        tr {
                            td { span class={ "severity " (text(finding, "severity")) } { (text(finding, "severity")) } }
                            td { (text(finding, "title")) br; code { (text(finding, "id")) } }
                            td { (link(text(finding, "url"))) pre class="snippet" { code { (text(finding, "evidence")) } } }
                            td { (text(finding, "remediation")) }
                        }
                    }
                }
            }
        }
    }
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn failing_elements_are_grouped_worst_impact_first_with_their_markup() {
        let report = json!({"pages": [{"url": "https://site.example/", "violations": [
            {"id": "image-alt", "impact": "minor", "help": "Images need text", "helpUrl": "https://dequeuniversity.com/rules/axe/4.10/image-alt",
             "nodes": [{"target": "img", "html": "<img src=\"a.png\">", "failureSummary": "no alt"}]},
            {"id": "html-has-lang", "impact": "serious", "help": "Say the language", "helpUrl": "javascript:alert(1)",
             "nodes": [{"target": "html", "html": "<html>", "failureSummary": "no lang"}]},
        ]}], "errors": ["https://site.example/broken: HTTP 500"]});
        let html = accessibility(&report).into_string();
        let serious = html.find("<h4>Serious (1)</h4>").expect("serious group");
        let minor = html.find("<h4>Minor (1)</h4>").expect("minor group");
        assert!(serious < minor, "{html}");
        assert!(html.contains("&lt;img src=&quot;a.png&quot;&gt;"), "{html}");
        assert!(html.contains("href=\"https://dequeuniversity.com/rules/axe/4.10/image-alt\""));
        assert!(
            !html.contains("javascript:"),
            "only web links are links: {html}"
        );
        assert!(
            html.contains("Not audited: https://site.example/broken: HTTP 500"),
            "{html}"
        );
    }

    #[test]
    fn the_grade_comes_first_and_findings_worst_first() {
        let report = json!({"grade": "C+", "score": 62, "findings": [
            {"id": "x-content-type-options-missing", "severity": "low", "title": "nosniff missing",
             "url": "https://site.example/", "evidence": "(none)", "remediation": "Send nosniff"},
            {"id": "csp-missing", "severity": "high", "title": "No CSP",
             "url": "https://site.example/", "evidence": "(none)", "remediation": "Send a CSP"},
        ]});
        let html = security(&report).into_string();
        assert!(
            html.contains("class=\"letter grade-c\">C+</span> grade, score 62 of 100"),
            "{html}"
        );
        let high = html.find("No CSP").unwrap();
        let low = html.find("nosniff missing").unwrap();
        assert!(high < low, "{html}");
        assert!(html.contains("Send a CSP"), "{html}");
    }
}
