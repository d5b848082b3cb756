//! Findings, and the score and grade they give.

use serde::Serialize;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
}

impl Severity {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }
}

/// One problem found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// The check's id, e.g. `csp-unsafe-inline`.
    pub id: &'static str,
    /// What is wrong, in one line.
    pub title: String,
    /// How bad.
    pub severity: Severity,
    /// The CWE it falls under, if any.
    pub cwe: Option<u32>,
    /// What was seen: the header, cookie or line.
    pub evidence: String,
    /// How to fix it.
    pub remediation: &'static str,
    /// The URL it was seen on.
    pub url: String,
    /// What on that URL: a header or cookie name, a path (for the fingerprint).
    pub target: String,
    /// Points this finding takes off the score (see docs/skills/security-scan.md).
    pub penalty: i32,
}

/// A bonus for a good practice (counted only when the score is already 90 or more).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bonus {
    /// What earned it.
    pub id: &'static str,
    /// Points.
    pub points: i32,
}

/// The score: 100, minus penalties, plus bonuses when it is still at least 90; never
/// below 0.
pub fn score(findings: &[Finding], bonuses: &[Bonus]) -> i32 {
    let base = 100 - findings.iter().map(|f| f.penalty).sum::<i32>();
    let bonus = if base >= 90 {
        bonuses.iter().map(|b| b.points).sum::<i32>()
    } else {
        0
    };
    (base + bonus).max(0)
}

/// The grade for a score, on the HTTP Observatory's chart (both grades use it).
pub fn grade(score: i32) -> &'static str {
    match score {
        s if s >= 100 => "A+",
        s if s >= 90 => "A",
        s if s >= 85 => "A-",
        s if s >= 80 => "B+",
        s if s >= 70 => "B",
        s if s >= 65 => "B-",
        s if s >= 60 => "C+",
        s if s >= 50 => "C",
        s if s >= 45 => "C-",
        s if s >= 40 => "D+",
        s if s >= 30 => "D",
        s if s >= 25 => "D-",
        _ => "F",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(penalty: i32) -> Finding {
        Finding {
            id: "x",
            title: String::new(),
            severity: Severity::Low,
            cwe: None,
            evidence: String::new(),
            remediation: "",
            url: String::new(),
            target: String::new(),
            penalty,
        }
    }

    #[test]
    fn scores_and_grades_follow_the_documented_method() {
        let bonus = [Bonus {
            id: "hsts-preloaded",
            points: 5,
        }];
        assert_eq!(score(&[], &bonus), 105);
        assert_eq!(grade(105), "A+");
        assert_eq!(score(&[finding(25)], &bonus), 75, "no bonus under 90");
        assert_eq!(grade(75), "B");
        assert_eq!(score(&[finding(80), finding(50)], &[]), 0);
        assert_eq!(grade(0), "F");
        assert_eq!(grade(90), "A");
        assert_eq!(grade(24), "F");
    }
}
