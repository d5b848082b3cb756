// Requests for access decided in a real browser: Debian's Chromium, headless, driven by
// playwright-core. Run by tests/access_console.rs, which starts fundi, makes two
// requests for access and passes them in FUNDI_CONSOLE_TEST (JSON). Prints one line per
// check and "N passed, M failed"; exits non-zero when any check fails.
import { chromium } from "playwright-core";

const given = JSON.parse(process.env.FUNDI_CONSOLE_TEST);
let passed = 0;
let failed = 0;

async function check(name, body) {
  try {
    await body();
    passed += 1;
    console.log(`ok: ${name}`);
  } catch (error) {
    failed += 1;
    console.log(`FAILED: ${name}: ${error.stack || error}`);
  }
}

function expect(condition, what) {
  if (!condition) {
    throw new Error(what);
  }
}

const browser = await chromium.launch({
  executablePath: given.chromium,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
});
const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
const page = await context.newPage();
page.setDefaultTimeout(30_000);

await check("an approver signs in and finds the requests under Access", async () => {
  await page.goto(given.link);
  await page.click("button[type=submit]");
  await page.waitForURL("**/console/tasks");
  await page.getByRole("link", { name: "Access" }).click();
  await page.waitForURL("**/console/access-requests");
  const heading = await page.textContent("h1");
  expect(heading.includes("Requests for access"), heading);
});

await check("each request says who asks, which agent, whether its card verified, why and what", async () => {
  const approve = page.locator("article", { hasText: given.approve });
  const text = await approve.textContent();
  expect(text.includes("agent-b") && text.includes("acme"), text);
  expect(text.includes(given.card), text);
  expect(text.includes("verified against keys on the card's own origin"), text);
  expect(text.includes("fundi:audit") && text.includes("fundi:security"), text);
  expect(text.includes("nightly audits"), text);
});

await check("approving narrowed, with the keyboard, vends only what is left", async () => {
  const approve = page.locator("article", { hasText: given.approve });
  const scopes = approve.getByLabel("Scopes to grant");
  await scopes.fill("fundi:audit");
  await approve.getByLabel("Grant expires after").fill("30d");
  await approve.getByLabel("Grant expires after").press("Enter");
  await page.waitForURL("**/console/access-requests");
  const left = await page.textContent("main");
  expect(!left.includes(given.approve), "the approved request is still listed");
  expect(left.includes(given.reject), "the other request is gone");
});

await check("rejecting needs a reason, and says it to the requester", async () => {
  const reject = page.locator("article", { hasText: given.reject });
  await reject.getByLabel("Reason for rejecting").fill("we do not know this agent");
  await reject.getByRole("button", { name: "Reject" }).click();
  await page.waitForURL("**/console/access-requests");
  const left = await page.textContent("main");
  expect(left.includes("No request for access waits for you to decide."), left);
});

await browser.close();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
