"""Every agent an MCP server too: the MCP binding (Streamable HTTP, revisions 2026-07-28
and 2025-11-25, the tasks extension), beside JSON-RPC, HTTP+JSON and gRPC.

It is one more edge, not a second engine: a ``tools/call`` is a ``SendMessage`` through
:mod:`a2a.service.operations` (same handler, store, owner rules, admin; the task records
``_call.binding = "mcp"``), its question an ``input-required`` turn, its task handle the
A2A task's id. Modules: :mod:`~a2a.mcp.wire` (revisions, errors, header checks),
:mod:`~a2a.mcp.tools` (skills as tools), :mod:`~a2a.mcp.results` (a task as MCP sees it),
:mod:`~a2a.mcp.state` (signed requestState and sessions), :mod:`~a2a.mcp.calls`,
:mod:`~a2a.mcp.streams` (SSE answers), :mod:`~a2a.mcp.methods`, :mod:`~a2a.mcp.views`.

Why our own implementation, not the official SDK (``mcp`` 2.3.0, measured): ``pip install
mcp`` brings 30 packages, 70 MB (starlette, uvicorn, pydantic, cryptography, jsonschema,
sse-starlette, httpx2...), and importing its server takes 1.75 s. Its server is a
Starlette app with its own session manager, which must run in a lifespan task group:
mounted beside Django it would bypass the project's middleware and DRF authentication,
keep its own sessions and request state, and call tool functions rather than hand a
message to the A2A operations; the durable task, owner rules, signed state across
restarts and the event-bus streams would all have to be rebuilt around it. The protocol
itself is JSON-RPC over POST and SSE, which the project already speaks (a2a/http/sse.py).
"""

from a2a.service.mcp_endpoint import mcp_enabled, mcp_url

__all__ = ["mcp_enabled", "mcp_url"]
