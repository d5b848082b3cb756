//! Author styles: `<style>` rules and `style=""` attributes, enough to know what an
//! element's colours, size, weight and visibility are. What cannot be known (external
//! stylesheets, rules under `@media`, values this parser does not read) is reported as
//! unknown, never guessed.

use std::collections::{HashMap, HashSet};

use ego_tree::NodeId;
use scraper::{ElementRef, Html, Selector};

use super::page::Page;

/// Properties the rules read.
const WATCHED: &[&str] = &[
    "color",
    "background-color",
    "background",
    "background-image",
    "display",
    "visibility",
    "opacity",
    "font-size",
    "font-weight",
    "font",
];

/// What decides between declarations: `!important`, inline, specificity, order.
type Precedence = (bool, bool, (u32, u32, u32), usize);

struct StyleRule {
    selector: Selector,
    /// The elements it matches (matched once per page: matching per query is slow).
    matched: HashSet<NodeId>,
    specificity: (u32, u32, u32),
    order: usize,
    declarations: Vec<(String, String, bool)>,
    /// Under `@media`, `@supports`...: may or may not apply.
    conditional: bool,
}

/// The page's author styles.
pub(crate) struct Styles {
    rules: Vec<StyleRule>,
    /// Each element's `style=""` declarations, parsed once.
    inline: Vec<Vec<(String, String, bool)>>,
    /// Whether any declaration (inline or from a rule) applies to the element: most
    /// elements have none, and need no lookup at all.
    touched: Vec<bool>,
    /// Rule indexes by property.
    by_property: HashMap<String, Vec<usize>>,
    /// `<link rel=stylesheet>` or `@import`: styles this audit cannot see.
    pub external: bool,
}

/// A specified value and whether it is certain.
pub(crate) struct Specified {
    /// The value, lowercased and trimmed.
    pub value: Option<String>,
    /// A conditional rule (`@media`...) could set it on this element.
    pub uncertain: bool,
}

