"""Drives a fundi server with the official A2A Python SDK 1.x client (A2A v1.0), over
the JSON-RPC binding, the HTTP+JSON (REST) one, or gRPC (`a2a-sdk[grpc]`, dialling the
address the card lists).

Usage: python a2a_sdk_v1.py BASE_URL [JSONRPC|HTTP+JSON|GRPC]
Prints one line per check and a closing "N passed, N failed" line; exits non-zero on
any failure.
"""

import asyncio
import sys
import time
import uuid

import grpc
import httpx

from google.protobuf import json_format

from a2a.client import ClientConfig, create_client
from a2a.client.card_resolver import parse_agent_card
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    TaskPushNotificationConfig,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError

from checks import DEADLINE_S, WebhookReceiver, check, credentials, http_client, run  # this folder


class Credentials:
    """Puts fundi's two credentials in a gRPC call's metadata."""

    def __init__(self, authenticated):
        self.metadata = [(k.lower(), v) for k, v in credentials(authenticated).items()]

    def _with(self, details):
        metadata = grpc.aio.Metadata(*(details.metadata or []), *self.metadata)
        return details._replace(metadata=metadata)


# grpc.aio files an interceptor under the first kind it is (unary-unary before
# unary-stream), so each kind is a class of its own.
class UnaryCredentials(Credentials, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation, details, request):
        return await continuation(self._with(details), request)


class StreamCredentials(Credentials, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation, details, request):
        return await continuation(self._with(details), request)


def grpc_channels(authenticated):
    """The channel factory the SDK calls with the card's gRPC address."""
    return lambda target: grpc.aio.insecure_channel(
        target,
        interceptors=[UnaryCredentials(authenticated), StreamCredentials(authenticated)],
    )


def message(text, data=None, task_id=None):
    parts = [{"text": text}]
    if data is not None:
        parts.append({"data": data})
    body = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": parts}
    if task_id:
        body["taskId"] = task_id
    return json_format.ParseDict(body, Message())


def send(msg, return_immediately=False):
    return SendMessageRequest(
        message=msg,
        configuration=SendMessageConfiguration(return_immediately=return_immediately),
    )


async def last_task(client, request):
    task = None
    async for event in client.send_message(request):
        if event.HasField("task"):
            task = event.task
    return task


async def collect(stream):
    return [event async for event in stream]


async def poll(client, task_id, states):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        task = await client.get_task(GetTaskRequest(id=task_id))
        if task.status.state in states:
            return task
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} never reached {states}")


async def check_cards(url):
    """The v1.0 card is valid against the proto (unknown fields refused); the card a
    client gets when it names no version reads as v1.0 with the v1.0 interfaces."""
    async with httpx.AsyncClient() as http:
        strict = (await http.get(f"{url}/.well-known/agent-card.json",
                                 headers={"A2A-Version": "1.0"})).json()
        unversioned = (await http.get(f"{url}/.well-known/agent-card.json")).json()
    try:
        json_format.ParseDict(strict, AgentCard())  # no ignore_unknown_fields: strict
        check("the v1.0 card is a valid v1.0 AgentCard, with no other fields", True)
    except json_format.ParseError as error:
        check("the v1.0 card is a valid v1.0 AgentCard, with no other fields", False, error)
    card = parse_agent_card(unversioned)
    bindings = [(i.protocol_binding, i.protocol_version) for i in card.supported_interfaces]
    check(
        "the unversioned card lists the v1.0 interfaces first",
        bindings[:2] == [("JSONRPC", "1.0"), ("HTTP+JSON", "1.0")],
        bindings,
    )
    check(
        "the unversioned card's schemes read as v1.0",
        card.security_schemes["userToken"].api_key_security_scheme.location == "header",
        card.security_schemes,
    )


