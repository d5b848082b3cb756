//! color-contrast: text against its background, from `style=""` and `<style>` rules.
//! Whatever cannot be determined (external stylesheets, `@media` rules, background
//! images, unknown colour values) is reported as needing review, never passed; so are
//! text the colour of its background and text of symbols only, as axe-core does.
//! Opacity is composited. What is seen counts: `aria-hidden` text is checked too.

use super::Check;
use crate::a11y::colors::{Rgba, contrast, parse_color};
use crate::a11y::page::Page;

const WHITE: Rgba = Rgba::rgb(255.0, 255.0, 255.0);
const BLACK: Rgba = Rgba::rgb(0.0, 0.0, 0.0);
/// User agents' default unvisited link colour.
const LINK_BLUE: Rgba = Rgba::rgb(0.0, 0.0, 238.0);

pub(super) fn color_contrast(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        let text = page.own_text(i);
        if page.unseen[i] || text.trim().is_empty() {
            continue;
        }
        if matches!(page.name(i), "textarea" | "option" | "select" | "noscript") {
            continue;
        }
        if page.styles.external {
            check.review(
                i,
                "the page loads external stylesheets, so the text's colours cannot be \
                 determined here",
            );
            continue;
        }
        // Icons drawn with characters (★, ☰): their contrast is for a person to judge.
        if text.chars().all(|c| c.is_whitespace() || symbol(c)) {
            check.review(
                i,
                "the text is only symbols or punctuation (an icon?): check its contrast by eye",
            );
            continue;
        }
        match measure(page, i) {
            Err(why) => check.review(i, why),
            Ok(m) if contrast(m.fg, m.bg) < 1.0 + 1e-9 => check.review(
                i,
                format!(
                    "the text has its background's colour ({} on {}): hidden on purpose, or \
                     invisible?",
                    m.fg.hex(),
                    m.bg.hex()
                ),
            ),
            Ok(m) => {
                let large = m.size_px >= 24.0 || (m.bold && m.size_px >= 18.66);
                let minimum = if large { 3.0 } else { 4.5 };
                let ratio = contrast(m.fg, m.bg);
                check.expect(i, ratio + 1e-9 >= minimum, || {
                    format!(
                        "contrast {:.2}:1 ({} on {}, {}px {}) is below the {minimum}:1 minimum",
                        ratio,
                        m.fg.hex(),
                        m.bg.hex(),
                        trim_number(m.size_px),
                        if m.bold { "bold" } else { "normal" },
                    )
                });
            }
        }
    }
}

/// What axe-core leaves out of text before judging its contrast: punctuation, the
/// symbol blocks it calls non-BMP (arrows, maths, box drawing, dingbats, U+2600 to
/// U+27BF, the private use area), and what is beyond the basic plane (emoji).
fn symbol(c: char) -> bool {
    let code = c as u32;
    "\\'!\"#$%&£¢¥§€()*+,-./:;<=>?@[]^_`{|}~±".contains(c)
        || (0x2000..=0x206F).contains(&code)
        || (0x2E00..=0x2E7F).contains(&code)
        || (0x1D00..=0x1DFF).contains(&code)
        || (0x20A0..=0x27BF).contains(&code)
        || (0xE000..=0xF8FF).contains(&code)
        || code > 0xFFFF
}

struct Measured {
    fg: Rgba,
    bg: Rgba,
    size_px: f64,
    bold: bool,
}

fn chain<'p>(page: &'p Page<'_>, i: usize) -> impl Iterator<Item = usize> + 'p {
    std::iter::once(i).chain(page.ancestors(i))
}

fn certain(page: &Page<'_>, i: usize, property: &str) -> Result<Option<String>, String> {
    let specified = page.styles.specified(i, property);
    if specified.uncertain {
        return Err(format!(
            "a conditional rule (@media, @supports) may set {property} here"
        ));
    }
    Ok(specified.value)
}

/// The element's own `opacity` (1 when unset).
fn opacity(page: &Page<'_>, a: usize) -> Result<f64, String> {
    let Some(opacity) = certain(page, a, "opacity")? else {
        return Ok(1.0);
    };
    let value = opacity
        .trim()
        .strip_suffix('%')
        .map(|p| p.parse::<f64>().map(|v| v / 100.0))
        .unwrap_or_else(|| opacity.trim().parse::<f64>());
    match value {
        Ok(v) if v.is_finite() => Ok(v.clamp(0.0, 1.0)),
        _ => Err(format!("opacity {opacity} cannot be evaluated")),
    }
}

