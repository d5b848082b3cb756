// Drives a fundi server with the official A2A JS SDK (@a2a-js/sdk 1.x) over the
// HTTP+JSON (REST) binding: the same scenarios as the Python SDK scripts.
//
// Usage: node a2a_js_rest.mjs BASE_URL (credentials in FUNDI_TOKEN, FUNDI_USER_TOKEN)
// Prints one line per check and a closing "N passed, N failed" line; exits non-zero on
// any failure.

import { createServer } from "node:http";
import { randomUUID } from "node:crypto";

import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from "@a2a-js/sdk/client";
import {
  SendMessageRequest,
  Task,
  TaskPushNotificationConfig,
  TaskStatusUpdateEvent,
} from "@a2a-js/sdk";
import { TaskNotCancelableError, TaskNotFoundError } from "@a2a-js/sdk/errors";

const DEADLINE_MS = 30_000;
const results = { passed: 0, failed: 0 };

function check(name, condition, detail = "") {
  if (condition) {
    results.passed += 1;
    console.log(`ok: ${name}`);
  } else {
    results.failed += 1;
    console.log(`FAILED: ${name} ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
  }
}

/** fetch with fundi's two credentials on every request (or none). */
function fetchWith(authenticated) {
  return (url, init = {}) => {
    const headers = new Headers(init.headers);
    if (authenticated) {
      headers.set("Authorization", `Bearer ${process.env.FUNDI_TOKEN}`);
      headers.set("X-Fundi-User-Token", process.env.FUNDI_USER_TOKEN);
    }
    return fetch(url, { ...init, headers });
  };
}

async function client(url, authenticated = true) {
  const fetchImpl = fetchWith(authenticated);
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
    preferredTransports: ["HTTP+JSON"],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return factory.createFromUrl(url);
}

/** The ProtoJSON of a task (states as names), for checks. */
const json = (task) => Task.toJSON(task);

/** The state a stream event ends in, by name ("" for other events). */
const endState = (event) =>
  event.payload?.$case === "statusUpdate"
    ? TaskStatusUpdateEvent.toJSON(event.payload.value).status.state
    : "";

function send(text, data, { taskId, returnImmediately = false, push } = {}) {
  const parts = [{ text }];
  if (data !== undefined) parts.push({ data });
  const message = { messageId: randomUUID(), role: "ROLE_USER", parts };
  if (taskId) message.taskId = taskId;
  const configuration = { returnImmediately };
  if (push) configuration.taskPushNotificationConfig = push;
  return SendMessageRequest.fromJSON({ message, configuration });
}

async function poll(a2a, id, states) {
  const deadline = Date.now() + DEADLINE_MS;
  while (Date.now() < deadline) {
    const task = json(await a2a.getTask({ id, historyLength: undefined, tenant: "" }));
    if (states.includes(task.status.state)) return task;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`task ${id} never reached ${states}`);
}

async function collect(stream) {
  const events = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** A webhook on 127.0.0.1 that records every POST as [headers, JSON body]. */
async function receiver() {
  const hits = [];
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      hits.push([request.headers, JSON.parse(body || "null")]);
      response.writeHead(200).end();
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}/hook`;
  const waitFor = async (done) => {
    const deadline = Date.now() + DEADLINE_MS;
    while (Date.now() < deadline) {
      if (done(hits)) return hits;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`the webhook never saw it; hits: ${JSON.stringify(hits)}`);
  };
  return { url, waitFor, close: () => server.close() };
}

async function main(url) {
  const a2a = await client(url);
  check("the client chose the HTTP+JSON binding", a2a.transport.protocolName === "HTTP+JSON");
  const card = a2a.agentCard;
  check(
    "the card lists the HTTP+JSON interface at the base URL",
    card.supportedInterfaces.some((i) => i.protocolBinding === "HTTP+JSON" && i.url === url),
    card.supportedInterfaces,
  );

  // Without credentials: refused with 401.
  const anonymous = await client(url, false);
  try {
    await anonymous.getTask({ id: "any", tenant: "" });
    check("a client without credentials is refused", false, "it was answered");
  } catch (error) {
    check("a client without credentials is refused with 401", error.statusCode === 401, String(error));
  }

  // Blocking send: the completed task with its artifact.
  let task = json(await a2a.sendMessage(send("hello rest")));
  check("blocking send completes", task.status.state === "TASK_STATE_COMPLETED", task.status);
  check("artifact carries the echo", task.artifacts[0].parts[0].text === "hello rest", task.artifacts);
  check("contextId is returned", Boolean(task.contextId));

  // Non-blocking send, then GetTask until done; historyLength trims.
  task = json(await a2a.sendMessage(send("later", { steps: 3, delayMs: 30 }, { returnImmediately: true })));
  check(
    "non-blocking send returns at once",
    ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"].includes(task.status.state),
    task.status,
  );
  const done = await poll(a2a, task.id, ["TASK_STATE_COMPLETED"]);
  check("get_task sees it complete", done.artifacts[0].parts[0].text === "later");
  const one = json(await a2a.getTask({ id: task.id, historyLength: 1, tenant: "" }));
  check("historyLength=1 returns one message", one.history.length === 1, one.history);

  // ListTasks: filter by context, page through.
  const listed = await a2a.listTasks({ contextId: done.contextId, tenant: "" });
  check("list filters by context", listed.tasks.map((t) => t.id).join() === task.id, listed);
  const page = await a2a.listTasks({ pageSize: 1, tenant: "" });
  check("list pages", page.tasks.length === 1 && page.nextPageToken !== "", page);
  const second = await a2a.listTasks({ pageSize: 1, pageToken: page.nextPageToken, tenant: "" });
  check("next page differs", second.tasks[0].id !== page.tasks[0].id);
  check("totalSize counts every task", page.totalSize >= 2, page.totalSize);

  // Streaming send: task first, progress, artifact, completed.
  const events = await collect(a2a.sendMessageStream(send("streamed", { steps: 3, delayMs: 20 })));
  const kinds = events.map((e) => e.payload?.$case);
  check("stream starts with the task", kinds[0] === "task", kinds);
  check("stream carries an artifact update", kinds.includes("artifactUpdate"), kinds);
  check("stream ends completed", endState(events.at(-1)) === "TASK_STATE_COMPLETED", kinds);
  const progress = events.filter((e) => e.payload?.$case === "statusUpdate" && e.payload.value.status?.message?.parts?.length);
  check("progress notes arrive", progress.length >= 3, progress.length);

  // Subscribe to a running task.
  const running = json(await a2a.sendMessage(send("watch me", { steps: 8, delayMs: 40 }, { returnImmediately: true })));
  const seen = await collect(a2a.resubscribeTask({ id: running.id, tenant: "" }));
  check("subscribe starts with the task", seen[0].payload?.$case === "task", seen[0]);
  check("subscribe ends completed", endState(seen.at(-1)) === "TASK_STATE_COMPLETED", seen.at(-1));

  // Cancel a running task; a second cancel is refused.
  const slow = json(await a2a.sendMessage(send("cancel me", { steps: 200, delayMs: 50 }, { returnImmediately: true })));
  await poll(a2a, slow.id, ["TASK_STATE_WORKING"]);
  const canceled = json(await a2a.cancelTask({ id: slow.id, tenant: "" }));
  check("cancel returns the canceled task", canceled.status.state === "TASK_STATE_CANCELED", canceled.status);
  try {
    await a2a.cancelTask({ id: slow.id, tenant: "" });
    check("second cancel is refused", false);
  } catch (error) {
    check("second cancel is refused", error instanceof TaskNotCancelableError, String(error));
  }

  // Unknown tasks.
  try {
    await a2a.getTask({ id: "no-such-task", tenant: "" });
    check("unknown task is not found", false);
  } catch (error) {
    check("unknown task is not found", error instanceof TaskNotFoundError, String(error));
  }

  // Multi-turn: input-required, then the answer.
  const asking = json(await a2a.sendMessage(send("ask", { askInput: true })));
  check("blocking send stops at input-required", asking.status.state === "TASK_STATE_INPUT_REQUIRED", asking.status);
  const answered = json(await a2a.sendMessage(send("forty-two", undefined, { taskId: asking.id })));
  check("the answer completes the task", answered.status.state === "TASK_STATE_COMPLETED", answered.status);
  check("the reply echoes the answer", answered.artifacts[0].parts[0].text === "forty-two", answered.artifacts);

  // A message to a working task: echo queues it (the acknowledged task holds it) and
  // echoes it before its next step, which a subscriber sees; the same message sent
  // again is a retry that gets the same task, delivered once.
  const busyRequest = send("busy", { steps: 20, delayMs: 50 }, { returnImmediately: true });
  const busy = json(await a2a.sendMessage(busyRequest));
  const watching = collect(a2a.resubscribeTask({ id: busy.id, tenant: "" }));
  const meanwhile = send("meanwhile", undefined, { taskId: busy.id, returnImmediately: true });
  const queued = json(await a2a.sendMessage(meanwhile));
  const userTexts = (task) =>
    task.history.filter((m) => m.role === "ROLE_USER").map((m) => m.parts[0].text);
  check("a message to a working task is acknowledged", queued.status.state === "TASK_STATE_WORKING", queued.status);
  check("it is in the task's history at once", userTexts(queued).includes("meanwhile"), userTexts(queued));
  const retried = json(await a2a.sendMessage(meanwhile));
  check("a retried message is delivered once", userTexts(retried).filter((t) => t === "meanwhile").length === 1, userTexts(retried));
  const again = json(await a2a.sendMessage(busyRequest));
  check("a retried first message gets its task", again.id === busy.id, again.id);
  const watched = await watching;
  const notes = watched
    .filter((e) => e.payload?.$case === "statusUpdate")
    .map((e) => TaskStatusUpdateEvent.toJSON(e.payload.value).status.message?.parts?.[0]?.text);
  check("a subscriber sees the skill take it", notes.includes("echo: meanwhile"), notes);
  check("the task completes", endState(watched.at(-1)) === "TASK_STATE_COMPLETED", watched.at(-1));

  // Push notifications: a config in the send, then the config routes.
  const hook = await receiver();
  const pushed = json(
    await a2a.sendMessage(send("pushed", { steps: 2 }, { push: { url: hook.url, token: "interop-token" } })),
  );
  const hits = await hook.waitFor((hits) =>
    hits.some(([, body]) => body?.statusUpdate?.status?.state === "TASK_STATE_COMPLETED"),
  );
  check("push: the first delivery is the task", hits[0][1]?.task?.id === pushed.id, hits[0]);
  check(
    "push: every delivery carries the token",
    hits.every(([headers]) => headers["x-a2a-notification-token"] === "interop-token"),
  );
  const created = await a2a.createTaskPushNotificationConfig(
    TaskPushNotificationConfig.fromJSON({ taskId: pushed.id, id: "second", url: hook.url }),
  );
  check("push: create returns the config", created.id === "second" && created.taskId === pushed.id, created);
  const got = await a2a.getTaskPushNotificationConfig({ taskId: pushed.id, id: "second", tenant: "" });
  check("push: get returns it", got.url === hook.url, got);
  let configs = await a2a.listTaskPushNotificationConfig({ taskId: pushed.id, tenant: "" });
  check("push: list has both configs", configs.configs.length === 2, configs);
  await a2a.deleteTaskPushNotificationConfig({ taskId: pushed.id, id: "second", tenant: "" });
  configs = await a2a.listTaskPushNotificationConfig({ taskId: pushed.id, tenant: "" });
  check("push: delete removes it", configs.configs.map((c) => c.id).join() === pushed.id, configs);
  hook.close();
}

try {
  await main(process.argv[2]);
} catch (error) {
  results.failed += 1;
  console.log(`FAILED: the script stopped: ${error?.stack ?? error}`);
}
console.log(`${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed ? 1 : 0);
