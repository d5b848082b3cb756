// Writes the corpus of pages whose content or styles come from their scripts, for
// a11y-audit's browser mode: what a parser of the HTML as served cannot see (a
// client-rendered list, a dialog opened on load, styles set by script, lazy images, a
// shadow-DOM widget, a client-side route, ...), with defects and without. Every element,
// those the scripts create included, carries `data-k` (the page's script strings are
// tagged too), by which nodes are matched. The pages need no network: their data is in
// their scripts. Each script's work is done within 100 ms of the load event.
//
//   node scripted.mjs [OUT_DIR]
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const out = resolve(process.argv[2] ?? "../../crates/skills/tests/fixtures/axe-corpus/scripted/pages");

const page = (title, body, lang = "en") =>
  `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><title>${title}</title></head>` +
  `<body>${body}</body></html>`;
const script = (code) => `<script>${code}</script>`;

const pages = {
  "01-list-rendered": page("Shop", `<main><h1>Shop</h1><ul id="list"></ul></main>` + script(`
    const items = ['tea', 'cake', 'jam'];
    document.getElementById('list').innerHTML = items.map((i, n) =>
      n === 1 ? '<li><img src="/i.png"> ' + i + '</li>' : '<li><img src="/i.png" alt="' + i + '"> ' + i + '</li>').join('');`)),
  "02-list-rendered-clean": page("Shop", `<main><h1>Shop</h1><ul id="list"></ul></main>` + script(`
    document.getElementById('list').innerHTML = ['tea', 'cake'].map((i) => '<li><a href="/' + i + '">' + i + '</a></li>').join('');`)),
  "03-dialog-on-load": page("Welcome", `<main><h1>Welcome</h1></main>` + script(`
    window.addEventListener('load', () => {
      document.body.insertAdjacentHTML('beforeend',
        '<div role="dialog" aria-modal="true"><p>Subscribe?</p><button></button><input type="email"></div>');
    });`)),
  "04-dialog-named": page("Welcome", `<main><h1>Welcome</h1></main>` + script(`
    window.addEventListener('load', () => {
      document.body.insertAdjacentHTML('beforeend',
        '<div role="dialog" aria-modal="true" aria-label="Newsletter"><label>Email <input type="email"></label><button>Close</button></div>');
    });`)),
  "05-contrast-by-script": page("Prices", `<main><h1>Prices</h1><p id="a">Tea costs two.</p><p id="b">Cake costs three.</p></main>` + script(`
    document.getElementById('a').style.color = '#bbbbbb';
    document.getElementById('b').style.color = '#222222';`)),
  "06-theme-by-script": page("Theme", `<main><h1>Theme</h1><p>Plain words on the page.</p><a href="/more">More</a></main>` + script(`
    document.body.style.background = '#ffffff';
    document.querySelectorAll('p, a').forEach((e) => { e.style.color = '#c8c8c8'; });`)),
  "07-lazy-images": page("Gallery", `<main><h1>Gallery</h1><img data-src="/a.png" alt="A cat"><img data-src="/b.png"></main>` + script(`
    document.querySelectorAll('img[data-src]').forEach((img) => { img.src = img.dataset.src; });`)),
  "08-lazy-on-idle": page("Gallery", `<main><h1>Gallery</h1><div id="more"></div></main>` + script(`
    setTimeout(() => { document.getElementById('more').innerHTML = '<img src="/c.png"><img src="/d.png" alt="">'; }, 50);`)),
  "09-shadow-widget": page("Widget", `<main><h1>Widget</h1><div id="host"></div></main>` + script(`
    const root = document.getElementById('host').attachShadow({ mode: 'open' });
    root.innerHTML = '<button></button><img src="/x.png"><a href="/y">Yes</a>';`)),
  "10-shadow-named": page("Widget", `<main><h1>Widget</h1><div id="host"></div></main>` + script(`
    const root = document.getElementById('host').attachShadow({ mode: 'open' });
    root.innerHTML = '<button>Buy</button><img src="/x.png" alt="Basket">';`)),
  "11-custom-element": page("Rating", `<main><h1>Rating</h1><star-rating></star-rating></main>` + script(`
    customElements.define('star-rating', class extends HTMLElement {
      connectedCallback() { this.innerHTML = '<span role="slider"></span><input type="range">'; }
    });`)),
  "12-form-built": page("Sign up", `<main><h1>Sign up</h1><form id="f"></form></main>` + script(`
    const f = document.getElementById('f');
    f.innerHTML = '<label for="n">Name</label><input id="n"><input type="password"><select><option>a</option></select><button type="submit">Send</button>';`)),
  "13-aria-by-script": page("Menu", `<main><h1>Menu</h1><div id="m">Open</div><ul id="list"><li>One</li></ul></main>` + script(`
    const m = document.getElementById('m');
    m.setAttribute('role', 'button');
    m.setAttribute('aria-expanded', 'maybe');
    document.getElementById('list').setAttribute('role', 'menu');`)),
  "14-removed-defect": page("Clean up", `<main><h1>Clean up</h1><div id="old"><img src="/old.png"></div><p>Kept.</p></main>` + script(`
    document.getElementById('old').remove();`)),
  "15-hidden-by-script": page("Tabs", `<main><h1>Tabs</h1><div id="t1"><button></button></div><div id="t2"><p>Second tab.</p></div></main>` + script(`
    document.getElementById('t1').style.display = 'none';`)),
  "16-shown-by-script": page("Tabs", `<main><h1>Tabs</h1><div id="t1" hidden><button></button><img src="/q.png"></div></main>` + script(`
    document.getElementById('t1').hidden = false;`)),
  "17-route-pushstate": page("App", `<main><h1 id="h">App</h1><div id="view"></div></main>` + script(`
    history.pushState({}, '', '#/settings');
    document.getElementById('h').textContent = 'Settings';
    document.getElementById('view').innerHTML = '<input type="checkbox"><a href="#/"></a>';`)),
  "18-table-rendered": page("Orders", `<main><h1>Orders</h1><div id="t"></div></main>` + script(`
    const rows = [['Tea', '2'], ['Cake', '3']];
    document.getElementById('t').innerHTML = '<table><tr><th>Item</th><th></th></tr>' +
      rows.map((r) => '<tr><td>' + r[0] + '</td><td>' + r[1] + '</td></tr>').join('') + '</table>';`)),
  "19-template-cloned": page("Cards", `<main><h1>Cards</h1><template id="card"><article><h2>Card</h2><img src="/p.png"></article></template><div id="c"></div></main>` + script(`
    const t = document.getElementById('card');
    for (const n of [1, 2]) document.getElementById('c').appendChild(t.content.cloneNode(true));`)),
  "20-title-and-lang-by-script": page("", `<main><h1>Hello</h1><p>Words.</p></main>` + script(`
    document.title = 'Set by script';
    document.documentElement.setAttribute('lang', 'xx-invalid-');`)),
  "21-raf-render": page("Feed", `<main><h1>Feed</h1><div id="feed"></div></main>` + script(`
    requestAnimationFrame(() => {
      document.getElementById('feed').innerHTML = '<a href="/1"><img src="/1.png"></a><a href="/2">Second</a>';
    });`)),
  "22-duplicate-ids-by-script": page("Ids", `<main><h1>Ids</h1><div id="box"></div></main>` + script(`
    document.getElementById('box').innerHTML = '<label for="q">Search</label><input id="q"><input id="q" aria-label="Again">';`)),
  "23-iframe-srcdoc": page("Frame", `<main><h1>Frame</h1><div id="f"></div></main>` + script(`
    const frame = document.createElement('iframe');
    frame.srcdoc = '<p>framed</p>';
    document.getElementById('f').appendChild(frame);`)),
  "24-landmarks-by-script": page("Layout", `<div id="top">Top</div><div id="c"><h1>Layout</h1><p>Body text.</p></div>` + script(`
    document.getElementById('top').setAttribute('role', 'banner');
    document.getElementById('c').setAttribute('role', 'main');`)),
};

// Every element gets data-k, first among its attributes: in the markup and in the
// scripts' HTML strings alike.
let k = 0;
const tag = (html) =>
  html.replace(/<([a-zA-Z][a-zA-Z0-9-]*)(?=[\s>\/])/g, (_, name) => `<${name} data-k="${k++}"`);

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
for (const [name, html] of Object.entries(pages)) {
  writeFileSync(join(out, `${name}.html`), tag(html) + "\n");
}
console.log(`${Object.keys(pages).length} pages -> ${out}`);