async def main(url, binding="JSONRPC"):
    await check_cards(url)

    def config(streaming, authenticated=True):
        return ClientConfig(
            streaming=streaming,
            httpx_client=http_client(authenticated),
            grpc_channel_factory=grpc_channels(authenticated),
            supported_protocol_bindings=[binding],
        )

    blocking = await create_client(url, config(streaming=False))
    streaming = await create_client(url, config(streaming=True))
    transport = type(blocking._transport).__name__
    expected = {
        "JSONRPC": "JsonRpcTransport",
        "HTTP+JSON": "RestTransport",
        "GRPC": "GrpcTransport",
    }[binding]
    check(f"the client speaks v1.0 over {binding}", transport == expected, transport)

    # The card declares both credentials; a client without them is refused with 401.
    anonymous = await create_client(url, config(streaming=False, authenticated=False))
    try:
        await anonymous.get_task(GetTaskRequest(id="any"))
        check("a client without credentials is refused", False, "it was answered")
    except Exception as error:  # the SDK's HTTP error type differs across versions
        refusal = "UNAUTHENTICATED" if binding == "GRPC" else "401"
        check(
            f"a client without credentials is refused with {refusal}",
            refusal in str(error),
            repr(error),
        )

    # Blocking send: the completed task with its artifact.
    task = await last_task(blocking, send(message("hello v1")))
    check("blocking send completes", task.status.state == TaskState.TASK_STATE_COMPLETED, task)
    check("artifact carries the echo", task.artifacts[0].parts[0].text == "hello v1", task)
    check("contextId is returned", bool(task.context_id))

    # Non-blocking send, then GetTask until done; historyLength trims.
    task = await last_task(
        blocking, send(message("later", {"steps": 3, "delayMs": 30}), return_immediately=True)
    )
    check(
        "non-blocking send returns at once",
        task.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING),
        task.status,
    )
    done = await poll(blocking, task.id, [TaskState.TASK_STATE_COMPLETED])
    check("get_task sees it complete", done.artifacts[0].parts[0].text == "later")
    one = await blocking.get_task(GetTaskRequest(id=task.id, history_length=1))
    check("historyLength=1 returns one message", len(one.history) == 1, one.history)

    # ListTasks: filter by context, page through.
    context = done.context_id
    listed = await blocking.list_tasks(ListTasksRequest(context_id=context))
    check("list filters by context", [t.id for t in listed.tasks] == [task.id], listed)
    page = await blocking.list_tasks(ListTasksRequest(page_size=1))
    check("list pages", page.page_size == 1 and page.next_page_token != "", page)
    second = await blocking.list_tasks(ListTasksRequest(page_size=1, page_token=page.next_page_token))
    check("next page differs", second.tasks[0].id != page.tasks[0].id)
    check("totalSize counts every task", page.total_size >= 2, page.total_size)

    # Streaming send: task first, progress, artifact, completed.
    events = [e async for e in streaming.send_message(send(message("streamed", {"steps": 3, "delayMs": 20})))]
    kinds = [e.WhichOneof("payload") for e in events]
    check("stream starts with the task", kinds[0] == "task", kinds)
    check("stream carries an artifact update", "artifact_update" in kinds, kinds)
    final = events[-1]
    check(
        "stream ends completed",
        final.HasField("status_update")
        and final.status_update.status.state == TaskState.TASK_STATE_COMPLETED,
        final,
    )
    progress = [
        e for e in events
        if e.HasField("status_update") and e.status_update.status.message.parts
    ]
    check("progress notes arrive", len(progress) >= 3, len(progress))

    # Subscribe to a running task.
    running = await last_task(
        blocking, send(message("watch me", {"steps": 8, "delayMs": 40}), return_immediately=True)
    )
    seen = [e async for e in streaming.subscribe(SubscribeToTaskRequest(id=running.id))]
    check("subscribe starts with the task", seen[0].HasField("task"), seen[:1])
    check(
        "subscribe ends completed",
        seen[-1].HasField("status_update")
        and seen[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED,
        seen[-1],
    )

    # Cancel a running task; a second cancel is refused.
    slow = await last_task(
        blocking, send(message("cancel me", {"steps": 200, "delayMs": 50}), return_immediately=True)
    )
    await poll(blocking, slow.id, [TaskState.TASK_STATE_WORKING])
    canceled = await blocking.cancel_task(CancelTaskRequest(id=slow.id))
    check("cancel returns the canceled task", canceled.status.state == TaskState.TASK_STATE_CANCELED)
    try:
        await blocking.cancel_task(CancelTaskRequest(id=slow.id))
        check("second cancel is refused", False)
    except TaskNotCancelableError:
        check("second cancel is refused", True)

    # Unknown tasks.
    try:
        await blocking.get_task(GetTaskRequest(id="no-such-task"))
        check("unknown task is not found", False)
    except TaskNotFoundError:
        check("unknown task is not found", True)

    # Multi-turn: input-required, then the answer.
    asking = await last_task(blocking, send(message("ask", {"askInput": True})))
    check("blocking send stops at input-required", asking.status.state == TaskState.TASK_STATE_INPUT_REQUIRED)
    answered = await last_task(blocking, send(message("forty-two", task_id=asking.id)))
    check("the answer completes the task", answered.status.state == TaskState.TASK_STATE_COMPLETED)
    check("the reply echoes the answer", answered.artifacts[0].parts[0].text == "forty-two", answered)

    # A message to a working task: echo queues it (the acknowledged task holds it in its
    # history) and echoes it before its next step, which a subscriber sees.
    working = await last_task(
        blocking, send(message("busy", {"steps": 20, "delayMs": 50}), return_immediately=True)
    )
    watching = asyncio.ensure_future(
        collect(streaming.subscribe(SubscribeToTaskRequest(id=working.id)))
    )
    queued = await last_task(blocking, send(message("meanwhile", task_id=working.id), return_immediately=True))
    texts = [p.text for m in queued.history for p in m.parts if m.role == Role.ROLE_USER]
    check("a message to a working task is acknowledged", queued.status.state == TaskState.TASK_STATE_WORKING, queued.status)
    check("it is in the task's history at once", "meanwhile" in texts, texts)
    seen = await watching
    notes = [
        p.text
        for e in seen if e.HasField("status_update")
        for p in e.status_update.status.message.parts
    ]
    check("a subscriber sees the skill take it", "echo: meanwhile" in notes, notes)
    check(
        "the task completes",
        seen[-1].HasField("status_update")
        and seen[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED,
        seen[-1],
    )

    # Push notifications: a config in the send, then the config methods.
    receiver = WebhookReceiver()
    pushed = await last_task(
        blocking,
        SendMessageRequest(
            message=message("pushed", {"steps": 2}),
            configuration=SendMessageConfiguration(
                task_push_notification_config=TaskPushNotificationConfig(
                    url=receiver.url, token="interop-token"
                )
            ),
        ),
    )
    hits = await receiver.wait_for(
        lambda hits: any(
            body.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED"
            for _, body in hits
        )
    )
    check("push: the first delivery is the task", hits[0][1].get("task", {}).get("id") == pushed.id, hits[0])
    check(
        "push: every delivery carries the token",
        all(headers.get("x-a2a-notification-token") == "interop-token" for headers, _ in hits),
    )
    created = await blocking.create_task_push_notification_config(
        TaskPushNotificationConfig(task_id=pushed.id, id="second", url=receiver.url)
    )
    check("push: create returns the config", created.id == "second" and created.task_id == pushed.id, created)
    got = await blocking.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=pushed.id, id="second")
    )
    check("push: get returns it", got.url == receiver.url, got)
    listed = await blocking.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=pushed.id)
    )
    check("push: list has both configs", len(listed.configs) == 2, listed)
    await blocking.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=pushed.id, id="second")
    )
    listed = await blocking.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=pushed.id)
    )
    check("push: delete removes it", [c.id for c in listed.configs] == [pushed.id], listed)

    await blocking.close()
    await streaming.close()


if __name__ == "__main__":
    run(main, *sys.argv[2:])
