//! Every a11y rule against its fixtures in `tests/fixtures/a11y/`: `<rule>.fail.html`
//! must give exactly the violations its first-line comment names (a true positive), and
//! `<rule>.pass.html` none for that rule and at least one pass (a true negative). Then
//! malformed markup, another charset, undeterminable colours, and the limits.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use fundi_runtime::cpu::Budget;
use fundi_skills::a11y::audit::{PageReport, audit, decode};
use fundi_skills::a11y::rules;
use fundi_skills::a11y::{Limits, PageError};

const LIMITS: Limits = Limits {
    max_bytes: 5 * 1024 * 1024,
    max_elements: 100_000,
    max_depth: 512,
    max_attributes: 1_000,
};
const TIME: Duration = Duration::from_secs(30);

fn budget(time: Duration) -> Budget {
    Budget::unlimited().within(time)
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/a11y")
}

fn load(name: &str) -> String {
    let bytes = std::fs::read(fixtures().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    decode(&bytes, None)
}

/// The first line: `<!-- expect <rule>[ incomplete]: target, target -->` (several
/// expectations separated by `;`).
fn expectations(source: &str) -> Vec<(String, bool, BTreeSet<String>)> {
    let line = source.lines().next().unwrap();
    let body = line
        .trim()
        .strip_prefix("<!-- expect ")
        .and_then(|l| l.strip_suffix("-->"))
        .unwrap_or_else(|| panic!("no expectation comment: {line}"));
    body.split(';')
        .map(|part| {
            let (rule, targets) = part.split_once(':').unwrap();
            let rule = rule.trim();
            let (rule, incomplete) = match rule.strip_suffix(" incomplete") {
                Some(rule) => (rule, true),
                None => (rule, false),
            };
            let targets: BTreeSet<String> = targets
                .split(',')
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty() && t != "none")
                .collect();
            (rule.to_owned(), incomplete, targets)
        })
        .collect()
}

fn targets(report: &PageReport, rule: &str, incomplete: bool) -> BTreeSet<String> {
    let list = if incomplete {
        &report.incomplete
    } else {
        &report.violations
    };
    list.iter()
        .filter(|r| r.id == rule)
        .flat_map(|r| r.nodes.iter().map(|n| n.target.clone()))
        .collect()
}

fn run(name: &str) -> (String, PageReport) {
    let source = load(name);
    let (report, _) = audit(&source, &format!("inline:{name}"), LIMITS, &budget(TIME))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    (source, report)
}

