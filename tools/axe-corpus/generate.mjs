// Writes the differential corpus: pages in the shapes of real sites (shops, dashboards,
// docs, forms, widgets, articles, tables, large pages), each built from parts with and
// without accessibility defects, chosen by a seeded generator so that the corpus is the
// same on every run. Every element gets a `data-k` attribute (first, so that it survives
// truncated snippets): axe-core's nodes and fundi's are matched by it.
//
//   node generate.mjs OUT_DIR
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const out = process.argv[2] ?? "../../crates/skills/tests/fixtures/axe-corpus/pages";
mkdirSync(out, { recursive: true });

// A small seeded generator (mulberry32).
function rng(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

let r = rng(1);
const pick = (list) => list[Math.floor(r() * list.length)];
const chance = (p) => r() < p;
const some = (list, n) => Array.from({ length: n }, () => pick(list));

const words = ["alpha", "north", "river", "cedar", "amber", "orbit", "maple", "delta", "quartz", "harbor"];
const word = () => pick(words);
const title = () => `${word()} ${word()}`.replace(/^./, (c) => c.toUpperCase());

// Parts: each a function returning HTML; defects appear by chance.
const parts = {
  nav: () => {
    const links = some(words, 4).map((w) =>
      chance(0.15) ? `<a href="/${w}"><img src="/${w}.svg"></a>` : `<a href="/${w}">${w}</a>`
    );
    const skip = chance(0.5) ? `<a href="#main">Skip to content</a>` : "";
    const wrap = chance(0.7) ? ["<nav>", "</nav>"] : ["<div class=\"nav\">", "</div>"];
    return `${skip}${wrap[0]}<ul>${links.map((l) => `<li>${l}</li>`).join("")}${chance(0.1) ? "<p>stray</p>" : ""}</ul>${wrap[1]}`;
  },
  heading: (level) => (chance(0.08) ? `<h${level}></h${level}>` : `<h${level}>${title()}</h${level}>`),
  image: () =>
    pick([
      `<img src="/p/${word()}.jpg" alt="${title()}">`,
      `<img src="/p/${word()}.jpg">`,
      `<img src="/p/${word()}.jpg" alt="">`,
      `<img src="/p/${word()}.jpg" role="presentation">`,
      `<img src="/p/${word()}.jpg" aria-label="${title()}">`,
      `<img src="/p/${word()}.jpg" title="${title()}">`,
      `<img src="/p/${word()}.jpg" aria-hidden="true">`,
    ]),
  link: () =>
    pick([
      `<a href="/${word()}">${title()}</a>`,
      `<a href="/${word()}"></a>`,
      `<a href="/${word()}" aria-label="${title()}"><span class="icon"></span></a>`,
      `<a href="/${word()}"><img src="/i.png" alt=""></a>`,
      `<a href="/${word()}" title="${title()}"></a>`,
    ]),
  button: () =>
    pick([
      `<button>${title()}</button>`,
      `<button></button>`,
      `<button aria-label="Close"><span>×</span></button>`,
      `<button><img src="/x.png"></button>`,
      `<input type="button" value="${title()}">`,
      `<input type="submit">`,
      `<input type="button">`,
      `<input type="image" src="/go.png">`,
      `<input type="image" src="/go.png" alt="Go">`,
    ]),
  field: () => {
    const id = `f-${word()}-${Math.floor(r() * 1000)}`;
    return pick([
      `<label for="${id}">${title()}</label><input id="${id}" type="text">`,
      `<label>${title()} <input type="email"></label>`,
      `<input type="text" placeholder="${title()}">`,
      `<input type="text" aria-label="${title()}">`,
      `<input type="text">`,
      `<label>${title()}</label><input id="${id}" type="text">`,
      `<select><option>${word()}</option></select>`,
      `<label for="${id}">${title()}</label><select id="${id}"><option>${word()}</option></select>`,
      `<textarea></textarea>`,
      `<input type="text" autocomplete="${pick(["email", "name", "nope", "shipping street-address", "on", "tel-national"])}" aria-label="x">`,
      `<input type="checkbox" id="${id}"><label for="${id}">${title()}</label>`,
      `<input type="hidden" name="t">`,
    ]);
  },
  table: () => {
    const cols = 2 + Math.floor(r() * 3);
    const rows = 1 + Math.floor(r() * 4);
    const kind = pick(["good", "scope", "headers", "badheaders", "thonly", "layout", "badscope"]);
    const head = Array.from({ length: cols }, (_, i) =>
      kind === "scope" || kind === "badscope"
        ? `<th scope="${kind === "badscope" && i === 0 ? "sideways" : "col"}">${word()}</th>`
        : kind === "headers" || kind === "badheaders"
          ? `<th id="h${i}">${word()}</th>`
          : kind === "layout"
            ? `<td>${word()}</td>`
            : `<th>${word()}</th>`
    );
    const body =
      kind === "thonly"
        ? ""
        : Array.from({ length: rows }, () =>
            `<tr>${Array.from({ length: cols }, (_, i) =>
              kind === "headers"
                ? `<td headers="h${i}">${r().toFixed(2)}</td>`
                : kind === "badheaders"
                  ? `<td headers="h${i + 5}">${r().toFixed(2)}</td>`
                  : `<td>${r().toFixed(2)}</td>`
            ).join("")}</tr>`
          ).join("");
    return `<table>${chance(0.3) ? `<caption>${title()}</caption>` : ""}<tr>${head.join("")}</tr>${body}</table>`;
  },
  list: () =>
    pick([
      `<ul><li>${word()}</li><li>${word()}</li></ul>`,
      `<ul><li>${word()}</li><div>${word()}</div></ul>`,
      `<ol><li>${word()}</li><span>${word()}</span></ol>`,
      `<li>${word()}</li>`,
      `<dl><dt>${word()}</dt><dd>${word()}</dd></dl>`,
      `<dl><dt>${word()}</dt><p>${word()}</p></dl>`,
      `<dd>${word()}</dd>`,
      `<ul role="list"><li>${word()}</li></ul>`,
    ]),
  widget: () => {
    const id = `w-${Math.floor(r() * 10000)}`;
    return pick([
      `<div role="checkbox" tabindex="0">${word()}</div>`,
      `<div role="checkbox" aria-checked="false" tabindex="0">${word()}</div>`,
      `<div role="slider" tabindex="0" aria-label="Volume"></div>`,
      `<div role="slider" aria-valuenow="3" tabindex="0" aria-label="Volume"></div>`,
      `<input role="combobox" aria-label="Search" aria-expanded="true">`,
      `<div role="combobox" aria-expanded="false" aria-label="Pick"></div>`,
      `<div role="tab">${word()}</div>`,
      `<div role="banana">${word()}</div>`,
      `<div aria-hidden="true"><a href="/${word()}">${word()}</a></div>`,
      `<div aria-hidden="true"><button tabindex="-1">${word()}</button></div>`,
      `<div aria-labelled="x">${word()}</div>`,
      `<div aria-checked="maybe" role="checkbox" tabindex="0">${word()}</div>`,
      `<span tabindex="3">${word()}</span>`,
      `<a href="/${word()}"><button>${word()}</button></a>`,
      `<div role="button" tabindex="0"><a href="/x">${word()}</a></div>`,
      `<div id="${id}">${word()}</div><div id="${id}">${word()}</div><input aria-labelledby="${id}">`,
      `<iframe src="/frame.html"></iframe>`,
      `<iframe src="/frame.html" title="${title()}"></iframe>`,
      `<svg role="img"><circle r="4"></circle></svg>`,
      `<svg role="img" aria-label="${title()}"><circle r="4"></circle></svg>`,
      `<div role="img"></div>`,
      `<object data="/m.swf"></object>`,
      `<object data="/m.swf" title="${title()}"></object>`,
      `<map name="m"><area href="/a" shape="rect" coords="0,0,1,1"></map><img src="/m.png" usemap="#m" alt="map">`,
      `<p lang="xx-nope">${word()}</p>`,
      `<p lang="fr">${word()}</p>`,
      `<div role="separator" tabindex="0"></div>`,
      `<div role="heading">${word()}</div>`,
      `<div role="heading" aria-level="2">${word()}</div>`,
    ]);
  },
  text: () =>
    pick([
      `<p>${title()} ${word()} ${word()}.</p>`,
      `<p style="color:#777;background:#fff">${title()} muted</p>`,
      `<p style="color:#aaa;background:#fff">${title()} faint</p>`,
      `<p style="color:#fff;background:#ffeb3b">${title()} on yellow</p>`,
      `<p style="color:#000;background:#fff">${title()} strong</p>`,
      `<span style="color:#999">${word()}</span>`,
      `<p><small style="color:#888;font-size:12px">${word()} note</small></p>`,
    ]),
};

// Parts that take a browser's view of the page to judge: CSS that hides or shows,
// names from elsewhere, inherited and composited colours, large text.
parts.tricky = () => {
  const id = `t-${Math.floor(r() * 100000)}`;
  return pick([
    `<div class="hide"><img src="/h.png"><a href="/h"></a></div>`,
    `<div hidden><button></button></div>`,
    `<div style="visibility:hidden"><input type="text"></div>`,
    `<div style="display:none"><a href="/x"></a></div>`,
    `<a href="/${word()}"><span class="sr-only">${title()}</span><span class="icon"></span></a>`,
    `<button><span class="sr-only">${title()}</span></button>`,
    `<span id="${id}" hidden>${title()}</span><button aria-labelledby="${id}"></button>`,
    `<span id="${id}">${title()}</span><a href="/x" aria-labelledby="${id}"></a>`,
    `<input type="text" aria-labelledby="${id}-missing">`,
    `<input type="text" title="${title()}">`,
    `<input type="text" placeholder="${title()}" id="${id}">`,
    `<p style="color:#767676;background:#fff">${title()} just enough</p>`,
    `<p style="color:#777;background:#fff;font-size:24px">${title()} large</p>`,
    `<p style="color:#888;background:#fff;font-size:19px;font-weight:bold">${title()} large bold</p>`,
    `<p style="color:#888;background:#fff;font-size:18px">${title()} not quite large</p>`,
    `<div style="color:#999"><p>${title()} inherited</p></div>`,
    `<div style="background:#333"><p style="color:#555">${title()} dark on dark</p></div>`,
    `<div style="opacity:0.5"><p style="color:#000;background:#fff">${title()} faded</p></div>`,
    `<p style="color:rgba(0,0,0,0.4);background:#fff">${title()} translucent</p>`,
    `<p style="color:#fff;background-image:url(/bg.png)">${title()} on an image</p>`,
    `<p style="color:#000;background:#fff"><span style="color:#bbb">${word()}</span> mixed</p>`,
    `<my-card><p>${title()}</p><img src="/c.png"></my-card>`,
    `<details><summary>${title()}</summary><p>${word()}</p></details>`,
    `<details><summary></summary><p>${word()}</p></details>`,
    `<table role="presentation"><tr><td>${word()}</td><td>${word()}</td></tr></table>`,
    `<section aria-label="${title()}"><h2>${title()}</h2><p>${word()}</p></section>`,
    `<section><h2>${title()}</h2><p>${word()}</p></section>`,
    `<div role="region" aria-label="${title()}"><p>${word()}</p></div>`,
    `<form aria-label="${title()}"><input type="search" aria-label="Search"></form>`,
    `<label>${title()}<select><option>${word()}</option></select></label>`,
    `<input type="submit" value="">`,
    `<button value="x" style="color:#fff;background:#fff">${word()}</button>`,
    `<a href="/x" style="color:#ccc">${word()}</a>`,
    `<div role="button" tabindex="0"></div>`,
    `<div role="link" tabindex="0">${word()}</div>`,
    `<span role="img" aria-label="${title()}">★</span>`,
    `<img src="/x.png" alt="   ">`,
    `<img src="/x.png" alt="${word()}.png">`,
    `<ul><li>${word()}</li><template><div>${word()}</div></template><script>void 0</script></ul>`,
    `<ul><li>${word()}</li><li hidden>${word()}</li></ul>`,
    `<h3 style="display:none"></h3>`,
    `<h4 aria-hidden="true"></h4>`,
  ]);
};

function head(meta) {
  const lang = pick([' lang="en"', ' lang="en"', ' lang="en-GB"', "", ' lang=""', ' lang="english"']);
  const docTitle = chance(0.85) ? `<title>${title()}</title>` : "";
  const viewport = pick([
    `<meta name="viewport" content="width=device-width, initial-scale=1">`,
    `<meta name="viewport" content="width=device-width, user-scalable=no">`,
    `<meta name="viewport" content="width=device-width, maximum-scale=1.0">`,
    "",
  ]);
  const refresh = chance(0.06) ? `<meta http-equiv="refresh" content="5">` : "";
  const style = `<style>.hide{display:none}.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}body{font-size:16px}</style>`;
  return `<!doctype html><html${lang}><head><meta charset="utf-8">${docTitle}${viewport}${refresh}${style}${meta ?? ""}</head>`;
}

function section(kinds, n) {
  return Array.from({ length: n }, () => parts[pick(kinds)]()).join("\n");
}

// The shapes of pages, each a body builder.
const shapes = {
  shop: () => {
    const cards = Array.from({ length: 4 + Math.floor(r() * 8) }, () =>
      `<div class="card">${parts.image()}${parts.heading(3)}${parts.text()}${parts.button()}</div>`
    ).join("\n");
    return `<header>${parts.nav()}</header><main id="main">${parts.heading(1)}${cards}</main><footer>${parts.link()}</footer>`;
  },
  dashboard: () =>
    `<div class="top">${parts.nav()}</div>${chance(0.6) ? "<main>" : "<div>"}${parts.heading(chance(0.7) ? 1 : 2)}${section(["table", "widget", "text"], 6)}${chance(0.6) ? "</main>" : "</div>"}<aside>${section(["link", "list"], 3)}</aside>`,
  docs: () =>
    `<header>${parts.nav()}</header><div class="layout"><nav>${section(["list", "link"], 3)}</nav><main>${parts.heading(1)}${parts.text()}${parts.heading(pick([2, 3, 4]))}${section(["text", "list", "table"], 5)}${parts.heading(2)}${section(["text", "image"], 3)}</main></div>`,
  form: () =>
    `<main>${parts.heading(1)}<form>${section(["field"], 6)}${parts.button()}</form>${chance(0.3) ? `<form>${section(["field"], 2)}</form>` : ""}</main>`,
  widgets: () => `<main>${parts.heading(1)}${section(["widget"], 10)}</main>`,
  article: () =>
    `${chance(0.5) ? `<header>${parts.nav()}</header>` : parts.nav()}<article>${parts.heading(chance(0.8) ? 1 : 2)}${section(["text", "image", "link"], 8)}</article>${chance(0.5) ? `<footer>${parts.text()}</footer>` : parts.text()}`,
  mixed: () =>
    `${parts.nav()}<main>${parts.heading(1)}${section(Object.keys(parts).filter((k) => k !== "nav" && k !== "heading"), 14)}</main>`,
  tricky: () =>
    `<header>${parts.nav()}</header><main>${parts.heading(1)}${section(["tricky"], 14)}</main>${chance(0.5) ? section(["tricky"], 3) : ""}`,
  large: () => {
    const rows = Array.from({ length: 400 + Math.floor(r() * 400) }, () =>
      `<div class="row">${parts.image()}${parts.link()}${parts.text()}${chance(0.3) ? parts.button() : ""}</div>`
    ).join("\n");
    return `<header>${parts.nav()}</header><main>${parts.heading(1)}${rows}</main>`;
  },
};

// Every element gets data-k, first among its attributes.
function tag(html) {
  let k = 0;
  return html.replace(/<([a-zA-Z][a-zA-Z0-9-]*)(?=[\s>\/])/g, (_, name) => `<${name} data-k="${k++}"`);
}

const plan = [
  ...Array(8).fill("shop"),
  ...Array(8).fill("dashboard"),
  ...Array(8).fill("docs"),
  ...Array(8).fill("form"),
  ...Array(10).fill("widgets"),
  ...Array(6).fill("article"),
  ...Array(10).fill("mixed"),
  ...Array(4).fill("large"),
  ...Array(20).fill("tricky"),
];
plan.forEach((shape, i) => {
  r = rng(1000 + i);
  const dialog = chance(0.05) ? `<div role="dialog" aria-modal="true" aria-label="Offer"><p>${word()}</p><button>OK</button></div>` : "";
  const hiddenBody = chance(0.03) ? ' aria-hidden="true"' : "";
  const page = `${head()}<body${hiddenBody}>${shapes[shape]()}${dialog}</body></html>\n`;
  const name = `${String(i + 1).padStart(2, "0")}-${shape}.html`;
  writeFileSync(join(out, name), tag(page));
});
console.log(`${plan.length} pages in ${out}`);
