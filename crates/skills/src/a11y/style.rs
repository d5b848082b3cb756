//! Author styles: `<style>` rules and `style=""` attributes, enough to know what an
//! element's colours, size, weight and visibility are. What cannot be known (external
//! stylesheets, rules under `@media`, values this parser does not read) is reported as
//! unknown, never guessed.

use fundi_runtime::cpu::{Budget, Exhausted};
use scraper::{ElementRef, Selector};

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

/// A declaration: property, value, `!important`.
type Declaration = (String, String, bool);

struct StyleRule {
    selector: Selector,
    specificity: (u32, u32, u32),
    order: usize,
    declarations: Vec<Declaration>,
    /// Under `@media`, `@supports`...: may or may not apply.
    conditional: bool,
}

/// Where an element's winning declaration of a property is.
#[derive(Clone, Copy)]
enum Source {
    /// Rule `n`, its declaration `d`.
    Rule(usize, usize),
    /// The element's `style=""`, its declaration `d`.
    Inline(usize),
}

/// One element's cascade of the watched properties: the winner of each, and whether a
/// conditional rule could set it. Only elements some declaration applies to have one.
#[derive(Clone, Default)]
struct Cascade {
    winner: [Option<(Precedence, Source)>; WATCHED.len()],
    uncertain: [bool; WATCHED.len()],
}

impl Cascade {
    fn offer(&mut self, property: usize, key: Precedence, source: Source) {
        let slot = &mut self.winner[property];
        if slot.as_ref().is_none_or(|(k, _)| key >= *k) {
            *slot = Some((key, source));
        }
    }
}

/// How many selector matches run between two looks at the budget.
const MATCHES_PER_CHECK: usize = 2_048;

/// The page's author styles.
pub(crate) struct Styles {
    rules: Vec<StyleRule>,
    /// Each element's `style=""` declarations, parsed once.
    inline: Vec<Vec<Declaration>>,
    /// Each element's cascade, computed once (`None`: no declaration applies). Its size
    /// is bounded by the elements and the watched properties, however many rules
    /// match: no rule keeps the set of elements it matched.
    cascades: Vec<Option<Box<Cascade>>>,
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
    /// Reads the `<style>` elements, notes external stylesheets, and computes each
    /// element's cascade, looking at the budget every `MATCHES_PER_CHECK` matches.
    pub(crate) fn collect(
        elements: &[ElementRef<'_>],
        budget: &Budget,
    ) -> Result<Styles, Exhausted> {
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
            cascades: Vec::new(),
            external: false,
        };
        for element in elements {
            match element.value().name() {
                "style" => {
                    let css: String = element.text().collect();
                    styles.parse_sheet(&css, false);
                    budget.check()?;
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
        let mut matches = 0usize;
        let mut cascades = Vec::with_capacity(elements.len());
        for (element, inline) in elements.iter().zip(&styles.inline) {
            let mut cascade: Option<Box<Cascade>> = None;
            for (n, rule) in styles.rules.iter().enumerate() {
                matches += 1;
                if matches % MATCHES_PER_CHECK == 0 {
                    budget.check()?;
                }
                if !rule.selector.matches(element) {
                    continue;
                }
                let cascade = cascade.get_or_insert_default();
                for (d, (name, _, important)) in rule.declarations.iter().enumerate() {
                    let Some(property) = watched(name) else {
                        continue;
                    };
                    match rule.conditional {
                        true => cascade.uncertain[property] = true,
                        false => {
                            let key = (*important, false, rule.specificity, rule.order);
                            cascade.offer(property, key, Source::Rule(n, d));
                        }
                    }
                }
            }
            // Inline declarations beat any selector.
            for (d, (name, _, important)) in inline.iter().enumerate() {
                if let Some(property) = watched(name) {
                    let key = (*important, true, (u32::MAX, 0, 0), usize::MAX);
                    cascade
                        .get_or_insert_default()
                        .offer(property, key, Source::Inline(d));
                }
            }
            cascades.push(cascade);
        }
        styles.cascades = cascades;
        Ok(styles)
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
                    specificity: specificity(selector_text),
                    order: self.rules.len(),
                    declarations: declarations.clone(),
                    conditional,
                });
            }
        }
    }

    /// The value of `property` specified for element `i` (not inherited).
    pub(crate) fn specified(&self, i: usize, property: &str) -> Specified {
        let cascade = self.cascades.get(i).and_then(Option::as_deref);
        let (Some(cascade), Some(property)) = (cascade, watched(property)) else {
            return Specified {
                value: None,
                uncertain: false,
            };
        };
        let value = cascade.winner[property].map(|(_, source)| match source {
            Source::Rule(n, d) => self.rules[n].declarations[d].1.clone(),
            Source::Inline(d) => self.inline[i][d].1.clone(),
        });
        Specified {
            value,
            uncertain: cascade.uncertain[property],
        }
    }

    /// The certain specified value, if any.
    pub(crate) fn value(&self, i: usize, property: &str) -> Option<String> {
        let specified = self.specified(i, property);
        if specified.uncertain {
            None
        } else {
            specified.value
        }
    }
}

/// The index of a watched property.
fn watched(property: &str) -> Option<usize> {
    WATCHED.iter().position(|p| *p == property)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specificity_counts_ids_classes_and_types() {
        assert_eq!(specificity("#a .b p"), (1, 1, 1));
        assert_eq!(specificity("div > p.x[title]:hover"), (0, 3, 2));
        assert_eq!(specificity("a::before"), (0, 0, 2));
    }
}
