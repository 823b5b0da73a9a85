"""A wire-level A2A client for tests: the real protocol, byte for byte, to the project's
ASGI application in this process (httpx's ASGI transport, no server; a sync call runs
the async one on an event loop of its own) or to a live base URL. It hands back what
the server said (status codes, headers, envelopes, SSE frames) so that a test can check
the wire itself; it never hides an error.

One :class:`WireClient` speaks JSON-RPC (v1.0 with the ``A2A-Version: 1.0`` header, v0.3
without it), HTTP+JSON and SSE streams, sync and async (the ``a``-prefixed methods).
(:mod:`a2a.testing.binding` sends the same operations over either binding in either
version, so that one test body runs over all four.)
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
import orjson

from a2a.agents import get_agent
from a2a.asgi import get_asgi_application

#: The base URL requests to the in-process application carry.
TESTSERVER = "http://testserver"
#: The JSON-RPC endpoint and the HTTP+JSON prefixes of the project's ``a2a.urls``.
JSONRPC_PATH = "/a2a/"
#: The versions whose objects are v1.0's (1.1 adds the task's generation).
V1 = ("1.0", "1.1")
REST_PATHS = {"1.0": "/a2a/rest", "0.3": "/a2a/rest/v1"}
#: ``SendMessage`` and ``SendStreamingMessage`` by protocol version.
SEND_METHODS = {"1.0": ("SendMessage", "SendStreamingMessage"), "0.3": ("message/send", "message/stream")}
#: A keyword argument left out (``None`` is a value: "no ``A2A-Version`` header").
UNSET: Any = object()


def v10_message(text: str, **extra: Any) -> dict[str, Any]:
    """A v1.0 user message with one text part (``extra`` adds or replaces fields)."""
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}], **extra}


def v03_message(text: str, **extra: Any) -> dict[str, Any]:
    """A v0.3 user message with one text part (``extra`` adds or replaces fields)."""
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        **extra,
    }


def message(text: str, version: str | None = "1.0", **extra: Any) -> dict[str, Any]:
    """A user message in the shape of ``version`` ("1.0" or "1.1", or v0.3 for anything else)."""
    return v10_message(text, **extra) if version in V1 else v03_message(text, **extra)


def rpc_body(method: str, params: Any = UNSET, request_id: Any = 1) -> dict[str, Any]:
    """A JSON-RPC 2.0 request object (``params`` left out when not given; ``id`` too when
    ``request_id`` is :data:`UNSET`: a notification)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if request_id is UNSET:
        del body["id"]
    if params is not UNSET:
        body["params"] = params
    return body


