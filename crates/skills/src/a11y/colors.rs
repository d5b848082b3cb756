//! CSS colours as the contrast rule needs them: parsed from specified values, blended
//! over what is below, and compared by WCAG's contrast ratio.

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
}