impl Styles {
    /// Reads the `<style>` elements and notes external stylesheets.
    pub(crate) fn collect(html: &Html, elements: &[ElementRef<'_>]) -> Styles {
        let mut styles = Styles {
            rules: Vec::new(),
            inline: elements
                .iter()
                .map(|e| {
                    e.value()
                        .attr("style")
                        .map(parse_declarations)
                        .unwrap_or_default()
                })
                .collect(),
            touched: Vec::new(),
            by_property: HashMap::new(),
            external: false,
        };
        for element in elements {
            match element.value().name() {
                "style" => {
                    let css: String = element.text().collect();
                    styles.parse_sheet(&css, false);
                }
                "link" => {
                    let rel = element
                        .value()
                        .attr("rel")
                        .unwrap_or("")
                        .to_ascii_lowercase();
                    if rel.split_whitespace().any(|r| r == "stylesheet") {
                        styles.external = true;
                    }
                }
                _ => {}
            }
        }
        for rule in &mut styles.rules {
            rule.matched = html.select(&rule.selector).map(|e| e.id()).collect();
        }
        let matched: HashSet<NodeId> = styles
            .rules
            .iter()
            .flat_map(|r| r.matched.iter().copied())
            .collect();
        styles.touched = elements
            .iter()
            .zip(&styles.inline)
            .map(|(e, inline)| !inline.is_empty() || matched.contains(&e.id()))
            .collect();
        for (n, rule) in styles.rules.iter().enumerate() {
            for (property, _, _) in &rule.declarations {
                styles
                    .by_property
                    .entry(property.clone())
                    .or_default()
                    .push(n);
            }
        }
        styles
    }

    fn parse_sheet(&mut self, css: &str, conditional: bool) {
        let css = strip_comments(css);
        let mut rest = css.as_str();
        while let Some(open) = rest.find('{') {
            let prelude = rest[..open].trim();
            let Some(close) = matching_brace(rest, open) else {
                break;
            };
            let block = &rest[open + 1..close];
            // Statements like `@import url(x);` end before the block.
            let (statements, prelude) = match prelude.rfind(';') {
                Some(semi) => (&prelude[..semi], prelude[semi + 1..].trim()),
                None => ("", prelude),
            };
            if statements.contains("@import") {
                self.external = true;
            }
            if let Some(at) = prelude.strip_prefix('@') {
                let name = at.split_whitespace().next().unwrap_or("");
                if matches!(
                    name,
                    "media" | "supports" | "layer" | "container" | "document"
                ) {
                    self.parse_sheet(block, true);
                }
                // @font-face, @keyframes, @page: nothing the rules read.
            } else {
                self.add_rule(prelude, block, conditional);
            }
            rest = &rest[close + 1..];
        }
        if rest.contains("@import") {
            self.external = true;
        }
    }

    fn add_rule(&mut self, selectors: &str, block: &str, conditional: bool) {
        let declarations = parse_declarations(block);
        if declarations.is_empty() {
            return;
        }
        for selector_text in selectors.split(',') {
            let selector_text = selector_text.trim();
            // Unknown selectors (vendor pseudo-classes...) never match in a browser either.
            if let Ok(selector) = Selector::parse(selector_text) {
                self.rules.push(StyleRule {
                    selector,
                    matched: HashSet::new(),
                    specificity: specificity(selector_text),
                    order: self.rules.len(),
                    declarations: declarations.clone(),
                    conditional,
                });
            }
        }
    }

    /// The value of `property` specified for element `i` (not inherited).
    pub(crate) fn specified(&self, page: &Page<'_>, i: usize, property: &str) -> Specified {
        if !self.touched[i] {
            return Specified {
                value: None,
                uncertain: false,
            };
        }
        let element = page.elements[i];
        // (important, inline, specificity, order) decides; inline beats any selector.
        let mut best: Option<(Precedence, String)> = None;
        let mut uncertain = false;
        if let Some(indexes) = self.by_property.get(property) {
            for &n in indexes {
                let rule = &self.rules[n];
                if !rule.matched.contains(&element.id()) {
                    continue;
                }
                if rule.conditional {
                    uncertain = true;
                    continue;
                }
                for (name, value, important) in &rule.declarations {
                    if name == property {
                        let key = (*important, false, rule.specificity, rule.order);
                        if best.as_ref().is_none_or(|(k, _)| key >= *k) {
                            best = Some((key, value.clone()));
                        }
                    }
                }
            }
        }
        for (name, value, important) in &self.inline[i] {
            if name == property {
                let key = (*important, true, (u32::MAX, 0, 0), usize::MAX);
                if best.as_ref().is_none_or(|(k, _)| key >= *k) {
                    best = Some((key, value.clone()));
                }
            }
        }
        Specified {
            value: best.map(|(_, v)| v),
            uncertain,
        }
    }

    /// The certain specified value, if any.
    pub(crate) fn value(&self, page: &Page<'_>, i: usize, property: &str) -> Option<String> {
        if !WATCHED.contains(&property) {
            return None;
        }
        let specified = self.specified(page, i, property);
        if specified.uncertain {
            None
        } else {
            specified.value
        }
    }
}

fn strip_comments(css: &str) -> String {
    let mut out = String::with_capacity(css.len());
    let mut rest = css;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        match rest[start + 2..].find("*/") {
            Some(end) => rest = &rest[start + 2 + end + 2..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

fn matching_brace(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (n, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + n);
                }
            }
            _ => {}
        }
    }
    None
}

/// `a: b; c: d !important` as (property, value, important), lowercased.
pub(crate) fn parse_declarations(block: &str) -> Vec<(String, String, bool)> {
    block
        .split(';')
        .filter_map(|declaration| {
            let (name, value) = declaration.split_once(':')?;
            let name = name.trim().to_ascii_lowercase();
            if !WATCHED.contains(&name.as_str()) {
                return None;
            }
            let mut value = value.trim().to_ascii_lowercase();
            let important = value.ends_with("!important");
            if important {
                value = value.trim_end_matches("!important").trim().to_owned();
            }
            Some((name, value, important))
        })
        .collect()
}

/// (ids, classes/attributes/pseudo-classes, types) of a selector, counted from its text.
fn specificity(selector: &str) -> (u32, u32, u32) {
    let (mut ids, mut classes, mut types) = (0, 0, 0);
    let chars: Vec<char> = selector.chars().collect();
    let mut n = 0;
    let mut at_compound_start = true;
    while n < chars.len() {
        let c = chars[n];
        match c {
            '#' => {
                ids += 1;
                at_compound_start = false;
            }
            '.' | '[' => {
                classes += 1;
                at_compound_start = false;
                if c == '[' {
                    while n < chars.len() && chars[n] != ']' {
                        n += 1;
                    }
                }
            }
            ':' => {
                if chars.get(n + 1) == Some(&':') {
                    types += 1;
                    n += 1;
                } else {
                    classes += 1;
                }
                at_compound_start = false;
            }
            ' ' | '>' | '+' | '~' => at_compound_start = true,
            '*' => at_compound_start = false,
            c if c.is_ascii_alphabetic() && at_compound_start => {
                types += 1;
                at_compound_start = false;
            }
            _ => {}
        }
        n += 1;
    }
    (ids, classes, types)
}

