//! Pages built to cost the audit far more than their size: each is refused in time
//! proportional to the limit it crosses, or stops soon after its budget runs out or its
//! task is canceled, with a bounded amount of memory.

use std::thread;
use std::time::Duration;

use fundi_runtime::cpu::{Budget, Exhausted};
use fundi_skills::a11y::audit::audit;
use fundi_skills::a11y::{Limits, PageError};

const LIMITS: Limits = Limits {
    max_bytes: 5 * 1024 * 1024,
    max_elements: 100_000,
    max_depth: 512,
    max_attributes: 1_000,
};

fn refused(page: &str) -> PageError {
    audit(page, "inline:hostile", LIMITS, &Budget::unlimited()).unwrap_err()
}

#[test]
fn pages_over_a_parsing_limit_are_refused_before_they_are_parsed() {
    let nested = "<div>".repeat(100_000);
    assert_eq!(refused(&nested), PageError::TooDeep { limit: 512 });
    let formatting = format!(
        "{}{}",
        (0..20_000)
            .map(|i| format!("<b id=b{i}>"))
            .collect::<String>(),
        "<p>x".repeat(2_000)
    );
    assert_eq!(refused(&formatting), PageError::TooDeep { limit: 512 });
    let attributes = format!(
        "<p {}>x</p>",
        (0..90_000).map(|i| format!("a{i}=1 ")).collect::<String>()
    );
    assert_eq!(
        refused(&attributes),
        PageError::TooManyAttributes { limit: 1_000 }
    );
    let many = "<i>x</i>".repeat(100_001);
    assert_eq!(
        refused(&many),
        PageError::TooManyElements { limit: 100_000 }
    );
}

/// 8,000 rules that each match 40,000 elements: 320 million matches, seconds of work
/// however fast the machine, in a page of 420 KB.
fn every_rule_matches_every_element() -> String {
    format!(
        "<html lang=en><title>t</title><style>{}</style><main>{}</main></html>",
        "i{color:red}".repeat(8_000),
        "<i>x</i>".repeat(40_000)
    )
}

#[test]
fn style_matching_stops_soon_after_a_cancel() {
    let page = every_rule_matches_every_element();
    let stopping = Budget::unlimited();
    // From another thread, as the runtime's cancel comes.
    let canceler = {
        let stopping = stopping.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(100));
            stopping.cancel();
        })
    };
    let outcome = audit(&page, "inline:styles", LIMITS, &stopping);
    canceler.join().unwrap();
    assert_eq!(
        outcome.unwrap_err(),
        PageError::Stopped(Exhausted::Canceled)
    );
}

#[test]
fn a_page_whose_rules_all_match_every_element_is_audited_whole() {
    // The cascade is one entry per element, whatever the number of rules matching it.
    let page = format!(
        "<html lang=en><title>t</title><style>{}</style><main>{}</main></html>",
        "i{color:#777;background:#fff}".repeat(200),
        "<i>x</i>".repeat(2_000)
    );
    let (report, _) = audit(&page, "inline:styles", LIMITS, &Budget::unlimited()).unwrap();
    let contrast = report
        .violations
        .iter()
        .find(|r| r.id == "color-contrast")
        .expect("grey on white fails contrast");
    assert_eq!(contrast.nodes.len(), 2_000);
}

#[test]
fn style_matching_stops_at_the_page_time_limit() {
    let page = every_rule_matches_every_element();
    let budget = Budget::unlimited().within(Duration::from_millis(300));
    assert_eq!(
        audit(&page, "inline:styles", LIMITS, &budget).unwrap_err(),
        PageError::TooSlow { limit_ms: 300 }
    );
}
