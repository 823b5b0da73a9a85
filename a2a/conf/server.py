"""Serving HTTP: the middleware path, and the slow-client timeouts and connection cap of a2a.http.protocol."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Serving HTTP (a2a.asgi; the slow-client limits: uvicorn --http a2a.http.protocol:HttpToolsProtocol)"

DECLARED: dict[str, Setting] = {
    "A2A_DIRECT_ASGI": Setting(
        bool,
        False,
        doc="False: the A2A endpoints go through the project's MIDDLEWARE, like every view (on the event loop "
        "when every middleware is known not to block, else in one thread hop per request: docs/deployment.md). "
        "True: a2a.asgi serves them straight from the async views, skipping "
        "MIDDLEWARE and the request signals (CORS, security headers, request-id middleware do not see them): "
        "the rest of Django's per-request work (measured in docs/deployment.md).",
    ),
    "A2A_HEADER_TIMEOUT": Setting(
        float,
        10.0,
        min=0,
        doc="Seconds a request line and headers may take to arrive; the connection is closed beyond.",
    ),
    "A2A_BODY_TIMEOUT": Setting(
        float,
        30.0,
        min=0,
        doc="Seconds a request body may pause between two reads; the connection is closed beyond.",
    ),
    "A2A_MAX_CONNECTIONS": Setting(
        int,
        0,
        min=0,
        doc="Connections one server process keeps open; over it, the one reading its request the longest is "
        "closed. 0: three quarters of the process's open-file limit.",
    ),
}