/// An sRGB colour with alpha, components 0 to 255 and alpha 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rgba {
    /// Red.
    pub r: f64,
    /// Green.
    pub g: f64,
    /// Blue.
    pub b: f64,
    /// Alpha.
    pub a: f64,
}

impl Rgba {
    /// Opaque.
    pub(crate) const fn rgb(r: f64, g: f64, b: f64) -> Rgba {
        Rgba { r, g, b, a: 1.0 }
    }

    /// This colour painted over `below` (which is opaque).
    pub(crate) fn over(self, below: Rgba) -> Rgba {
        let mix = |top: f64, bottom: f64| top * self.a + bottom * (1.0 - self.a);
        Rgba::rgb(
            mix(self.r, below.r),
            mix(self.g, below.g),
            mix(self.b, below.b),
        )
    }

    /// WCAG relative luminance.
    pub(crate) fn luminance(self) -> f64 {
        let channel = |c: f64| {
            let c = c / 255.0;
            if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * channel(self.r) + 0.7152 * channel(self.g) + 0.0722 * channel(self.b)
    }

    /// `#rrggbb`.
    pub(crate) fn hex(self) -> String {
        let c = |v: f64| v.round().clamp(0.0, 255.0) as u8;
        format!("#{:02x}{:02x}{:02x}", c(self.r), c(self.g), c(self.b))
    }
}

/// The WCAG contrast ratio of two opaque colours.
pub(crate) fn contrast(a: Rgba, b: Rgba) -> f64 {
    let (la, lb) = (a.luminance(), b.luminance());
    let (hi, lo) = if la > lb { (la, lb) } else { (lb, la) };
    (hi + 0.05) / (lo + 0.05)
}

/// Parses a CSS colour; `None` for what this parser does not know (`var()`, system
/// colours, `color-mix()`...).
pub(crate) fn parse_color(value: &str) -> Option<Rgba> {
    let value = value.trim();
    if value == "transparent" {
        return Some(Rgba {
            r: 0.0,
            g: 0.0,
            b: 0.0,
            a: 0.0,
        });
    }
    if let Some(hex) = value.strip_prefix('#') {
        let digits: Vec<u32> = hex.chars().map(|c| c.to_digit(16)).collect::<Option<_>>()?;
        let pair = |a: u32, b: u32| f64::from(a * 16 + b);
        return match digits.as_slice() {
            [r, g, b] => Some(Rgba::rgb(pair(*r, *r), pair(*g, *g), pair(*b, *b))),
            [r, g, b, a] => Some(Rgba {
                a: pair(*a, *a) / 255.0,
                ..Rgba::rgb(pair(*r, *r), pair(*g, *g), pair(*b, *b))
            }),
            [r1, r2, g1, g2, b1, b2] => {
                Some(Rgba::rgb(pair(*r1, *r2), pair(*g1, *g2), pair(*b1, *b2)))
            }
            [r1, r2, g1, g2, b1, b2, a1, a2] => Some(Rgba {
                a: pair(*a1, *a2) / 255.0,
                ..Rgba::rgb(pair(*r1, *r2), pair(*g1, *g2), pair(*b1, *b2))
            }),
            _ => None,
        };
    }
    if let Some(args) = value
        .strip_prefix("rgba(")
        .or_else(|| value.strip_prefix("rgb("))
        .and_then(|v| v.strip_suffix(')'))
    {
        let parts = components(args);
        if parts.len() < 3 {
            return None;
        }
        let channel = |p: &str| -> Option<f64> {
            match p.strip_suffix('%') {
                Some(pct) => pct.parse::<f64>().ok().map(|v| v * 2.55),
                None => p.parse::<f64>().ok(),
            }
        };
        return Some(Rgba {
            r: channel(&parts[0])?,
            g: channel(&parts[1])?,
            b: channel(&parts[2])?,
            a: alpha(parts.get(3))?,
        });
    }
    if let Some(args) = value
        .strip_prefix("hsla(")
        .or_else(|| value.strip_prefix("hsl("))
        .and_then(|v| v.strip_suffix(')'))
    {
        let parts = components(args);
        if parts.len() < 3 {
            return None;
        }
        let h = parts[0].trim_end_matches("deg").parse::<f64>().ok()?;
        let s = parts[1].trim_end_matches('%').parse::<f64>().ok()? / 100.0;
        let l = parts[2].trim_end_matches('%').parse::<f64>().ok()? / 100.0;
        let (r, g, b) = hsl_to_rgb(h, s, l);
        return Some(Rgba {
            a: alpha(parts.get(3))?,
            ..Rgba::rgb(r, g, b)
        });
    }
    named(value)
}

fn components(args: &str) -> Vec<String> {
    args.replace(['/', ','], " ")
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

fn alpha(part: Option<&String>) -> Option<f64> {
    match part {
        None => Some(1.0),
        Some(p) => match p.strip_suffix('%') {
            Some(pct) => pct.parse::<f64>().ok().map(|v| v / 100.0),
            None => p.parse::<f64>().ok(),
        },
    }
}

fn hsl_to_rgb(h: f64, s: f64, l: f64) -> (f64, f64, f64) {
    let h = h.rem_euclid(360.0) / 360.0;
    let q = if l < 0.5 {
        l * (1.0 + s)
    } else {
        l + s - l * s
    };
    let p = 2.0 * l - q;
    let hue = |mut t: f64| {
        if t < 0.0 {
            t += 1.0;
        }
        if t > 1.0 {
            t -= 1.0;
        }
        if t < 1.0 / 6.0 {
            p + (q - p) * 6.0 * t
        } else if t < 0.5 {
            q
        } else if t < 2.0 / 3.0 {
            p + (q - p) * (2.0 / 3.0 - t) * 6.0
        } else {
            p
        }
    };
    (
        hue(h + 1.0 / 3.0) * 255.0,
        hue(h) * 255.0,
        hue(h - 1.0 / 3.0) * 255.0,
    )
}

/// CSS named colours (the common ones; others are "unknown", never guessed).
fn named(name: &str) -> Option<Rgba> {
    let (r, g, b) = match name {
        "black" => (0, 0, 0),
        "white" => (255, 255, 255),
        "red" => (255, 0, 0),
        "green" => (0, 128, 0),
        "blue" => (0, 0, 255),
        "yellow" => (255, 255, 0),
        "orange" => (255, 165, 0),
        "purple" => (128, 0, 128),
        "gray" | "grey" => (128, 128, 128),
        "silver" => (192, 192, 192),
        "maroon" => (128, 0, 0),
        "navy" => (0, 0, 128),
        "teal" => (0, 128, 128),
        "olive" => (128, 128, 0),
        "lime" => (0, 255, 0),
        "aqua" | "cyan" => (0, 255, 255),
        "fuchsia" | "magenta" => (255, 0, 255),
        "darkgray" | "darkgrey" => (169, 169, 169),
        "lightgray" | "lightgrey" => (211, 211, 211),
        "dimgray" | "dimgrey" => (105, 105, 105),
        "gainsboro" => (220, 220, 220),
        "whitesmoke" => (245, 245, 245),
        "darkblue" => (0, 0, 139),
        "darkred" => (139, 0, 0),
        "darkgreen" => (0, 100, 0),
        "lightblue" => (173, 216, 230),
        "lightyellow" => (255, 255, 224),
        "pink" => (255, 192, 203),
        "brown" => (165, 42, 42),
        "gold" => (255, 215, 0),
        "beige" => (245, 245, 220),
        "ivory" => (255, 255, 240),
        "coral" => (255, 127, 80),
        "salmon" => (250, 128, 114),
        "tomato" => (255, 99, 71),
        "khaki" => (240, 230, 140),
        "indigo" => (75, 0, 130),
        "violet" => (238, 130, 238),
        "crimson" => (220, 20, 60),
        "slategray" | "slategrey" => (112, 128, 144),
        "steelblue" => (70, 130, 180),
        _ => return None,
    };
    Some(Rgba::rgb(f64::from(r), f64::from(g), f64::from(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_parse_and_contrast_as_wcag_defines() {
        let white = parse_color("#fff").unwrap();
        let black = parse_color("rgb(0, 0, 0)").unwrap();
        assert!((contrast(white, black) - 21.0).abs() < 0.01);
        let grey = parse_color("#777777").unwrap();
        assert!((contrast(grey, white) - 4.48).abs() < 0.01);
        assert_eq!(parse_color("hsl(0, 100%, 50%)").unwrap().hex(), "#ff0000");
        assert_eq!(parse_color("rgba(0 0 0 / 50%)").unwrap().a, 0.5);
        assert!(parse_color("var(--brand)").is_none());
        assert!(parse_color("canvastext").is_none());
        let half = parse_color("rgba(0,0,0,0.5)").unwrap().over(white);
        assert_eq!(half.hex(), "#808080");
    }

    #[test]
    fn specificity_counts_ids_classes_and_types() {
        assert_eq!(specificity("#a .b p"), (1, 1, 1));
        assert_eq!(specificity("div > p.x[title]:hover"), (0, 3, 2));
        assert_eq!(specificity("a::before"), (0, 0, 2));
    }
}
