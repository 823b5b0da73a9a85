"""A free loopback port, written once for the suite and ``tests/thirdparty/run.py``
(standard library only, so that script can import it from any Python)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
