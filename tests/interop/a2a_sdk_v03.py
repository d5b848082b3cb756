"""Drives a fundi server with the official A2A Python SDK 0.3.x client (A2A v0.3:
message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe), over JSON-RPC
or over v0.3's HTTP+JSON routes (`/v1/...`).

Usage: python a2a_sdk_v03.py BASE_URL [JSONRPC|HTTP+JSON]
Prints one line per check and a closing "N passed, N failed" line; exits non-zero on
any failure.
"""

import asyncio
import sys
import time
import uuid

import httpx

from a2a.client import ClientConfig, ClientFactory
from a2a.client.errors import A2AClientHTTPError, A2AClientJSONRPCError
from a2a.types import (
    AgentCard,
    DataPart,
    GetTaskPushNotificationConfigParams,
    PushNotificationConfig,
    TaskPushNotificationConfig,
    Message,
    MessageSendConfiguration,
    Part,
    Role,
    Task,
    TaskIdParams,
    TaskQueryParams,
    TaskState,
    TextPart,
)

from checks import DEADLINE_S, WebhookReceiver, check, http_client, run  # this folder


def message(text, data=None, task_id=None):
    parts = [Part(root=TextPart(text=text))]
    if data is not None:
        parts.append(Part(root=DataPart(data=data)))
    return Message(message_id=str(uuid.uuid4()), role=Role.user, parts=parts, task_id=task_id)


async def final_task(client, msg, configuration=None):
    task = None
    async for event in client.send_message(msg, configuration=configuration):
        if isinstance(event, tuple):
            task = event[0]
        elif isinstance(event, Task):
            task = event
    return task


async def poll(client, task_id, states):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        task = await client.get_task(TaskQueryParams(id=task_id))
        if task.status.state in states:
            return task
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} never reached {states}")


def refused(error, code, status):
    """Whether `error` is the JSON-RPC error `code`, or over REST the HTTP `status`."""
    if isinstance(error, A2AClientJSONRPCError):
        return error.error.code == code
    return isinstance(error, A2AClientHTTPError) and error.status_code == status


async def check_cards(url):
    """The v0.3 card is a valid v0.3 AgentCard with no field the v0.3 model does not
    know (the model is generated from v0.3's JSON schema); the unversioned card reads as
    v0.3 too."""
    async with httpx.AsyncClient() as http:
        strict = (await http.get(f"{url}/.well-known/agent-card.json",
                                 headers={"A2A-Version": "0.3"})).json()
        unversioned = (await http.get(f"{url}/.well-known/agent-card.json")).json()
        older = (await http.get(f"{url}/.well-known/agent.json")).json()
    card = AgentCard.model_validate(strict)
    again = card.model_dump(mode="json", by_alias=True, exclude_unset=True)
    check("the v0.3 card is a valid v0.3 AgentCard, with no other fields", again == strict,
          {k: v for k, v in strict.items() if again.get(k) != v})
    check("the older path serves the v0.3 card", older == strict)
    scheme = card.security_schemes["userToken"].root
    check("the v0.3 card's API key says where it goes", scheme.in_.value == "header", scheme)
    read = AgentCard.model_validate(unversioned)
    check("the unversioned card reads as v0.3", read.url == card.url and read.skills == card.skills)


