"""The official MCP Python SDK (`mcp` from PyPI) driving `fundi mcp --allow-writes`
against a fundi server A that knows another fundi, B, as peer "b": the setup report,
list and discover the peer, delegate to it, wait for the delegated task, a raw
read-only call on the peer's task, a push config set, listed and deleted on the peer's
task, a question answered through the tools, and a write call refused without writes.

Usage: mcp_peers.py A_URL FUNDI_BINARY, with FUNDI_TOKEN and FUNDI_USER_TOKEN set for A."""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

RESULTS = {"passed": 0, "failed": 0}
URL, FUNDI = sys.argv[1], sys.argv[2]


def check(name, condition, detail=""):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok: " if condition else "FAILED: ") + name + ("" if condition else f" {detail}"))


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


def data(result):
    return result.structured_content or {}


async def wait_until(session, task_id, states):
    for _ in range(40):
        waited = await session.call_tool("fundi_wait_for_task", {"taskId": task_id, "timeoutSeconds": 2})
        status = await session.call_tool("fundi_task_status", {"taskId": task_id})
        if any(s in text(status) for s in states):
            return status
    return status


async def main():
    params = StdioServerParameters(
        command=FUNDI, args=["mcp", "--url", URL, "--allow-writes"], env=dict(os.environ)
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            wanted = {"fundi_list_agents", "fundi_discover_agent", "fundi_send_message",
                      "fundi_request", "fundi_set_push_config", "fundi_delete_push_config",
                      "fundi_auth_status"}
            check("every peer tool is listed with writes on", wanted <= tools, sorted(tools))

            status = await session.call_tool("fundi_auth_status", {})
            said = text(status)
            check("auth status: server, credentials, peer b and writes",
                  "server: answers" in said and "credentials: set and accepted" in said
                  and "peer b: answers" in said and "writes: on" in said, said)

            listed = await session.call_tool("fundi_list_agents", {})
            check("list_agents names b with its card", "- b: fundi (skills:" in text(listed), text(listed))

            found = await session.call_tool("fundi_discover_agent", {"peer": "b"})
            check("discover_agent reads b's card", "echo" in text(found) and "called over JSONRPC" in text(found)
                  and "signature verified: true" in text(found), text(found))

            sent = await session.call_tool("fundi_send_message", {
                "peer": "b", "skill": "echo", "text": "through mcp", "data": {"steps": 2, "delayMs": 50}})
            task_id = data(sent).get("taskId") or data(sent).get("id")
            check("send_message returns the local task at once", bool(task_id) and "delegated to b" in text(sent), text(sent))
            done = await wait_until(session, task_id, ["completed", "failed"])
            check("the delegated task completes with b's echo", "completed" in text(done) and "through mcp" in text(done), text(done))

            raw = await session.call_tool("fundi_request", {"peer": "b", "method": "ListTasks", "params": {"pageSize": 5}})
            tasks = data(raw).get("tasks", [])
            check("request: ListTasks on b shows b's task", len(tasks) == 1, text(raw))

            b_task = tasks[0]["id"] if tasks else "none"
            refused = await session.call_tool("fundi_set_push_config", {
                "peer": "b", "taskId": b_task, "url": "http://127.0.0.1:9/hook", "confirm": False})
            check("set_push_config needs confirm", refused.is_error and "confirm" in text(refused), text(refused))
            pushed = await session.call_tool("fundi_set_push_config", {
                "peer": "b", "taskId": b_task, "url": "http://127.0.0.1:9/hook", "token": "t-1",
                "confirm": True})
            config_id = data(pushed).get("id")
            check("set_push_config makes a push config on b's task", not pushed.is_error and config_id, text(pushed))
            listed = await session.call_tool("fundi_request", {
                "peer": "b", "method": "ListTaskPushNotificationConfigs", "params": {"taskId": b_task}})
            check("request lists it", config_id and config_id in text(listed), text(listed))
            deleted = await session.call_tool("fundi_delete_push_config", {
                "peer": "b", "taskId": b_task, "configId": config_id or "", "confirm": True})
            check("delete_push_config removes it", not deleted.is_error, text(deleted))
            listed = await session.call_tool("fundi_request", {
                "peer": "b", "method": "ListTaskPushNotificationConfigs", "params": {"taskId": b_task}})
            check("and it is gone", config_id and config_id not in text(listed), text(listed))

            asked = await session.call_tool("fundi_send_message", {
                "peer": "b", "skill": "echo", "text": "x", "data": {"askInput": True}})
            asked_id = data(asked).get("taskId") or data(asked).get("id")
            waiting = await wait_until(session, asked_id, ["input_required", "input-required"])
            check("b's question shows on the local task", "What should I echo?" in text(waiting), text(waiting))
            await session.call_tool("fundi_send_message", {"taskId": asked_id, "text": "answered"})
            done = await wait_until(session, asked_id, ["completed", "failed"])
            check("the answer goes on to b and the task completes", "completed" in text(done) and "answered" in text(done), text(done))

            bad = await session.call_tool("fundi_request", {"peer": "b", "method": "SendMessage"})
            check("request refuses a method off its list", bad.is_error and "not one fundi_request sends" in text(bad), text(bad))
            unknown = await session.call_tool("fundi_discover_agent", {"peer": "nobody"})
            check("an unknown peer is named with the known ones", unknown.is_error and "known peers: b" in text(unknown), text(unknown))

    read_only = StdioServerParameters(command=FUNDI, args=["mcp", "--url", URL], env=dict(os.environ))
    async with stdio_client(read_only) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            refused = await session.call_tool("fundi_request", {"peer": "b", "method": "CancelTask", "params": {"id": "x"}})
            check("without writes, request refuses CancelTask", refused.is_error and "writes are not allowed" in text(refused), text(refused))

    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    sys.exit(1 if RESULTS["failed"] else 0)


asyncio.run(main())
