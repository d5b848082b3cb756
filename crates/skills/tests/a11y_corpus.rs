//! a11y-audit against axe-core on a differential corpus: 82 generated pages in the
//! shapes of real sites (tools/axe-corpus), whose axe-core verdicts (in headless
//! Chromium) are checked in. Every element carries a `data-k` attribute, by which the
//! two audits' failing nodes are matched. The per-rule agreement is the table in
//! docs/skills/a11y-audit.md, which this test checks (`FUNDI_WRITE_AGREEMENT=1` writes
//! it after a change).

mod corpus;

use std::collections::{BTreeMap, BTreeSet};

use fundi_runtime::cpu::Budget;
use fundi_skills::a11y::Limits;
use fundi_skills::a11y::audit::audit;
use serde_json::Value;

use corpus::{Agreement, Nodes, check_docs, compare, key, root, table};

const BEGIN: &str = "<!-- axe-corpus agreement: written by crates/skills/tests/a11y_corpus.rs -->";
const END: &str = "<!-- end of axe-corpus agreement -->";

fn agreement() -> Agreement {
    let fixtures = root().join("tests/fixtures/axe-corpus");
    let verdicts: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures.join("verdicts.json")).unwrap())
            .unwrap();
    let limits = Limits {
        max_bytes: 5 * 1024 * 1024,
        max_elements: 100_000,
        max_depth: 512,
        max_attributes: 1_000,
    };
    compare(&verdicts, |name| {
        let source = std::fs::read_to_string(fixtures.join("pages").join(name)).unwrap();
        let (report, _) = audit(
            &source,
            &format!("file:///{name}"),
            limits,
            &Budget::unlimited(),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let nodes =
            |list: &[fundi_skills::a11y::audit::RuleReport]| -> BTreeMap<String, BTreeSet<u64>> {
                list.iter()
                    .map(|r| {
                        (
                            r.id.to_string(),
                            r.nodes.iter().filter_map(|n| key(&n.html)).collect(),
                        )
                    })
                    .collect()
            };
        let ours: Nodes = [nodes(&report.violations), nodes(&report.incomplete)];
        ours
    })
}

#[test]
fn agreement_with_axe_core_is_as_documented() {
    let verdicts: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/axe-corpus/verdicts.json")).unwrap(),
    )
    .unwrap();
    let (per_rule, disagreements) = agreement();
    let written = table(&per_rule, verdicts["axeCore"].as_str().unwrap());
    check_docs(BEGIN, END, &written, &disagreements);
}