async def main(url, transport="JSONRPC"):
    await check_cards(url)

    def config(streaming, authenticated=True):
        return ClientConfig(
            streaming=streaming,
            httpx_client=http_client(authenticated),
            supported_transports=[transport],
        )

    blocking = await ClientFactory.connect(url, client_config=config(streaming=False))
    streaming = await ClientFactory.connect(url, client_config=config(streaming=True))
    anonymous = await ClientFactory.connect(
        url, client_config=config(streaming=False, authenticated=False)
    )
    spoken = type(blocking._transport).__name__
    expected = {"JSONRPC": "JsonRpcTransport", "HTTP+JSON": "RestTransport"}[transport]
    check(f"the client speaks v0.3 over {transport}", spoken == expected, spoken)
    try:
        await anonymous.get_task(TaskQueryParams(id="any"))
        check("a client without credentials is refused", False, "it was answered")
    except Exception as error:  # the SDK's HTTP error type differs across versions
        check("a client without credentials is refused with 401", "401" in str(error), repr(error))

    task = await final_task(blocking, message("hello v03"))
    check("message/send completes", task.status.state == TaskState.completed, task.status)
    check("artifact text", task.artifacts[0].parts[0].root.text == "hello v03", task.artifacts)

    later = await final_task(
        blocking,
        message("later", {"steps": 3, "delayMs": 30}),
        MessageSendConfiguration(blocking=False),
    )
    check("blocking=false returns at once", later.status.state in (TaskState.submitted, TaskState.working))
    done = await poll(blocking, later.id, [TaskState.completed])
    check("tasks/get sees it complete", done.artifacts[0].parts[0].root.text == "later")
    one = await blocking.get_task(TaskQueryParams(id=later.id, history_length=1))
    check("historyLength=1", len(one.history) == 1, one.history)

    updates = []
    async for event in streaming.send_message(message("streamed", {"steps": 3, "delayMs": 20})):
        updates.append(event)
    last_task, last_update = updates[-1]
    check("message/stream ends completed", last_task.status.state == TaskState.completed)
    check("last update is final", last_update is not None and getattr(last_update, "final", False), last_update)
    check("stream assembled the artifact", last_task.artifacts[0].parts[0].root.text == "streamed")

    running = await final_task(
        blocking,
        message("watch me", {"steps": 8, "delayMs": 40}),
        MessageSendConfiguration(blocking=False),
    )
    seen = [e async for e in streaming.resubscribe(TaskIdParams(id=running.id))]
    check("tasks/resubscribe follows to the end", seen[-1][0].status.state == TaskState.completed)

    slow = await final_task(
        blocking,
        message("cancel me", {"steps": 200, "delayMs": 50}),
        MessageSendConfiguration(blocking=False),
    )
    await poll(blocking, slow.id, [TaskState.working])
    canceled = await blocking.cancel_task(TaskIdParams(id=slow.id))
    check("tasks/cancel returns canceled", canceled.status.state == TaskState.canceled)
    try:
        await blocking.cancel_task(TaskIdParams(id=slow.id))
        check("second cancel is refused (-32002, HTTP 400)", False)
    except (A2AClientJSONRPCError, A2AClientHTTPError) as error:
        check("second cancel is refused (-32002, HTTP 400)", refused(error, -32002, 400), error)

    try:
        await blocking.get_task(TaskQueryParams(id="no-such-task"))
        check("unknown task is not found (-32001, HTTP 404)", False)
    except (A2AClientJSONRPCError, A2AClientHTTPError) as error:
        check("unknown task is not found (-32001, HTTP 404)", refused(error, -32001, 404), error)

    asking = await final_task(blocking, message("ask", {"askInput": True}))
    check("stops at input-required", asking.status.state == TaskState.input_required)
    answered = await final_task(blocking, message("forty-two", task_id=asking.id))
    check("answer completes", answered.status.state == TaskState.completed)

    # Push notifications: v0.3 bodies are the task itself.
    receiver = WebhookReceiver()
    if transport == "JSONRPC":
        pushed = await final_task(
            blocking,
            message("pushed", {"steps": 2}),
            MessageSendConfiguration(
                push_notification_config=PushNotificationConfig(url=receiver.url, token="v03-token")
            ),
        )
    else:
        # The 0.3 SDK's REST transport cannot send a config with a message (it passes
        # the config on as a dict and fails before sending), so the config is set on
        # the running task instead.
        pushed = await final_task(
            blocking,
            message("pushed", {"steps": 5, "delayMs": 100}),
            MessageSendConfiguration(blocking=False),
        )
        await blocking.set_task_callback(
            TaskPushNotificationConfig(
                task_id=pushed.id,
                push_notification_config=PushNotificationConfig(
                    id="first", url=receiver.url, token="v03-token"
                ),
            )
        )
    hits = await receiver.wait_for(
        lambda hits: any(
            body.get("kind") == "task" and body.get("status", {}).get("state") == "completed"
            for _, body in hits
        )
    )
    check("push: v0.3 bodies are tasks", all(body.get("kind") == "task" for _, body in hits), hits[0])
    check(
        "push: the token is sent",
        all(headers.get("x-a2a-notification-token") == "v03-token" for headers, _ in hits),
    )
    config = await blocking.set_task_callback(
        TaskPushNotificationConfig(
            task_id=pushed.id,
            push_notification_config=PushNotificationConfig(id="second", url=receiver.url),
        )
    )
    check("push: set returns the config", config.push_notification_config.id == "second", config)
    got = await blocking.get_task_callback(
        GetTaskPushNotificationConfigParams(id=pushed.id, push_notification_config_id="second")
    )
    check("push: get returns it", got.push_notification_config.url == receiver.url, got)


if __name__ == "__main__":
    run(main, *sys.argv[2:])
