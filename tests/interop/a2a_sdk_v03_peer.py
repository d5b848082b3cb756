"""A small agent served by the official A2A Python SDK 0.3's own server (its Starlette
JSON-RPC application, DefaultRequestHandler and in-memory task store), for fundi to
delegate to over A2A v0.3.

Usage: python a2a_sdk_v03_peer.py
Serves on 127.0.0.1 at a free port; prints "listening on URL" once it serves. It
behaves as a2a_sdk_peer.py does: "ask" asks "Which colour?", anything else is
upper-cased into the artifact "shout" (and a data part, when the message has one, into
the artifact "data").
"""

import asyncio
import socket

import uvicorn

from a2a.server.agent_execution import AgentExecutor
from a2a.server.apps import A2AStarletteApplication
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, DataPart, Part, TextPart
from a2a.utils import new_agent_text_message, new_task


class Shouter(AgentExecutor):
    async def execute(self, context, event_queue):
        text = context.get_user_input()
        task = context.current_task
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            if text == "ask":
                await updater.requires_input(
                    new_agent_text_message("Which colour?", task.context_id, task.id)
                )
                return
            await updater.start_work(new_agent_text_message("working on it", task.context_id, task.id))
            await asyncio.sleep(0.2)
            await updater.add_artifact(
                [Part(root=TextPart(text=text.upper()))], artifact_id="shout", name="shout"
            )
            data = [p for p in context.message.parts if isinstance(p.root, DataPart)]
            if data:
                await updater.add_artifact(data, artifact_id="data", name="data")
            await updater.complete(new_agent_text_message("done", task.context_id, task.id))
            return
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        await updater.add_artifact(
            [Part(root=TextPart(text=f"answer: {text}"))], artifact_id="answer", name="answer"
        )
        await updater.complete()

    async def cancel(self, context, event_queue):
        task = context.current_task
        await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def main():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    card = AgentCard(
        name="python shouter 0.3",
        description="Upper-cases what it is sent (the official Python SDK 0.3's server).",
        url=f"{base}/",
        version="1.0.0",
        protocol_version="0.3.0",
        preferred_transport="JSONRPC",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="shout", name="Shout", description="Upper-cases text", tags=["demo"])],
    )
    handler = DefaultRequestHandler(agent_executor=Shouter(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    print(f"listening on {base}", flush=True)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