#[test]
fn every_rule_has_a_true_positive_and_a_true_negative() {
    let mut missing = Vec::new();
    let mut wrong = Vec::new();
    let ids: Vec<&str> = rules::all().map(|r| r.id).collect();
    assert!(ids.len() >= 43, "{} rules", ids.len());
    for id in ids {
        for kind in ["fail", "pass"] {
            let name = format!("{id}.{kind}.html");
            if !fixtures().join(&name).exists() {
                missing.push(name);
                continue;
            }
            let (source, report) = run(&name);
            for (rule, incomplete, expected) in expectations(&source) {
                assert_eq!(rule, id, "{name} names the wrong rule");
                let found = targets(&report, &rule, incomplete);
                if found != expected {
                    wrong.push(format!("{name}: expected {expected:?}, found {found:?}"));
                }
            }
            if kind == "pass" {
                let passed = report.passes.iter().any(|p| p.id == id);
                if !passed {
                    wrong.push(format!("{name}: the rule passed nothing (did it apply?)"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "missing fixtures: {missing:?}");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn reports_carry_axe_metadata() {
    let (_, report) = run("image-alt.fail.html");
    let rule = report
        .violations
        .iter()
        .find(|r| r.id == "image-alt")
        .unwrap();
    assert_eq!(rule.impact.as_str(), "critical");
    assert!(rule.tags.iter().any(|t| t == "wcag111") && rule.tags.iter().any(|t| t == "wcag2a"));
    assert_eq!(rule.help, "Images must have alternative text");
    assert!(rule.help_url.ends_with("/image-alt"));
    let node = &rule.nodes[0];
    assert!(node.html.starts_with("<img"), "{}", node.html);
    assert!(!node.failure_summary.is_empty());
    assert_eq!(report.title.as_deref(), Some("Fixture"));
}

#[test]
fn malformed_markup_is_parsed_as_a_browser_would() {
    let (source, report) = run("malformed.html");
    for (rule, incomplete, expected) in expectations(&source) {
        assert_eq!(targets(&report, &rule, incomplete), expected, "{rule}");
    }
    assert_eq!(report.title.as_deref(), Some("Broken markup"));
}

/// As axe-core reports them: on the table; a `headers` naming a data cell is a
/// violation, an empty one needs review; a header named by a cell's `headers` has its
/// data; a presentational table is not checked.
#[test]
fn table_rules_judge_the_table_as_axe_core_does() {
    let (source, report) = run("tables-as-axe.html");
    for (rule, incomplete, expected) in expectations(&source) {
        assert_eq!(
            targets(&report, &rule, incomplete),
            expected,
            "{rule} {incomplete}"
        );
    }
}

/// The page-level rules count what axe-core counts: a level-one heading by its
/// selector (an `<h1>` given another level does not count, an `<h2 aria-level="1">`
/// does), and an open dialog passes them, as it may hide the rest of the page.
#[test]
fn page_level_rules_count_as_axe_core_does() {
    let page = |body: &str| {
        format!(
            "<!doctype html><html lang=\"en\"><head><title>t</title></head><body>{body}</body></html>"
        )
    };
    for (body, heading_one, main) in [
        ("<main><h1>Title</h1></main>", true, true),
        ("<main><h1 aria-level=\"2\">Title</h1></main>", false, true),
        ("<main><h2 aria-level=\"1\">Title</h2></main>", true, true),
        (
            "<div role=\"heading\" aria-level=\"1\">Title</div>",
            true,
            false,
        ),
        ("<h1 role=\"heading\">Title</h1>", false, false),
        (
            "<h1 hidden>Title</h1><div role=\"main\">x</div>",
            false,
            true,
        ),
        ("<div role=\"dialog\"><p>Sign in</p></div>", true, true),
        ("<dialog><p>closed</p></dialog>", false, false),
    ] {
        let html = page(body);
        let (report, _) = audit(&html, "inline:page", LIMITS, &budget(TIME)).unwrap();
        for (rule, expected) in [
            ("page-has-heading-one", heading_one),
            ("landmark-one-main", main),
        ] {
            let failed = report.violations.iter().any(|r| r.id == rule);
            assert_eq!(!failed, expected, "{rule} on {body}");
        }
    }
}

/// Audits one page holding every case (each an element whose first attribute is its
/// `id`) and checks which of them `rule` fails.
fn judge_cases(rule: &str, cases: &[(&str, bool)], extra: &str) {
    let body: String = cases.iter().map(|(html, _)| *html).collect();
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><title>t</title></head><body><main><h1>t</h1>\
         {body}{extra}</main></body></html>"
    );
    let (report, _) = audit(&html, "inline:cases", LIMITS, &budget(TIME)).unwrap();
    let failed = targets(&report, rule, false);
    for (case, fails) in cases {
        let id = case.split('"').nth(1).unwrap();
        assert_eq!(
            failed.contains(&format!("#{id}")),
            *fails,
            "{rule}: {case}: {failed:?}"
        );
    }
}

/// aria-required-attr as axe-core judges it: what a role requires (a combobox its
/// expanded state and what it controls, unless closed), what an element supplies
/// itself, the exemptions, empty values, and hidden elements left out.
#[test]
fn required_aria_attributes_are_judged_as_axe_core_does() {
    let cases = [
        ("<input id=\"c1\" role=\"combobox\" aria-label=\"a\">", true),
        (
            "<input id=\"c2\" role=\"combobox\" aria-expanded=\"false\" aria-label=\"a\">",
            false,
        ),
        (
            "<div id=\"c3\" role=\"combobox\" aria-expanded=\"true\" aria-controls=\"l\">x</div>",
            false,
        ),
        (
            "<div id=\"c4\" role=\"combobox\" aria-expanded=\"true\">x</div>",
            true,
        ),
        ("<h2 id=\"h1\" role=\"heading\">Title</h2>", false),
        ("<div id=\"h2\" role=\"heading\">Title</div>", true),
        ("<div id=\"s1\" role=\"separator\"></div>", false),
        (
            "<div id=\"s2\" role=\"separator\" tabindex=\"0\"></div>",
            true,
        ),
        (
            "<div id=\"s3\" role=\"slider\" aria-valuetext=\"loud\" tabindex=\"0\"></div>",
            false,
        ),
        (
            "<div id=\"x1\" role=\"checkbox\" aria-checked=\"\" tabindex=\"0\">x</div>",
            true,
        ),
        ("<div id=\"x2\" role=\"checkbox\" hidden>x</div>", false),
        (
            "<div id=\"x3\" role=\"scrollbar\" aria-valuenow=\"3\"></div>",
            false,
        ),
        (
            "<input id=\"x4\" type=\"checkbox\" role=\"switch\" aria-label=\"w\">",
            false,
        ),
    ];
    judge_cases("aria-required-attr", &cases, "<ul id=\"l\"></ul>");
}

/// valid-lang as axe-core judges it: the base of the tag only, `lang` and `xml:lang`,
/// an empty value ignored but a blank one not, and only on elements with text of their
/// own.
#[test]
fn language_tags_are_judged_as_axe_core_does() {
    let cases = [
        ("<p id=\"l1\" lang=\"x-klingon\">Qapla</p>", true),
        ("<p id=\"l2\" lang=\"en-US_POSIX\">Hello</p>", false),
        ("<p id=\"l3\" lang=\"\">Hello</p>", false),
        ("<p id=\"l4\" lang=\" \">Hello</p>", true),
        ("<span id=\"l5\" lang=\"xx\"></span>", false),
        (
            "<div id=\"l6\" lang=\"xx\"><p lang=\"en\">Hello</p></div>",
            false,
        ),
        ("<div id=\"l7\" lang=\"xx\"><p>Hello</p></div>", true),
        ("<p id=\"l8\" xml:lang=\"zz\">Hello</p>", true),
        ("<img id=\"l9\" lang=\"xx\" alt=\"\" src=\"a.png\">", false),
        (
            "<img id=\"l10\" lang=\"xx\" alt=\"A cat\" src=\"a.png\">",
            true,
        ),
        ("<p id=\"l11\" lang=\"fr-CA\">Bonjour</p>", false),
    ];
    judge_cases("valid-lang", &cases, "");
}

/// aria-hidden-focus as axe-core judges it: the outermost `aria-hidden="true"` only,
/// what is reachable by keyboard inside it, and an `onfocus` handler on all of that
/// making it a question rather than a violation.
#[test]
fn hidden_focus_is_judged_as_axe_core_does() {
    let html = "<!doctype html><html lang=\"en\"><head><title>t</title></head><body><main>\
        <h1>t</h1>\
        <div id=\"outer\" aria-hidden=\"true\"><div id=\"inner\" aria-hidden=\"true\">\
        <a href=\"/x\">x</a></div></div>\
        <div id=\"handled\" aria-hidden=\"true\"><a href=\"/y\" onfocus=\"next()\">y</a></div>\
        <div id=\"quiet\" aria-hidden=\"true\"><a href=\"/z\" tabindex=\"-1\">z</a>\
        <button disabled>b</button></div>\
        <div id=\"upper\" aria-hidden=\"TRUE\"><a href=\"/w\">w</a></div>\
        </main></body></html>";
    let (report, _) = audit(html, "inline:hidden", LIMITS, &budget(TIME)).unwrap();
    let failed = targets(&report, "aria-hidden-focus", false);
    let review = targets(&report, "aria-hidden-focus", true);
    assert_eq!(failed, BTreeSet::from(["#outer".to_owned()]), "{failed:?}");
    assert_eq!(
        review,
        BTreeSet::from(["#handled".to_owned()]),
        "{review:?}"
    );
}

/// region as axe-core judges it: the outermost element holding content outside every
/// landmark, where a button, a live region, a dialog, an SVG graphic, a skip link or a
/// frame stops the search (a frame passes: its content is its own), an image with
/// alt="" is no content, and there is no report for text directly in `<body>`.
#[test]
fn content_outside_landmarks_is_reported_as_axe_core_does() {
    let html = "<!doctype html><html lang=\"en\"><head><title>t</title></head><body>\
        <a href=\"#content\">Skip to content</a>Loose text\
        <div id=\"d1\"><button>Menu</button><p id=\"p1\">Beside a button</p></div>\
        <div id=\"d2\"><p>Nested</p><p>paragraphs</p></div>\
        <div aria-live=\"polite\"><p>News</p></div><div role=\"alert\">Saved</div>\
        <img id=\"i1\" src=\"a.png\" alt=\"A cat\">\
        <iframe id=\"f1\" title=\"Map\" src=\"map.html\"></iframe>\
        <div id=\"d3\"><div role=\"dialog\" aria-label=\"Offer\"><p>Buy</p></div><p id=\"p3\">Beside</p></div>\
        <svg role=\"img\" aria-label=\"Logo\"><circle r=\"4\"></circle></svg>\
        <a href=\"/x\"><img src=\"x.png\" alt=\"\"></a>\
        <main id=\"content\"><h1>t</h1><p>Inside</p></main></body></html>";
    let (report, _) = audit(html, "inline:region", LIMITS, &budget(TIME)).unwrap();
    let failed = targets(&report, "region", false);
    let expected: BTreeSet<String> = ["#p1", "#d2", "#i1", "#p3"].map(String::from).into();
    assert_eq!(failed, expected);
}

/// bypass as axe-core judges it: only pages with a link; a same-page link (not a `#/`
/// route), a heading or a main landmark (another landmark is not enough); and a page
/// with none needs review, never fails.
#[test]
fn bypass_is_judged_as_axe_core_does() {
    for (body, outcome) in [
        (
            "<nav><a href=\"/a\">A</a></nav><div>Content</div>",
            Some(true),
        ),
        ("<a href=\"#/route\">A</a><div>Content</div>", Some(true)),
        ("<a href=\"#top\">Top</a><div>Content</div>", Some(false)),
        ("<a href=\"/a\">A</a><h3>Section</h3>", Some(false)),
        (
            "<a href=\"/a\">A</a><div role=\"main\">x</div>",
            Some(false),
        ),
        ("<button>Only a button</button>", None),
    ] {
        let html = format!(
            "<!doctype html><html lang=\"en\"><head><title>t</title></head><body>{body}</body></html>"
        );
        let (report, _) = audit(&html, "inline:bypass", LIMITS, &budget(TIME)).unwrap();
        let review = !targets(&report, "bypass", true).is_empty();
        let failed = !targets(&report, "bypass", false).is_empty();
        let passed = report.passes.iter().any(|p| p.id == "bypass");
        assert!(!failed, "never a violation: {body}");
        match outcome {
            Some(needs_review) => {
                assert_eq!((review, passed), (needs_review, !needs_review), "{body}")
            }
            None => assert!(!review && !passed, "not applicable: {body}"),
        }
    }
}

#[test]
fn other_charsets_are_decoded() {
    let (source, report) = run("latin1.html");
    assert_eq!(report.title.as_deref(), Some("Café crème"));
    for (rule, incomplete, expected) in expectations(&source) {
        assert_eq!(targets(&report, &rule, incomplete), expected, "{rule}");
    }
}

#[test]
fn undeterminable_colours_need_review_and_never_pass() {
    for name in ["needs-review.html", "external-styles.html"] {
        let (source, report) = run(name);
        for (rule, incomplete, expected) in expectations(&source) {
            assert_eq!(
                targets(&report, &rule, incomplete),
                expected,
                "{name}: {rule}"
            );
        }
    }
    let (_, report) = run("external-styles.html");
    assert!(
        !report.passes.iter().any(|p| p.id == "color-contrast"),
        "with external styles nothing passes color-contrast"
    );
}

#[test]
fn limits_give_clear_errors() {
    let small = Limits {
        max_bytes: 1000,
        ..LIMITS
    };
    let big = format!("<p>{}</p>", "x".repeat(2000));
    let err = audit(&big, "inline:big", small, &budget(TIME)).unwrap_err();
    assert!(matches!(err, PageError::TooLarge { size, limit: 1000 } if size > 1000));
    assert!(err.to_string().contains("max-page-bytes"), "{err}");

    let many = "<span></span>".repeat(500);
    let few = Limits {
        max_elements: 100,
        ..LIMITS
    };
    let err = audit(&many, "inline:many", few, &budget(TIME)).unwrap_err();
    assert_eq!(err, PageError::TooManyElements { limit: 100 });
    assert!(err.to_string().contains("max-elements"));

    let deep = format!("{}x{}", "<div>".repeat(5000), "</div>".repeat(5000));
    let err = audit(&deep, "inline:deep", LIMITS, &budget(TIME)).unwrap_err();
    assert_eq!(err, PageError::TooDeep { limit: 512 });
    assert!(err.to_string().contains("max-depth"));

    let (source, _) = run("color-contrast.fail.html");
    let err = audit(&source, "inline:slow", LIMITS, &budget(Duration::ZERO)).unwrap_err();
    assert!(matches!(err, PageError::TooSlow { .. }), "{err}");
}

#[test]
fn hostile_input_never_panics() {
    let pieces = [
        "<",
        ">",
        "</",
        "<div",
        "<table>",
        "<td>",
        "<img",
        " alt",
        "=",
        "\"",
        "'",
        "<!--",
        "-->",
        "<svg>",
        "<math>",
        "<template>",
        "<style>",
        "a{color:",
        "}",
        "@media{",
        "<script>",
        "\u{0}",
        "\u{feff}",
        "é",
        "&amp;",
        "&#0;",
        "<select><option>",
        "<label for=x>",
        "<input id=x aria-labelledby=x>",
        " role=\"\"",
        " lang=\"-\"",
        " headers=\"a a a\"",
        " style=\"color:rgb(1,2)\"",
        " tabindex=999999999999999999999",
        "<h7>",
        "<dl><dd>",
    ];
    // A deterministic walk through many combinations.
    let mut state: u64 = 0x9e3779b97f4a7c15;
    for _ in 0..300 {
        let mut doc = String::new();
        for _ in 0..200 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            doc.push_str(pieces[(state % pieces.len() as u64) as usize]);
        }
        let _ = audit(&doc, "inline:fuzz", LIMITS, &budget(TIME));
        let _ = decode(doc.as_bytes(), Some("text/html; charset=bogus"));
    }
}