def send_params(
    text_or_message: str | Mapping[str, Any],
    version: str | None,
    *,
    blocking: bool | None = None,
    configuration: Mapping[str, Any] | None = None,
    task_id: str | None = None,
    context_id: str | None = None,
    tenant: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """``SendMessage`` params: a text becomes a message of ``version``; ``task_id`` and
    ``context_id`` go on the message (a follow-up turn: the answer to ``input-required``
    on that task, or a new task in that conversation); ``blocking`` is written the
    version's way (v1.0 ``returnImmediately``, v0.3 ``blocking``); a ``configuration``
    given is sent even when empty (HTTP+JSON v0.3's proto3 ``{}``: not blocking), none
    without one; ``tenant`` is left out when None; ``extra`` are further params (``metadata``)."""
    msg = message(text_or_message, version) if isinstance(text_or_message, str) else dict(text_or_message)
    msg.update({key: value for key, value in (("taskId", task_id), ("contextId", context_id)) if value is not None})
    config = dict(configuration or {})
    if blocking is not None:
        config.update({"returnImmediately": not blocking} if version in V1 else {"blocking": blocking})
    scope = {} if tenant is None else {"tenant": tenant}
    configured = {"configuration": config} if config or configuration is not None else {}
    return {"message": msg, **configured, **scope, **extra}


def frames(lines: Iterable[str], *, on_first: Callable[[], Any] | None = None, raw: list | None = None) -> list:
    """The JSON data of every ``data:`` line of an SSE stream (``on_first`` called once
    the first is in; every line appended to ``raw``)."""
    events: list = []
    for line in lines:
        if raw is not None:
            raw.append(line)
        if line.startswith("data:"):
            events.append(orjson.loads(line[5:].strip()))
            if on_first is not None and len(events) == 1:
                on_first()
    return events


def check_stream(response: httpx.Response) -> None:
    """An SSE answer: HTTP 200 and ``text/event-stream`` (AssertionError with the body otherwise)."""
    assert response.status_code == 200, (response.status_code, response.content)
    assert response.headers["content-type"].startswith("text/event-stream"), response.headers


@dataclasses.dataclass(frozen=True)
class WireClient:
    """Requests to one A2A server: ``app`` (an ASGI application, the project's own when
    neither it nor ``base_url`` is given) or ``base_url`` (a live server). ``version`` is
    the ``A2A-Version`` header sent by default (``None``: no header, so v0.3); ``agent``
    the agent of ``A2A_AGENTS`` spoken to (its JSON-RPC and HTTP+JSON routes, found in the
    project's URLconf; ``None``: the default agent's, ``/a2a/``); ``http`` an
    ``httpx.Client`` a live server's sync calls reuse (a new connection each by default)."""

    app: Any = None
    base_url: str | None = None
    version: str | None = "1.0"
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    timeout: float = 15.0
    http: httpx.Client | None = None
    agent: str | None = None

    def with_(self, **changes: Any) -> WireClient:
        """A copy with other fields (``client.with_(version="0.3", headers={...})``)."""
        if "version" in changes and changes["version"] == "0.3":
            changes["version"] = None  # v0.3 is what a request without the header speaks
        return dataclasses.replace(self, **changes)

    # --- Building requests ---------------------------------------------------------------

    def url(self, path: str) -> str:
        """``path`` on this client's server (an absolute URL is kept)."""
        return path if "://" in path else (self.base_url or TESTSERVER).rstrip("/") + path

    def build(
        self, method: str, path: str, *, json: Any = UNSET, version: str | None = UNSET, headers=None, **kwargs: Any
    ) -> httpx.Request:
        """The request: ``json`` serialized by httpx (bytes go as they are with ``content=``),
        the client's headers, then ``A2A-Version`` unless ``version`` is None, then ``headers``."""
        version = self.version if version is UNSET else version
        all_headers = {**self.headers, **({"A2A-Version": version} if version else {}), **(headers or {})}
        if json is not UNSET:
            kwargs["json"] = json  # serialized by httpx, as any httpx client would
        timeout = {"timeout": httpx.Timeout(self.timeout).as_dict()}  # what httpx's own build_request sets
        return httpx.Request(method, self.url(path), headers=all_headers, extensions=timeout, **kwargs)

    def jsonrpc_path(self) -> str:
        """The JSON-RPC endpoint of this client's agent (``/a2a/`` for the default one)."""
        return JSONRPC_PATH if self.agent is None else get_agent(self.agent).path("jsonrpc")

    def rest_path(self, path: str, version: str | None = UNSET) -> str:
        """``path`` under the HTTP+JSON prefix of ``version`` (``/message:send`` ...), on
        this client's agent."""
        version = self.version if version is UNSET else version
        prefix = REST_PATHS["1.0" if version in V1 else "0.3"]
        if self.agent is not None:
            prefix = get_agent(self.agent).path("rest") + prefix.removeprefix(REST_PATHS["1.0"])
        return prefix + path

    # --- Transport -------------------------------------------------------------------------

    def application(self) -> Any:
        """The ASGI application this client talks to (the project's, built on first use)."""
        if self.app is None:
            object.__setattr__(self, "app", get_asgi_application())
        return self.app

    @asynccontextmanager
    async def _async_client(self) -> AsyncIterator[httpx.AsyncClient]:
        transport = None if self.base_url else httpx.ASGITransport(app=self.application())
        async with httpx.AsyncClient(transport=transport, timeout=self.timeout) as client:
            yield client

    async def asend_request(self, request: httpx.Request) -> httpx.Response:
        """Send a built request and read the whole answer."""
        async with self._async_client() as client:
            return await client.send(request)

    def send_request(self, request: httpx.Request) -> httpx.Response:
        """Send a built request and read the whole answer."""
        if not self.base_url:  # the async path on a loop of its own: a body may be an async iterator
            return asyncio.run(self.asend_request(request))
        if self.http is not None:
            return self.http.send(request)
        with httpx.Client(timeout=self.timeout) as client:
            return client.send(request)

    @contextmanager
    def _stream(self, request: httpx.Request) -> Iterator[Iterable[str]]:
        if not self.base_url:  # the ASGI transport hands over the body once the app is done
            response = self.send_request(request)
            check_stream(response)
            yield response.text.splitlines()
            return
        client = self.http or httpx.Client(timeout=self.timeout)
        response = client.send(request, stream=True)
        try:
            if response.status_code != 200:
                response.read()
            check_stream(response)
            yield response.iter_lines()
        finally:
            response.close()
            if client is not self.http:
                client.close()

    # --- Sync calls ------------------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One HTTP request (``json=``, ``content=``, ``headers=``, ``version=``, ``params=``)."""
        return self.send_request(self.build(method, path, **kwargs))

    def rpc_response(
        self, method: str, params: Any = UNSET, *, request_id: Any = 1, path: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        """A JSON-RPC call's HTTP response, whatever its status (``path``: another endpoint
        than the agent's)."""
        return self.request("POST", path or self.jsonrpc_path(), json=rpc_body(method, params, request_id), **kwargs)

    def rpc_raw(self, content: bytes | str, *, path: str | None = None, **kwargs: Any) -> httpx.Response:
        """The HTTP response to a body sent to the JSON-RPC endpoint as it is, with no header
        but the client's and ``headers``: for the bodies a test writes itself (malformed ones,
        batches, ids no JSON library keeps exactly)."""
        return self.request("POST", path or self.jsonrpc_path(), content=content, **kwargs)

    def rpc(self, method: str, params: Any = UNSET, *, status: int | None = None, **kwargs: Any) -> Any:
        """A JSON-RPC call's answer (the whole envelope, an error included); with ``status``,
        AssertionError unless the HTTP status is that."""
        return json_of(self.rpc_response(method, params, **kwargs), status)

    def result(self, method: str, params: Any = UNSET, **kwargs: Any) -> Any:
        """A JSON-RPC call's ``result`` (AssertionError with the envelope when it is an error)."""
        return result_of(self.rpc(method, params, **kwargs))

    def send(self, text_or_message: str | Mapping[str, Any], *, version: str | None = UNSET, **params: Any) -> Any:
        """``SendMessage`` (``message/send`` in v0.3) with a text or a message; its result.
        ``params``: ``agent``, another agent of ``A2A_AGENTS`` than this client's
        (``"billing"``); ``task_id``, ``context_id`` (a follow-up turn), ``blocking``,
        ``configuration``, ``metadata``, ``tenant``, ``headers``."""
        client, method, body, kwargs = self._send_call(text_or_message, version, params, stream=False)
        return client.result(method, body, **kwargs)

    def rest(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """An HTTP+JSON request to ``path`` under the version's prefix (``/tasks/{id}``)."""
        return self.request(method, self.rest_path(path, kwargs.get("version", UNSET)), **kwargs)

    def stream(self, method: str, path: str, *, on_first=None, raw=None, **kwargs: Any) -> list:
        """Every SSE data frame of a streaming request, until the server ends the stream
        (against the ASGI app the frames arrive together, once the stream has ended)."""
        with self._stream(self.build(method, path, **kwargs)) as lines:
            return frames(lines, on_first=on_first, raw=raw)

    def stream_rpc(self, method: str, params: Any = UNSET, *, request_id: Any = 1, **kwargs: Any) -> list:
        """A streaming JSON-RPC call's frames (each a JSON-RPC response object)."""
        return self.stream("POST", self.jsonrpc_path(), json=rpc_body(method, params, request_id), **kwargs)

    def send_stream(
        self, text_or_message: str | Mapping[str, Any], *, version: str | None = UNSET, **params: Any
    ) -> list:
        """``SendStreamingMessage`` (``message/stream``): every frame's ``result``
        (``params`` as :meth:`send`)."""
        client, method, body, kwargs = self._send_call(text_or_message, version, params, stream=True)
        return [result_of(frame) for frame in client.stream_rpc(method, body, **kwargs)]

    # --- Async calls -----------------------------------------------------------------------

    async def arequest(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """:meth:`request`, awaited."""
        return await self.asend_request(self.build(method, path, **kwargs))

    async def arpc(
        self, method: str, params: Any = UNSET, *, request_id: Any = 1, status: int | None = None, **kwargs: Any
    ) -> Any:
        """:meth:`rpc`, awaited."""
        response = await self.arequest("POST", self.jsonrpc_path(), json=rpc_body(method, params, request_id), **kwargs)
        return json_of(response, status)

    async def asend(
        self, text_or_message: str | Mapping[str, Any], *, version: str | None = UNSET, **params: Any
    ) -> Any:
        """:meth:`send`, awaited."""
        client, method, body, kwargs = self._send_call(text_or_message, version, params, stream=False)
        return result_of(await client.arpc(method, body, **kwargs))

    async def astream(self, method: str, path: str, *, on_first=None, raw=None, **kwargs: Any) -> list:
        """:meth:`stream`, awaited."""
        async with self._async_client() as client:
            response = await client.send(self.build(method, path, **kwargs), stream=True)
            try:
                if response.status_code != 200:
                    await response.aread()
                check_stream(response)
                lines = [line async for line in response.aiter_lines()]
            finally:
                await response.aclose()
        return frames(lines, on_first=on_first, raw=raw)

    def _send_call(self, text_or_message: Any, version: Any, params: dict[str, Any], *, stream: bool):
        """The client that sends (this one, or its twin for ``params``' ``agent``), the
        method, its params and the request's options."""
        agent = params.pop("agent", UNSET)
        if agent is not UNSET:
            return self.with_(agent=agent)._send_call(text_or_message, version, params, stream=stream)
        version = self.version if version is UNSET else version
        kwargs = {"version": version, **({"headers": params.pop("headers")} if "headers" in params else {})}
        method = SEND_METHODS["1.0" if version in V1 else "0.3"][stream]
        return self, method, send_params(text_or_message, version, **params), kwargs


def json_of(response: httpx.Response, status: int | None = None) -> Any:
    """A response's JSON body; with ``status``, AssertionError (with the body) unless the
    HTTP status is that."""
    if status is not None:
        assert response.status_code == status, (response.status_code, response.text)
    return response.json()


def result_of(envelope: Any) -> Any:
    """A JSON-RPC answer's ``result`` (AssertionError with the envelope when it is an error)."""
    assert isinstance(envelope, dict) and "result" in envelope, envelope
    return envelope["result"]
