"""The official A2A Python SDK's server, as a user would set it up, for the benchmarks.

Its JSON-RPC app (Starlette routes from ``a2a.server.routes``, v0.3 compatibility on)
with the SDK's ``DefaultRequestHandler`` and an ``AgentExecutor`` that uppercases the
text: ``submitted`` -> ``working`` -> an artifact -> ``completed``, the same
transitions our runner saves. Runs in ``.venv-bench-sdk`` (never ours: its top-level
``a2a`` package clashes with ours), under the ASGI server ours runs under::

    cd bench/servers && SDK_STORE=memory ../../.venv-bench-sdk/bin/python -m uvicorn \\
        sdk_server:app --loop uvloop --http httptools --no-access-log

``SDK_STORE``: ``memory`` (``InMemoryTaskStore``, the default) or ``sqlite:<path>``
(``DatabaseTaskStore`` on SQLAlchemy's aiosqlite driver; the table is created on
first use). ``SDK_BASE_URL`` is the URL the card advertises.
"""

from __future__ import annotations

import os
import sys

# Never import our own "a2a" from the repository when started from it.
sys.path[:] = [p for p in sys.path if not os.path.isfile(os.path.join(p or ".", "manage.py"))]

from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_part  # noqa: E402
from a2a.server.agent_execution import AgentExecutor, RequestContext  # noqa: E402
from a2a.server.events.event_queue_v2 import EventQueue  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater  # noqa: E402
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill  # noqa: E402
from starlette.applications import Starlette  # noqa: E402


class UpperExecutor(AgentExecutor):
    """The benchmarks' trivial handler: the text in capitals, as one artifact."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        await updater.add_artifact([new_text_part(context.get_user_input().upper())])
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def task_store():  # type: ignore[no-untyped-def]
    spec = os.environ.get("SDK_STORE", "memory")
    if spec == "memory":
        return InMemoryTaskStore()
    if spec.startswith("sqlite:"):
        from a2a.server.tasks import DatabaseTaskStore
        from sqlalchemy.ext.asyncio import create_async_engine

        return DatabaseTaskStore(create_async_engine(f"sqlite+aiosqlite:///{spec[len('sqlite:') :]}"))
    raise SystemExit(f"SDK_STORE must be memory or sqlite:<path>, not {spec!r}")


base_url = os.environ.get("SDK_BASE_URL", "http://127.0.0.1:8000")
card = AgentCard(
    name="sdk-bench",
    description="The a2a-sdk server with an uppercasing executor (benchmarks).",
    version="1.0.0",
    supported_interfaces=[
        AgentInterface(url=f"{base_url}/a2a/", protocol_binding="JSONRPC", protocol_version="1.0"),
        AgentInterface(url=f"{base_url}/a2a/", protocol_binding="JSONRPC", protocol_version="0.3"),
    ],
    capabilities=AgentCapabilities(streaming=True, push_notifications=False),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[AgentSkill(id="upper", name="Upper", description="Uppercases the text", tags=["bench"])],
)
handler = DefaultRequestHandler(agent_executor=UpperExecutor(), task_store=task_store(), agent_card=card)
app = Starlette(
    routes=[
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/a2a/", enable_v0_3_compat=True),
    ]
)
