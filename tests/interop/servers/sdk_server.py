"""An agent served by the official a2a-sdk (1.x), for a2a.client's interop tests.

Run with the interop venv's Python (its ``a2a`` is the SDK's, never imported by our test
process): ``python sdk_server.py PORT``. JSON-RPC at ``/a2a`` and HTTP+JSON at ``/rest``,
both with the SDK's v0.3 compatibility on, the card at the well-known path. The agent
answers "echo: <text>" as an artifact; "sleep" keeps the task working until canceled;
"ask" asks for input.
"""

from __future__ import annotations

import asyncio
import sys

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Role
from starlette.applications import Starlette


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = context.get_user_input()
        await updater.start_work(new_text_message("working", role=Role.ROLE_AGENT))
        if text.startswith("sleep"):
            await asyncio.sleep(30)
        if text.startswith("ask"):
            await updater.requires_input(new_text_message("which one?", role=Role.ROLE_AGENT))
            return
        await updater.add_artifact([new_text_part(f"echo: {text}")], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def app(port: int) -> Starlette:
    base = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name="sdk-agent",
        description="An echo agent on the official SDK",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{base}/a2a", protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=f"{base}/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"),
            AgentInterface(url=f"{base}/a2a", protocol_binding="JSONRPC", protocol_version="0.3"),
            AgentInterface(url=f"{base}/rest", protocol_binding="HTTP+JSON", protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes the text", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card)
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/a2a", enable_v0_3_compat=True),
        *create_rest_routes(handler, enable_v0_3_compat=True, path_prefix="/rest"),
    ]
    return Starlette(routes=routes)


if __name__ == "__main__":
    port = int(sys.argv[1])
    uvicorn.run(app(port), host="127.0.0.1", port=port, log_level="warning")
