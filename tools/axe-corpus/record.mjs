// Records axe-core's verdicts on every page of the corpus, in Debian's Chromium
// (headless), for the rules fundi implements: per page and rule, the data-k of each
// violating node and of each node axe-core could not decide (incomplete).
//
//   node record.mjs [PAGES_DIR] [VERDICTS_FILE]
//
// RULES=all records every rule axe-core runs by default (the scripted corpus, which
// browser mode audits with axe-core itself); SETTLE_MS waits that long after the load
// event, for what the pages' scripts do then.
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

const require = createRequire(import.meta.url);
const corpus = resolve(process.argv[2] ?? "../../crates/skills/tests/fixtures/axe-corpus/pages");
const verdictsFile = resolve(process.argv[3] ?? "../../crates/skills/tests/fixtures/axe-corpus/verdicts.json");
const axePath = require.resolve("axe-core/axe.min.js");
const axeVersion = JSON.parse(readFileSync(require.resolve("axe-core/package.json"), "utf8")).version;

// fundi's rules, as its rule table names them.
const table = readFileSync("../../crates/skills/src/a11y/rules.rs", "utf8");
const allRules = process.env.RULES === "all";
const settle = Number(process.env.SETTLE_MS ?? 0);
let rules = [...table.matchAll(/rule!\(\s*"([a-z0-9-]+)"/g)].map((m) => m[1]);
const seen = new Set();

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
// The pages' images, frames and links go nowhere: nothing leaves the machine.
await context.route("**/*", (route) =>
  route.request().url().startsWith("file:") ? route.continue() : route.abort()
);
const key = (node) => {
  const found = /data-k="(\d+)"/.exec(node.html);
  return found ? Number(found[1]) : null;
};
const pages = {};
for (const name of readdirSync(corpus).filter((n) => n.endsWith(".html")).sort()) {
  const page = await context.newPage();
  await page.goto(`file://${join(corpus, name)}`, { waitUntil: "load" });
  if (settle > 0) await page.waitForTimeout(settle);
  await page.addScriptTag({ path: axePath });
  const results = await page.evaluate(
    ({ values, all }) =>
      globalThis.axe.run(document, {
        ...(all ? {} : { runOnly: { type: "rule", values } }),
        resultTypes: ["violations", "incomplete"],
      }),
    { values: rules, all: allRules }
  );
  for (const list of [results.violations, results.incomplete, results.passes, results.inapplicable]) {
    for (const rule of list) seen.add(rule.id);
  }
  const verdict = {};
  for (const [kind, list] of [["violations", results.violations], ["incomplete", results.incomplete]]) {
    for (const rule of list) {
      verdict[rule.id] ??= { violations: [], incomplete: [] };
      verdict[rule.id][kind] = rule.nodes.map(key).filter((k) => k !== null).sort((a, b) => a - b);
    }
  }
  pages[name] = verdict;
  await page.close();
}
await browser.close();
if (allRules) rules = [...seen].sort();
const sorted = Object.fromEntries(Object.entries(pages).sort());
writeFileSync(
  verdictsFile,
  JSON.stringify({ axeCore: axeVersion, browser: "Debian chromium, headless, 1280x800", rules, pages: sorted }, null, 1) + "\n"
);
console.log(`axe-core ${axeVersion}: ${Object.keys(pages).length} pages, ${rules.length} rules -> ${verdictsFile}`);