fn measure(page: &Page<'_>, i: usize) -> Result<Measured, String> {
    // The text fades with every element around it; composited over its background
    // (which fades with the elements above it).
    let mut faded = 1.0;
    for a in chain(page, i) {
        faded *= opacity(page, a)?;
    }
    let fg = foreground(page, i)?;
    let bg = background(page, i)?;
    let fg = Rgba {
        a: fg.a * faded,
        ..fg
    };
    let fg = if fg.a < 1.0 { fg.over(bg) } else { fg };
    Ok(Measured {
        fg,
        bg,
        size_px: font_size(page, i)?,
        bold: bold(page, i)?,
    })
}

fn foreground(page: &Page<'_>, i: usize) -> Result<Rgba, String> {
    for a in chain(page, i) {
        if let Some(value) = certain(page, a, "color")? {
            let value = value.trim();
            if matches!(value, "inherit" | "currentcolor" | "unset") {
                continue;
            }
            return parse_color(value).ok_or_else(|| format!("color {value} cannot be evaluated"));
        }
        if page.name(a) == "a" && page.attr(a, "href").is_some() {
            return Ok(LINK_BLUE);
        }
    }
    Ok(BLACK)
}

fn background(page: &Page<'_>, i: usize) -> Result<Rgba, String> {
    let mut layers = Vec::new();
    for a in chain(page, i) {
        if let Some(image) = certain(page, a, "background-image")?
            && image.trim() != "none"
        {
            return Err("a background image is behind the text".into());
        }
        let shorthand = certain(page, a, "background")?;
        if let Some(short) = &shorthand
            && (short.contains("url(") || short.contains("gradient("))
        {
            return Err("a background image is behind the text".into());
        }
        let color = match certain(page, a, "background-color")? {
            Some(value) => Some(
                parse_color(&value)
                    .ok_or_else(|| format!("background-color {value} cannot be evaluated"))?,
            ),
            None => match shorthand {
                Some(short) => {
                    let found = short.split_whitespace().find_map(parse_color);
                    if found.is_none() && short.trim() != "none" {
                        return Err(format!("background {short} cannot be evaluated"));
                    }
                    found
                }
                None => None,
            },
        };
        if let Some(color) = color
            && color.a > 0.0
        {
            let mut faded = 1.0;
            for up in chain(page, a) {
                faded *= opacity(page, up)?;
            }
            let color = Rgba {
                a: color.a * faded,
                ..color
            };
            layers.push(color);
            if color.a >= 1.0 {
                break;
            }
        }
    }
    Ok(layers
        .into_iter()
        .rev()
        .fold(WHITE, |below, layer| layer.over(below)))
}

/// Default sizes of headings, relative to their parent (user-agent stylesheet).
fn default_em(name: &str) -> f64 {
    match name {
        "h1" => 2.0,
        "h2" => 1.5,
        "h3" => 1.17,
        "h5" => 0.83,
        "h6" => 0.67,
        "small" => 0.83,
        _ => 1.0,
    }
}

fn font_size(page: &Page<'_>, i: usize) -> Result<f64, String> {
    let mut path: Vec<usize> = chain(page, i).collect();
    path.reverse();
    let mut size = 16.0;
    for a in path {
        let parent = size;
        size = match certain(page, a, "font-size")? {
            None => parent * default_em(page.name(a)),
            Some(value) => {
                let value = value.trim();
                let number = |suffix: &str| {
                    value
                        .strip_suffix(suffix)
                        .and_then(|n| n.trim().parse::<f64>().ok())
                };
                if let Some(px) = number("px") {
                    px
                } else if let Some(pt) = number("pt") {
                    pt * 4.0 / 3.0
                } else if let Some(rem) = number("rem") {
                    rem * 16.0
                } else if let Some(em) = number("em") {
                    em * parent
                } else if let Some(pct) = number("%") {
                    pct / 100.0 * parent
                } else {
                    match value {
                        "xx-small" => 9.0,
                        "x-small" => 10.0,
                        "small" => 13.0,
                        "medium" => 16.0,
                        "large" => 18.0,
                        "x-large" => 24.0,
                        "xx-large" => 32.0,
                        "smaller" => parent / 1.2,
                        "larger" => parent * 1.2,
                        "inherit" => parent,
                        _ => return Err(format!("font-size {value} cannot be evaluated")),
                    }
                }
            }
        };
    }
    Ok(size)
}

fn bold(page: &Page<'_>, i: usize) -> Result<bool, String> {
    for a in chain(page, i) {
        if let Some(weight) = certain(page, a, "font-weight")? {
            let weight = weight.trim();
            return Ok(match weight {
                "bold" | "bolder" => true,
                "normal" | "lighter" => false,
                "inherit" => continue,
                n => n.parse::<u32>().map(|w| w >= 600).unwrap_or(false),
            });
        }
        if matches!(
            page.name(a),
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "b" | "strong" | "th"
        ) {
            return Ok(true);
        }
    }
    Ok(false)
}

fn trim_number(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}
