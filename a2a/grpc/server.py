"""The gRPC server: grpcio's asyncio server with the A2A service on one address.

:func:`serve` runs it as a process of its own (``manage.py a2a_grpc``): the runner
starts with it (tasks a dead process left in flight are found), SIGTERM or SIGINT
stop it gracefully (calls in progress get ``grace`` seconds, then the runner drains).
:func:`start` starts it in a running event loop (the ASGI app's, ``A2A_GRPC_IN_ASGI``).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable

import grpc

from a2a.conf import a2a_settings
from a2a.core.events import close_event_backend
from a2a.grpc import a2a_pb2_grpc
from a2a.grpc.service import A2AService
from a2a.ops.deployment import log_startup
from a2a.protocol.limits import max_body_bytes
from a2a.runtime.runner import get_runner

logger = logging.getLogger(__name__)


class AddressInUseError(OSError):
    """The address could not be bound."""


def create_server(address: str, credentials: grpc.ServerCredentials | None = None) -> tuple[grpc.aio.Server, int]:
    """A server (not started) with the A2A service on ``address`` (``host:port``; port
    0 picks one), TLS when ``credentials`` are given; and the port it bound. A request
    message is at most ``A2A_MAX_BODY_BYTES`` (RESOURCE_EXHAUSTED beyond), as an HTTP body.

    AddressInUseError when the address cannot be bound, a port another server holds
    included: grpcio sets ``SO_REUSEPORT`` by default on Linux, which lets a second
    server bind the same port and silently take half its connections; it is set only
    with ``A2A_GRPC_REUSE_PORT`` (the worker processes of one deployment)."""
    reuse = a2a_settings.GRPC_REUSE_PORT
    options = [("grpc.max_receive_message_length", max_body_bytes()), ("grpc.so_reuseport", int(reuse))]
    server = grpc.aio.server(options=options)
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(A2AService(), server)
    try:
        port = server.add_secure_port(address, credentials) if credentials else server.add_insecure_port(address)
    except RuntimeError:  # grpcio: "Failed to bind to address ...", the reason only in its log
        shared = "" if reuse else "; set A2A_GRPC_REUSE_PORT = True for several worker processes to share it"
        raise AddressInUseError(
            f"cannot listen on {address}: the port is in use or the address is not local{shared}"
        ) from None
    return server, port


async def start(address: str, credentials: grpc.ServerCredentials | None = None) -> tuple[grpc.aio.Server, int]:
    """A started server on ``address`` in the running loop, and its port."""
    server, port = create_server(address, credentials)
    await server.start()
    logger.info("A2A gRPC binding listening on %s (port %d)", address, port)
    return server, port


def _start_runner() -> None:
    log_startup()
    get_runner().start()


def _stop_runner() -> None:
    get_runner().shutdown()
    close_event_backend()  # the last transitions' events go out


async def serve(
    address: str,
    *,
    grace: float = 5.0,
    credentials: grpc.ServerCredentials | None = None,
    ready: Callable[[int], None] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT (or ``stop`` is set): calls in progress get
    ``grace`` seconds to end, then the runner drains its tasks (``A2A_SHUTDOWN_GRACE``).
    ``ready`` is called with the bound port once the server takes calls."""
    server, port = create_server(address, credentials)  # bound before anything starts: a taken port stops here
    await asyncio.to_thread(_start_runner)
    await server.start()
    logger.info("A2A gRPC binding listening on %s (port %d)", address, port)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT)
    for signum in signals:
        loop.add_signal_handler(signum, stop.set)
    try:
        if ready is not None:
            ready(port)
        await stop.wait()
        logger.info("A2A gRPC binding stopping (grace %.1f s)", grace)
        await server.stop(grace)
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)
        await asyncio.to_thread(_stop_runner)
