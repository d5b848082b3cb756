//! The chaos run's report as charts drawn here, as SVG: each phase's probe latency (p50
//! and p99) and success rate, so that a page needs no script or network to show them
//! and a test can read them as markup. Each chart has a title and a description for
//! screen readers, and the same figures follow as a table.

use maud::{Markup, html};
use serde_json::Value;

/// The chart's width, its label column, and one bar's height (SVG user units).
const WIDTH: f64 = 640.0;
const LABELS: f64 = 150.0;
const BAR: f64 = 18.0;
const GAP: f64 = 10.0;

/// One phase's figures.
struct Phase<'a> {
    name: &'a str,
    verdict: &'a str,
    p50: Option<f64>,
    p99: Option<f64>,
    success: Option<f64>,
    sent: u64,
}

fn phases(report: &Value) -> Vec<Phase<'_>> {
    let phases = report.get("phases").and_then(Value::as_array);
    phases
        .into_iter()
        .flatten()
        .map(|phase| {
            let probe = phase.get("probe").filter(|p| !p.is_null());
            let figure = |key: &str| probe.and_then(|p| p.get(key)).and_then(Value::as_f64);
            Phase {
                name: phase.get("name").and_then(Value::as_str).unwrap_or("?"),
                verdict: phase
                    .get("verdict")
                    .and_then(Value::as_str)
                    .unwrap_or("none"),
                p50: figure("p50Ms"),
                p99: figure("p99Ms"),
                success: figure("successRate"),
                sent: probe
                    .and_then(|p| p.get("sent"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
            }
        })
        .collect()
}

/// A `chaos-report`: the verdict, both charts, the figures as a table, the breaches.
pub(crate) fn chaos(report: &Value) -> Markup {
    let phases = phases(report);
    let verdict = report
        .get("verdict")
        .and_then(Value::as_str)
        .unwrap_or("none");
    let target = report
        .get("target")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let breaches: Vec<&str> = report
        .get("phases")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|p| {
            p.get("breaches")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .filter_map(Value::as_str)
        .collect();
    html! {
        p { "Target " code { (target) } ", verdict " strong class={ "verdict " (verdict) } { (verdict) } "." }
        (latency_chart(&phases))
        (success_chart(&phases))
        table class="report" {
            caption { "Probe figures per phase" }
            thead { tr { th scope="col" { "Phase" } th scope="col" { "Probes" } th scope="col" { "Success rate" }
                         th scope="col" { "p50" } th scope="col" { "p99" } th scope="col" { "Verdict" } } }
            tbody {
                @for phase in &phases {
                    tr {
                        th scope="row" { (phase.name) }
                        td { (phase.sent) }
                        td { (percent(phase.success)) }
                        td { (millis(phase.p50)) }
                        td { (millis(phase.p99)) }
                        td { (phase.verdict) }
                    }
                }
            }
        }
        @if !breaches.is_empty() {
            h4 { "Breaches" }
            ul { @for breach in breaches { li { (breach) } } }
        }
    }
}

fn latency_chart(phases: &[Phase]) -> Markup {
    let most = phases
        .iter()
        .flat_map(|p| [p.p50, p.p99])
        .flatten()
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let row = 2.0 * BAR + GAP;
    let height = row * phases.len() as f64 + GAP;
    let scale = (WIDTH - LABELS - 80.0) / most;
    html! {
        figure {
            svg class="chart" role="img" aria-labelledby="latency-title latency-desc"
                viewBox={ "0 0 " (WIDTH) " " (height) } width=(WIDTH) height=(height) {
                title id="latency-title" { "Probe latency per phase" }
                desc id="latency-desc" { (describe(phases, |p| format!("p50 {}, p99 {}", millis(p.p50), millis(p.p99)))) }
                @for (i, phase) in phases.iter().enumerate() {
                    @let top = GAP + row * i as f64;
                    text class="label" x="0" y=(top + BAR) { (phase.name) }
                    @for (j, (kind, value)) in [("p50", phase.p50), ("p99", phase.p99)].into_iter().enumerate() {
                        @let y = top + BAR * j as f64;
                        rect class={ "bar " (kind) } x=(LABELS) y=(y) height=(BAR - 2.0) width=(value.unwrap_or(0.0) * scale) {}
                        text class="value" x=(LABELS + value.unwrap_or(0.0) * scale + 4.0) y=(y + BAR - 5.0) { (kind) " " (millis(value)) }
                    }
                }
            }
            figcaption { "Probe latency per phase, p50 and p99, in milliseconds." }
        }
    }
}

fn success_chart(phases: &[Phase]) -> Markup {
    let row = BAR + GAP;
    let height = row * phases.len() as f64 + GAP;
    let full = WIDTH - LABELS - 80.0;
    html! {
        figure {
            svg class="chart" role="img" aria-labelledby="success-title success-desc"
                viewBox={ "0 0 " (WIDTH) " " (height) } width=(WIDTH) height=(height) {
                title id="success-title" { "Probe success rate per phase" }
                desc id="success-desc" { (describe(phases, |p| percent(p.success))) }
                @for (i, phase) in phases.iter().enumerate() {
                    @let y = GAP + row * i as f64;
                    text class="label" x="0" y=(y + BAR - 5.0) { (phase.name) }
                    rect class="track" x=(LABELS) y=(y) height=(BAR - 2.0) width=(full) {}
                    rect class="bar success" x=(LABELS) y=(y) height=(BAR - 2.0) width=(phase.success.unwrap_or(0.0) * full) {}
                    text class="value" x=(LABELS + full + 4.0) y=(y + BAR - 5.0) { (percent(phase.success)) }
                }
            }
            figcaption { "Share of probes that succeeded in each phase." }
        }
    }
}

fn describe(phases: &[Phase], figures: impl Fn(&Phase) -> String) -> String {
    phases
        .iter()
        .map(|p| format!("{}: {}", p.name, figures(p)))
        .collect::<Vec<_>>()
        .join("; ")
}

fn millis(value: Option<f64>) -> String {
    value.map_or_else(|| "no probe".into(), |v| format!("{v:.1} ms"))
}

fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "no probe".into(), |v| format!("{:.1}%", v * 100.0))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn report() -> Value {
        json!({
            "target": "127.0.0.1:9", "verdict": "fail",
            "phases": [
                {"name": "calm", "verdict": "pass", "breaches": [],
                 "probe": {"sent": 10, "successRate": 1.0, "p50Ms": 10.0, "p99Ms": 20.0}},
                {"name": "<b>storm</b>", "verdict": "fail", "breaches": ["success rate 50.0% in phase storm"],
                 "probe": {"sent": 10, "successRate": 0.5, "p50Ms": 40.0, "p99Ms": 80.0}},
                {"name": "idle", "verdict": "none", "breaches": [], "probe": null},
            ],
        })
    }

    #[test]
    fn bars_are_drawn_to_scale_and_named_for_screen_readers() {
        let html = chaos(&report()).into_string();
        let full = WIDTH - LABELS - 80.0;
        // The largest latency (p99 of the storm) takes the whole scale; p50 of the calm
        // phase an eighth of it; a 50% success rate half the track.
        assert!(html.contains(&format!("width=\"{full}\"")), "{html}");
        assert!(
            html.contains(&format!("width=\"{}\"", full / 8.0)),
            "{html}"
        );
        assert!(
            html.contains(&format!(
                "class=\"bar success\" x=\"{LABELS}\" y=\"38\" height=\"16\" width=\"{}\"",
                full / 2.0
            )),
            "{html}"
        );
        assert!(html.contains("role=\"img\" aria-labelledby=\"latency-title latency-desc\""));
        assert!(html.contains("<title id=\"success-title\">Probe success rate per phase</title>"));
        assert!(html.contains("calm: p50 10.0 ms, p99 20.0 ms"), "{html}");
        assert!(html.contains("idle: no probe"), "{html}");
    }

    #[test]
    fn names_from_the_report_are_escaped_and_breaches_listed() {
        let html = chaos(&report()).into_string();
        assert!(html.contains("&lt;b&gt;storm&lt;/b&gt;"), "{html}");
        assert!(!html.contains("<b>storm"), "{html}");
        assert!(
            html.contains("<li>success rate 50.0% in phase storm</li>"),
            "{html}"
        );
        assert!(html.contains("class=\"verdict fail\""), "{html}");
    }
}
