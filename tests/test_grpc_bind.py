"""A gRPC address another server holds stops the start-up (docs/protocol.md, "gRPC").

grpcio sets SO_REUSEPORT on Linux by default: a second server on the same
``A2A_GRPC_ADDRESS`` bound without error and the kernel split the connections between
the two. Each test holds the port with this package's own server, as a second
``manage.py a2a_grpc`` or ASGI process would meet it."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from a2a.asgi import get_asgi_application
from a2a.grpc.server import AddressInUseError, create_server, start
from stores.memory import MemoryTaskStore
from tests.server import command_process

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def agent(settings):
    settings.TASK_STORE = MemoryTaskStore()


@contextlib.contextmanager
def held_port() -> Iterator[int]:
    """A port this package's gRPC server listens on, in a loop of its own, until the block ends."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server, port = asyncio.run_coroutine_threadsafe(start("127.0.0.1:0"), loop).result(30)
    try:
        yield port
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(None), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


def test_a_second_server_cannot_bind_a_held_port():
    async def second(port: int) -> None:
        server, _ = create_server(f"127.0.0.1:{port}")  # (without the fix) bound beside the first
        await server.stop(None)

    with held_port() as port, pytest.raises(AddressInUseError, match=f"cannot listen on 127.0.0.1:{port}"):
        asyncio.run(second(port))


def test_servers_that_all_ask_share_the_port(settings):
    settings.A2A_GRPC_REUSE_PORT = True  # uvicorn --workers 4 with A2A_GRPC_IN_ASGI

    async def second(port: int) -> int:
        server, bound = create_server(f"127.0.0.1:{port}")
        await server.stop(None)
        return bound

    with held_port() as port:
        assert asyncio.run(second(port)) == port


def lifespan_startup() -> dict[str, Any]:
    """What the ASGI app answers a lifespan startup with (ending the lifespan either way)."""

    async def go() -> dict[str, Any]:
        app = get_asgi_application()
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        lifespan = asyncio.ensure_future(app({"type": "lifespan"}, inbox.get, outbox.put))
        await inbox.put({"type": "lifespan.startup"})
        answer = await asyncio.wait_for(outbox.get(), 30)
        if answer["type"] != "lifespan.startup.failed":  # (without the fix) end it
            await inbox.put({"type": "lifespan.shutdown"})
        await asyncio.wait_for(lifespan, 30)
        return answer

    return asyncio.run(go())


def test_the_asgi_lifespan_fails_when_a_socket_holds_the_grpc_port(settings):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        settings.A2A_GRPC_IN_ASGI = True
        settings.A2A_GRPC_ADDRESS = f"127.0.0.1:{taken.getsockname()[1]}"
        answer = lifespan_startup()
    assert answer["type"] == "lifespan.startup.failed" and "gRPC" in answer["message"]


def test_the_asgi_lifespan_fails_when_another_grpc_server_holds_the_port(settings):
    settings.A2A_GRPC_IN_ASGI = True
    with held_port() as port:
        settings.A2A_GRPC_ADDRESS = f"127.0.0.1:{port}"
        answer = lifespan_startup()
    assert answer["type"] == "lifespan.startup.failed", answer
    assert "A2A gRPC binding: cannot listen on" in answer["message"]
    assert "A2A_GRPC_REUSE_PORT" in answer["message"]  # what to set when sharing was meant


@pytest.mark.slow
def test_the_management_command_stops_on_a_held_port():
    with held_port() as port, command_process("a2a_grpc", "--port", str(port)) as process:
        out, err = process.communicate(timeout=60)  # (without the fix) it serves until killed
    assert process.returncode == 1, out + err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "listening" not in out
