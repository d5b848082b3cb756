//! Pages per second of the a11y audit on a large page, against parsing alone (the
//! html5ever floor) measured in the same run.
//!
//! `cargo bench -p fundi-skills --bench a11y [-- --pages N]` (default N = 20 per round).

use std::time::Instant;

use fundi_runtime::cpu::Budget;
use fundi_skills::a11y::Limits;
use fundi_skills::a11y::audit::audit;

/// A large, realistic page: sections with headings, images, links, a form, a table and
/// styled text, about 1 MB and 40,000 elements.
fn large_page() -> String {
    let mut html = String::from(
        "<!doctype html><html lang=\"en\"><head><title>Catalogue</title>\
         <style>.muted{color:#999}.card{background-color:#f5f5f5}#top{color:#222}</style>\
         </head><body><header><nav><a href=\"#main\">Skip</a></nav></header><main id=\"main\">\
         <h1 id=\"top\">Catalogue</h1>",
    );
    for i in 0..1200 {
        html.push_str(&format!(
            "<section class=\"card\" aria-label=\"Item {i}\"><h2>Item {i}</h2>\
             <img src=\"/img/{i}.png\"{alt}><p class=\"muted\">Description of item {i}, \
             with <a href=\"/items/{i}\">details</a> and <b>bold</b> text.</p>\
             <form aria-label=\"Order {i}\"><label for=\"q{i}\">Quantity</label>\
             <input id=\"q{i}\" type=\"number\" autocomplete=\"off\"><button>Add</button></form>\
             <table><tr><th>Size</th><th>Price</th></tr><tr><td>S</td><td>{i}.00</td></tr></table>\
             <ul><li>One</li><li>Two</li></ul></section>",
            alt = if i % 3 == 0 { "" } else { " alt=\"Photo\"" },
        ));
    }
    html.push_str("</main><footer>End</footer></body></html>");
    html
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let pages: usize = std::env::args()
        .skip_while(|a| a != "--pages")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    let html = large_page();
    let elements = scraper::Html::parse_document(&html).tree.nodes().count();
    let limits = Limits {
        max_bytes: 10 * 1024 * 1024,
        max_elements: 1_000_000,
        max_depth: 512,
        max_attributes: 1_000,
    };
    let (report, _) = audit(&html, "bench:large", limits, &Budget::unlimited()).unwrap();
    println!(
        "page: {} KiB, {elements} nodes, {} violations, {} to review",
        html.len() / 1024,
        report.violation_count(),
        report.incomplete_count()
    );
    let rounds = 5;
    let (mut parse_rates, mut audit_rates) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let started = Instant::now();
        for _ in 0..pages {
            std::hint::black_box(scraper::Html::parse_document(&html));
        }
        parse_rates.push(pages as f64 / started.elapsed().as_secs_f64());
        let started = Instant::now();
        for _ in 0..pages {
            std::hint::black_box(
                audit(&html, "bench:large", limits, &Budget::unlimited()).unwrap(),
            );
        }
        audit_rates.push(pages as f64 / started.elapsed().as_secs_f64());
    }
    let (parse, full) = (median(parse_rates), median(audit_rates));
    println!("| workload | pages/s (median of {rounds}) | ratio to parsing |");
    println!("|---|---|---|");
    println!("| html5ever parse only (baseline) | {parse:.1} | 1.00 |");
    println!(
        "| full audit (parse + 43 rules) | {full:.1} | {:.2} |",
        full / parse
    );
}
