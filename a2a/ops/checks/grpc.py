"""The check of the gRPC binding's settings (``a2a.E090``, ``E091``)."""

from __future__ import annotations

import importlib.util

from django.core.checks import CheckMessage, Error

from a2a.conf import a2a_settings
from a2a.ops.checks.registry import Messages, concern

#: The modules the gRPC binding needs (the `grpc` extra).
GRPC_MODULES = ("grpc", "google.protobuf", "google.rpc.status_pb2")


def _grpc_missing() -> str | None:
    """The first module of the `grpc` extra that is not installed, or None."""
    for name in GRPC_MODULES:
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except ModuleNotFoundError:  # its parent package is missing
            return name
    return None


@concern("A2A_GRPC_URL", "A2A_GRPC_ADDRESS", "A2A_GRPC_IN_ASGI", "A2A_GRPC_REUSE_PORT")
def check_grpc() -> Messages:
    """``a2a.E090``: ``A2A_GRPC_IN_ASGI`` is on without the ``grpc`` extra;
    ``a2a.E091``: ``A2A_GRPC_ADDRESS`` is not ``host:port``, or ``A2A_GRPC_URL`` is
    neither None nor a non-empty string."""
    errors: list[CheckMessage] = []
    address = a2a_settings.GRPC_ADDRESS
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        errors.append(Error(f"A2A_GRPC_ADDRESS must be 'host:port', not {address!r}.", id="a2a.E091"))
    url = a2a_settings.GRPC_URL
    if url is not None and not url.strip():
        message = f"A2A_GRPC_URL must be None or 'host:port' (as clients dial it), not {url!r}."
        errors.append(Error(message, id="a2a.E091"))
    if a2a_settings.GRPC_IN_ASGI and (missing := _grpc_missing()):
        errors.append(
            Error(
                f"A2A_GRPC_IN_ASGI is on but {missing} is not installed.",
                hint="Install the package with its grpc extra ([grpc]: docs/getting-started.md, Installing).",
                id="a2a.E090",
            )
        )
    return errors
