//! What the two corpus tests share: nodes matched by their `data-k`, per-rule counts
//! of agreement with axe-core's recorded verdicts, and the table in
//! docs/skills/a11y-audit.md, checked (or written, with `FUNDI_WRITE_AGREEMENT=1`)
//! between its markers.
#![allow(dead_code, unreachable_pub)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A page's nodes by rule: violating, and needing review.
pub type Nodes = [BTreeMap<String, BTreeSet<u64>>; 2];

/// The `data-k` of an element's markup.
pub fn key(html: &str) -> Option<u64> {
    let start = html.find("data-k=\"")? + "data-k=\"".len();
    let end = html[start..].find('"')? + start;
    html[start..end].parse().ok()
}

/// True positives, false positives, false negatives.
#[derive(Default, Clone, Copy)]
pub struct Counts {
    pub tp: usize,
    pub fp: usize,
    pub fn_: usize,
}

impl Counts {
    pub fn add(&mut self, other: Counts) {
        self.tp += other.tp;
        self.fp += other.fp;
        self.fn_ += other.fn_;
    }

    fn ratio(part: usize, whole: usize) -> f64 {
        if whole == 0 {
            1.0
        } else {
            part as f64 / whole as f64
        }
    }

    pub fn precision(&self) -> f64 {
        Counts::ratio(self.tp, self.tp + self.fp)
    }

    pub fn recall(&self) -> f64 {
        Counts::ratio(self.tp, self.tp + self.fn_)
    }

    pub fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

/// Per rule, the counts on violating nodes and on nodes needing review; and the pages
/// where the two disagree.
pub type Agreement = (
    BTreeMap<String, (Counts, Counts)>,
    BTreeMap<String, Vec<String>>,
);

/// Compares each page of `verdicts` (axe-core's, recorded) with `ours` of it.
pub fn compare(verdicts: &Value, mut ours: impl FnMut(&str) -> Nodes) -> Agreement {
    let mut per_rule: BTreeMap<String, (Counts, Counts)> = BTreeMap::new();
    let mut disagreements: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for rule in verdicts["rules"].as_array().unwrap() {
        per_rule.insert(
            rule.as_str().unwrap().to_owned(),
            (Counts::default(), Counts::default()),
        );
    }
    for (name, expected) in verdicts["pages"].as_object().unwrap() {
        let ours = ours(name);
        for (rule, counts) in per_rule.iter_mut() {
            for (at, kind) in ["violations", "incomplete"].into_iter().enumerate() {
                let theirs: BTreeSet<u64> = expected[rule.as_str()][kind]
                    .as_array()
                    .map(|nodes| nodes.iter().filter_map(Value::as_u64).collect())
                    .unwrap_or_default();
                let mine = ours[at].get(rule.as_str()).cloned().unwrap_or_default();
                let page = Counts {
                    tp: mine.intersection(&theirs).count(),
                    fp: mine.difference(&theirs).count(),
                    fn_: theirs.difference(&mine).count(),
                };
                if page.fp + page.fn_ > 0 {
                    disagreements
                        .entry(format!("{rule} {kind}"))
                        .or_default()
                        .push(format!(
                            "{name}: only fundi {:?}, only axe {:?}",
                            mine.difference(&theirs).collect::<Vec<_>>(),
                            theirs.difference(&mine).collect::<Vec<_>>()
                        ));
                }
                match at {
                    0 => counts.0.add(page),
                    _ => counts.1.add(page),
                }
            }
        }
    }
    (per_rule, disagreements)
}

pub fn row(rule: &str, c: &Counts) -> String {
    format!(
        "| {rule} | {} | {} | {} | {:.2} | {:.2} | {:.2} |",
        c.tp + c.fn_,
        c.tp + c.fp,
        c.tp,
        c.precision(),
        c.recall(),
        c.f1()
    )
}

pub const HEADER: [&str; 2] = [
    "| rule | axe-core nodes | fundi nodes | both | precision | recall | F1 |",
    "|---|---:|---:|---:|---:|---:|---:|",
];

pub fn table(per_rule: &BTreeMap<String, (Counts, Counts)>, axe: &str) -> String {
    let mut total = Counts::default();
    let mut lines = vec![
        format!(
            "Violating nodes, against axe-core {axe}, over the {} rules (rules with no \
             violating node on either side are left out):",
            per_rule.len()
        ),
        String::new(),
    ];
    lines.extend(HEADER.map(String::from));
    let mut macro_f1 = Vec::new();
    for (rule, (c, _)) in per_rule {
        total.add(*c);
        if c.tp + c.fp + c.fn_ > 0 {
            macro_f1.push(c.f1());
            lines.push(row(&format!("`{rule}`"), c));
        }
    }
    lines.push(row("**all nodes**", &total));
    let mean = macro_f1.iter().sum::<f64>() / macro_f1.len().max(1) as f64;
    lines.push(String::new());
    lines.push(format!("The mean of the per-rule F1: {mean:.3}."));
    lines.push(String::new());
    lines.push("Nodes needing review (axe-core's incomplete), where either side has any:".into());
    lines.push(String::new());
    lines.extend(HEADER.map(String::from));
    for (rule, (_, c)) in per_rule {
        if c.tp + c.fp + c.fn_ > 0 {
            lines.push(row(&format!("`{rule}`"), c));
        }
    }
    lines.join("\n")
}

/// Checks the table between `begin` and `end` in docs/skills/a11y-audit.md against
/// `written`, or writes it there with `FUNDI_WRITE_AGREEMENT=1`.
pub fn check_docs(
    begin: &str,
    end: &str,
    written: &str,
    disagreements: &BTreeMap<String, Vec<String>>,
) {
    let docs_path = root().join("../../docs/skills/a11y-audit.md");
    let docs = std::fs::read_to_string(&docs_path).unwrap();
    let (Some(start), Some(end)) = (docs.find(begin), docs.find(end)) else {
        panic!("docs/skills/a11y-audit.md has no agreement table between its markers");
    };
    let documented = docs[start + begin.len()..end].trim();
    if std::env::var_os("FUNDI_WRITE_AGREEMENT").is_some() {
        let updated = format!("{}{begin}\n{written}\n{}", &docs[..start], &docs[end..]);
        std::fs::write(&docs_path, updated).unwrap();
        for (rule, pages) in disagreements {
            eprintln!("{rule}:\n  {}", pages.join("\n  "));
        }
        return;
    }
    assert_eq!(
        documented,
        written.trim(),
        "the agreement changed: run with FUNDI_WRITE_AGREEMENT=1 to update the docs \
         (disagreements: {disagreements:#?})"
    );
}
