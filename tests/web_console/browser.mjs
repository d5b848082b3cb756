// The web console in a real browser: Debian's Chromium, headless, driven by
// playwright-core. Run by tests/web_console.rs, which starts fundi, makes the tasks and
// passes what it made in FUNDI_CONSOLE_TEST (JSON). Prints one line per check and
// "N passed, M failed"; exits non-zero when any check fails.
import { chromium } from "playwright-core";

const given = JSON.parse(process.env.FUNDI_CONSOLE_TEST);
const deadline = 30_000;
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

async function shot(page, name) {
  if (given.screenshots) {
    await page.screenshot({ path: `${given.screenshots}/${name}.png`, fullPage: true });
  }
}

/// A JSON-RPC call to fundi as Alice, through the API rather than the console.
async function rpc(method, params) {
  const response = await fetch(`${given.url}/a2a`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${given.token}`,
      [given.userHeader]: given.userToken,
      "A2A-Version": "1.0",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return response.json();
}

const browser = await chromium.launch({
  executablePath: given.chromium,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
  ],
});
const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
const page = await context.newPage();
page.setDefaultTimeout(deadline);

await check("a sign-in link names Alice's account, and continuing signs her in", async () => {
  await page.goto(given.link);
  const asked = await page.textContent("main");
  expect(asked.includes("as alice"), asked);
  await shot(page, "sign-in");
  await page.click("button[type=submit]");
  await page.waitForURL("**/console/tasks");
  expect(new URL(page.url()).pathname === "/console/tasks", `landed on ${page.url()}`);
  const who = await page.textContent("form.who");
  expect(who.includes("Signed in as alice"), who);
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === "fundi_console");
  expect(session && session.httpOnly && session.sameSite === "Strict", JSON.stringify(cookies));
  const readable = await page.evaluate(() => document.cookie);
  expect(!readable.includes("fundi_console"), "scripts can read the session cookie");
  await shot(page, "tasks");
});

await check("the same link does not sign in twice", async () => {
  const other = await browser.newContext();
  const second = await other.newPage();
  const response = await second.goto(given.link);
  expect(response.status() === 401, `status ${response.status()}`);
  await other.close();
});

await check("the tasks page counts tasks by state", async () => {
  await page.goto(`${given.url}/console/tasks`);
  const waiting = await page.textContent('[data-count="input-required"]');
  expect(Number(waiting) >= 1, `input-required count ${waiting}`);
});

await check("a task's progress appears as it happens, without reloading", async () => {
  await page.goto(`${given.url}/console/tasks/${given.live}`);
  await page.evaluate(() => { window.stillTheSamePage = true; });
  const before = await page.textContent("#status");
  expect(before.includes("input required"), before);
  const entriesBefore = await page.locator("#timeline li").count();
  // Alice answers through the API; the page learns of it from its event stream.
  const answered = await rpc("SendMessage", {
    message: { messageId: `browser-${Date.now()}`, role: "ROLE_USER", taskId: given.live,
               parts: [{ text: "hello from the browser test" }] },
    configuration: { returnImmediately: true },
  });
  expect(!answered.error, JSON.stringify(answered));
  await page.locator("#status .badge.completed").waitFor();
  await page.locator("#actions button").waitFor({ state: "detached" });
  const entriesAfter = await page.locator("#timeline li").count();
  expect(entriesAfter >= entriesBefore + 5, `${entriesBefore} entries, then ${entriesAfter}`);
  const steps = await page.locator("#timeline li", { hasText: "working" }).count();
  expect(steps >= 5, `${steps} working entries`);
  const artifacts = await page.textContent("#artifacts");
  expect(artifacts.includes("hello from the browser test"), artifacts);
  expect(await page.evaluate(() => window.stillTheSamePage === true), "the page was reloaded");
  await shot(page, "task");
});

await check("another user's task is refused", async () => {
  const response = await page.goto(`${given.url}/console/tasks/${given.bobs}`);
  expect(response.status() === 404, `status ${response.status()}`);
  const text = await page.textContent("main");
  expect(text.includes("Not found"), text);
  expect(!text.includes("release check"), "the page shows Bob's task");
});

await check("the accessibility report reads as a table grouped by impact", async () => {
  await page.goto(`${given.url}/console/tasks/${given.audit}`);
  const report = await page.textContent("#artifact-a11y-report");
  expect(report.includes("Critical") || report.includes("Serious"), report);
  expect((await page.locator("#artifact-a11y-report pre.snippet").count()) >= 1, "no snippet");
  await shot(page, "a11y-report");
});

await check("a heal diff reads highlighted", async () => {
  await page.goto(`${given.url}/console/tasks/${given.heal}`);
  const added = await page.textContent("#artifact-heal-diff .line.add");
  expect(added.includes('lang="en"'), added);
  expect((await page.locator("#artifact-heal-diff .line.del").count()) >= 1, "no removed line");
  expect((await page.locator("#artifact-heal-diff .str").count()) >= 1, "no highlighted string");
  await shot(page, "heal-diff");
});

await check("a gated task is approved with the keyboard alone", async () => {
  await page.goto(`${given.url}/console/approvals`);
  const listed = await page.textContent("main");
  expect(listed.includes("release check"), listed);
  await shot(page, "approvals");
  await page.keyboard.press("Tab");
  const first = await page.evaluate(() => document.activeElement.textContent);
  expect(first === "Skip to content", `first stop: ${first}`);
  await page.keyboard.press("Enter");
  let reached = false;
  for (let i = 0; i < 60 && !reached; i += 1) {
    await page.keyboard.press("Tab");
    reached = await page.evaluate(() =>
      document.activeElement.tagName === "BUTTON" && document.activeElement.textContent === "Approve");
  }
  expect(reached, "Tab never reached the Approve button");
  await Promise.all([page.waitForURL(`${given.url}/console/approvals`), page.keyboard.press("Enter")]);
  const after = await page.textContent("main");
  expect(!after.includes("release check"), after);
  // The heal's proposed fix waits on the same page, its diff beside its buttons.
  expect(after.includes("A fix proposed by heal-issue"), after);
  expect((await page.locator("article.approval pre, article.approval table").count()) >= 1, "no diff shown");
});

await check("a form posted from another origin is refused, even with the CSRF token", async () => {
  await page.goto(`${given.url}/console/tasks`);
  const csrf = await page.getAttribute('form.who input[name="csrf"]', "value");
  await page.goto(given.foreign);
  await page.fill("#csrf", csrf);
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith("/console/sign-out")),
    page.click("button"),
  ]);
  expect(response.status() === 403, `status ${response.status()}`);
  await page.goto(`${given.url}/console/tasks`);
  const who = await page.textContent("form.who");
  expect(who.includes("Signed in as alice"), "the session ended");
});

await check("signing out ends the session", async () => {
  await page.goto(`${given.url}/console/tasks`);
  await Promise.all([page.waitForURL(`${given.url}/console/sign-out`), page.click("form.who button")]);
  expect((await page.textContent("main")).includes("You are signed out"), "no sign-out page");
  const response = await page.goto(`${given.url}/console/tasks`);
  expect(response.status() === 401, `status ${response.status()}`);
});

await browser.close();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
