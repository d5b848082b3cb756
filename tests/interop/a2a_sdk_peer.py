"""A small agent served by the official A2A Python SDK 1.x's own server (Starlette
routes, its DefaultRequestHandler and in-memory task store), for fundi to delegate to.

Usage: python a2a_sdk_peer.py JSONRPC|HTTP+JSON
Serves on 127.0.0.1 at a free port, its card listing the given binding first; prints
"listening on URL" once it serves.

What it does with a message: text "ask" makes it ask "Which colour?" (input-required),
and the answer completes the task with an artifact "answer: <text>"; any other text
makes it say "working on it", then complete with the text upper-cased as the artifact
"shout" (and a data part, when the message has one, as the artifact "data").
"""

import asyncio
import socket
import sys

import uvicorn
from google.protobuf import json_format
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import get_message_text, new_task, new_text_message
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCard, Part, TaskState


class Shouter(AgentExecutor):
    async def execute(self, context, event_queue):
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)

        def say(text):
            return new_text_message(
                text, context_id=context.context_id, task_id=context.task_id
            )

        text = get_message_text(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(
                new_task(
                    context.task_id,
                    context.context_id,
                    TaskState.TASK_STATE_SUBMITTED,
                    history=[context.message],
                )
            )
            if text == "ask":
                await updater.requires_input(say("Which colour?"))
                return
            await updater.start_work(say("working on it"))
            await asyncio.sleep(0.2)
            await updater.add_artifact(
                [Part(text=text.upper())], artifact_id="shout", name="shout"
            )
            data = [p for p in context.message.parts if p.HasField("data")]
            if data:
                await updater.add_artifact(data, artifact_id="data", name="data")
            await updater.complete(say("done"))
            return
        # The answer to its question.
        await updater.start_work()
        await updater.add_artifact(
            [Part(text=f"answer: {text}")], artifact_id="answer", name="answer"
        )
        await updater.complete()

    async def cancel(self, context, event_queue):
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def main():
    binding = sys.argv[1]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    interfaces = {
        "JSONRPC": {"url": f"{base}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        "HTTP+JSON": {"url": f"{base}/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
    }
    others = [i for name, i in interfaces.items() if name != binding]
    card = json_format.ParseDict(
        {
            "name": "python shouter",
            "description": "Upper-cases what it is sent (the official Python SDK's server).",
            "version": "1.0.0",
            "supportedInterfaces": [interfaces[binding], *others],
            "capabilities": {"streaming": True},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [
                {"id": "shout", "name": "Shout", "description": "Upper-cases text", "tags": ["demo"]}
            ],
        },
        AgentCard(),
    )
    handler = DefaultRequestHandler(
        agent_executor=Shouter(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/a2a"),
        *create_rest_routes(handler, path_prefix="/rest"),
    ]
    app = Starlette(routes=routes)
    config = uvicorn.Config(app, log_level="warning")
    server = uvicorn.Server(config)
    print(f"listening on {base}", flush=True)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
