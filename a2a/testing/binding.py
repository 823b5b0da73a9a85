"""One test body over every binding and version: a :class:`Binding` is JSON-RPC or HTTP+JSON
in v1.0 or v0.3, on a :class:`~a2a.testing.client.WireClient`. Its operations are built
that binding's way and answered as the HTTP responses (or SSE frames); :meth:`Binding.result`
and :meth:`Binding.error` read them the same way whichever binding answered, so that a
test parametrized over the four checks one thing four times.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import httpx
import orjson

from a2a.client.bindings import OPERATIONS
from a2a.client.errors import CODE_OF
from a2a.testing.client import V1, WireClient, message, result_of, rpc_body, send_params

#: Each operation over HTTP+JSON: ``METHOD path``, the path under the version's prefix.
REST_ROUTES = {
    "send": "POST /message:send",
    "get": "GET /tasks/{id}",
    "list": "GET /tasks",
    "cancel": "POST /tasks/{id}:cancel",
    "stream": "POST /message:stream",
    "subscribe": "POST /tasks/{id}:subscribe",
    "push_set": "POST /tasks/{taskId}/pushNotificationConfigs",
    "push_get": "GET /tasks/{taskId}/pushNotificationConfigs/{configId}",
    "push_list": "GET /tasks/{taskId}/pushNotificationConfigs",
    "push_delete": "DELETE /tasks/{taskId}/pushNotificationConfigs/{configId}",
}
#: The JSON data of the frames of an SSE stream.
Frames = list[Any]


@dataclasses.dataclass(frozen=True)
class WireError:
    """An error answer, read the same way whatever the binding: the HTTP status, the
    JSON-RPC code (HTTP+JSON's reason mapped to it), the message, the fields its
    violations name, and the whole body as answered."""

    status: int
    code: int
    message: str
    fields: list[str]
    body: Any


@dataclasses.dataclass(frozen=True)
class Binding:
    """One binding (``"jsonrpc"`` or ``"rest"``) in one version, sent by ``client``: the
    operations (``send``, ``get``, ``list``, ``cancel``) built that binding's way and
    answered as HTTP responses, which :meth:`result` and :meth:`error` read the same way
    for every binding, so that one test body runs over all of them. ``version`` as
    :class:`WireClient`'s (``None``: v0.3 without the ``A2A-Version`` header)."""

    name: str
    version: str | None = "1.0"
    client: WireClient = dataclasses.field(default_factory=WireClient)

    def __str__(self) -> str:
        return f"{self.name}-{self.version or '0.3'}"

    @property
    def v10(self) -> bool:
        return self.version in V1

    @property
    def v03_rest(self) -> bool:
        """HTTP+JSON v0.3: the ProtoJSON of v0.3's gRPC messages (``content``, ``ROLE_USER``,
        ``TASK_STATE_COMPLETED``)."""
        return self.name == "rest" and not self.v10

    # --- Building ------------------------------------------------------------------------

    def message(self, *texts: str, **extra: Any) -> dict[str, Any]:
        """A user message with a text part for each of ``texts``, in this binding's shape
        (HTTP+JSON v0.3 has the proto Message's ``content``; ``extra`` adds fields)."""
        if self.v03_rest:
            return {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "content": [{"text": t} for t in texts],
                **extra,
            }
        first = message(texts[0] if texts else "", self.version)
        return {**first, "parts": [{**first["parts"][0], "text": text} for text in texts], **extra}

    def state(self, state: str) -> str:
        """A state (``"input-required"``) as this binding and version write it."""
        return f"TASK_STATE_{state.upper().replace('-', '_')}" if self.v10 or self.v03_rest else state

    def body(self, params: Mapping[str, Any]) -> bytes:
        """The body of a ``SendMessage`` with ``params``, as :meth:`post` sends it."""
        if self.name == "rest":
            return orjson.dumps(params)
        return orjson.dumps(rpc_body(self._method("send"), params))

    # --- Operations ----------------------------------------------------------------------

    def send(
        self, text_or_message: str | Mapping[str, Any], *, headers: Mapping[str, str] | None = None, **params: Any
    ) -> httpx.Response:
        """``SendMessage`` of a text (a message of this binding's shape) or a message;
        ``params`` as :func:`send_params`' (``task_id``, ``context_id``, ``blocking`` ...)."""
        msg = self.message(text_or_message) if isinstance(text_or_message, str) else text_or_message
        return self.call("send", send_params(msg, self.version, **params), headers)

    def post(self, content: Any, *, headers: Mapping[str, str] | None = None) -> httpx.Response:
        """A ``SendMessage`` body sent as it is (bytes, or an async iterator of them: no
        Content-Length), as ``application/json``: a body of an exact size, a chunked one."""
        path = (
            self.client.jsonrpc_path()
            if self.name == "jsonrpc"
            else self.client.rest_path("/message:send", self.version)
        )
        headers = {"Content-Type": "application/json", **(headers or {})}
        return self.client.request("POST", path, content=content, version=self.version, headers=headers)

    def get(self, task_id: str, *, headers: Mapping[str, str] | None = None, **params: Any) -> httpx.Response:
        """``GetTask`` (``params``: ``historyLength``)."""
        return self.call("get", {"id": task_id, **params}, headers)

    def list(self, *, headers: Mapping[str, str] | None = None, **params: Any) -> httpx.Response:
        """``ListTasks`` (``params``: ``contextId``, ``pageSize`` ...)."""
        return self.call("list", params, headers)

    def cancel(self, task_id: str, *, headers: Mapping[str, str] | None = None) -> httpx.Response:
        """``CancelTask``."""
        return self.call("cancel", {"id": task_id}, headers)

    def create_push_config(
        self, task_id: str, config: Mapping[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> httpx.Response:
        """``CreateTaskPushNotificationConfig`` of ``config`` (``url``, ``token`` ...) on the
        task: v1.0's JSON-RPC params hold its fields, v0.3's hold it as ``pushNotificationConfig``."""
        if self.name == "rest":
            return self.call("push_set", {**config, "taskId": task_id}, headers)
        fields = dict(config) if self.v10 else {"pushNotificationConfig": dict(config)}
        return self.call("push_set", {"taskId": task_id, **fields}, headers)

    def get_push_config(
        self, task_id: str, config_id: str, *, headers: Mapping[str, str] | None = None
    ) -> httpx.Response:
        """``GetTaskPushNotificationConfig``."""
        return self._on_config("push_get", task_id, config_id, headers)

    def list_push_configs(self, task_id: str, *, headers: Mapping[str, str] | None = None) -> httpx.Response:
        """``ListTaskPushNotificationConfigs`` (v0.3's JSON-RPC names the task ``id``)."""
        return self.call("push_list", {"id" if self.name == "jsonrpc" and not self.v10 else "taskId": task_id}, headers)

    def delete_push_config(
        self, task_id: str, config_id: str, *, headers: Mapping[str, str] | None = None
    ) -> httpx.Response:
        """``DeleteTaskPushNotificationConfig``."""
        return self._on_config("push_delete", task_id, config_id, headers)

    def _on_config(
        self, operation: str, task_id: str, config_id: str, headers: Mapping[str, str] | None
    ) -> httpx.Response:
        if self.name == "rest":
            return self.call(operation, {"taskId": task_id, "configId": config_id}, headers)
        if self.v10:
            return self.call(operation, {"taskId": task_id, "id": config_id}, headers)
        return self.call(operation, {"id": task_id, "pushNotificationConfigId": config_id}, headers)

    def send_stream(
        self,
        text_or_message: str | Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        on_first: Callable[[], Any] | None = None,
        **params: Any,
    ) -> Frames:
        """``SendStreamingMessage``: every SSE frame as sent (in JSON-RPC each a response
        envelope), until the server ends the stream (``on_first`` and ``params`` as
        :meth:`WireClient.stream` and :meth:`send`)."""
        msg = self.message(text_or_message) if isinstance(text_or_message, str) else text_or_message
        return self.stream("stream", send_params(msg, self.version, **params), headers, on_first=on_first)

    def subscribe(
        self, task_id: str, *, headers: Mapping[str, str] | None = None, on_first: Callable[[], Any] | None = None
    ) -> Frames:
        """``SubscribeToTask`` (``tasks/resubscribe`` in v0.3): every SSE frame as sent."""
        return self.stream("subscribe", {"id": task_id}, headers, on_first=on_first)

    def call(self, operation: str, params: Mapping[str, Any], headers: Mapping[str, str] | None) -> httpx.Response:
        """``operation`` (a key of :data:`REST_ROUTES`) with ``params``: in JSON-RPC the
        version's method; in HTTP+JSON the route, the params it names (``{id}``,
        ``{taskId}``) in its path and the others the body of a POST or the query of a GET."""
        method, path, kwargs = self._request(operation, params, headers)
        return self.client.request(method, path, **kwargs)

    def stream(
        self, operation: str, params: Mapping[str, Any], headers: Mapping[str, str] | None, **options: Any
    ) -> Frames:
        """A streaming ``operation`` (as :meth:`call`): every SSE frame, once the stream ends."""
        method, path, kwargs = self._request(operation, params, headers)
        return self.client.stream(method, path, **kwargs, **options)

    def _method(self, operation: str) -> str:
        """``operation``'s JSON-RPC method name in this binding's version."""
        return OPERATIONS[operation].v10 if self.v10 else OPERATIONS[operation].v03

    def _request(
        self, operation: str, params: Mapping[str, Any], headers: Mapping[str, str] | None
    ) -> tuple[str, str, dict[str, Any]]:
        kwargs: dict[str, Any] = {"version": self.version, "headers": headers}
        if self.name == "jsonrpc":
            kwargs["json"] = rpc_body(self._method(operation), dict(params))
            return "POST", self.client.jsonrpc_path(), kwargs
        method, route = REST_ROUTES[operation].split(" ", 1)
        rest = dict(params)
        route = re.sub(r"\{(\w+)\}", lambda name: quote(rest.pop(name[1]), safe=""), route)
        if method == "POST":
            kwargs["json"] = rest
        elif rest:
            kwargs["params"] = rest
        return method, self.client.rest_path(route, self.version), kwargs

    # --- Answers -------------------------------------------------------------------------

    def result(self, response: httpx.Response) -> Any:
        """A successful answer's result (a ``SendMessage``'s ``{"task": ...}`` unwrapped);
        AssertionError with the answer otherwise."""
        assert response.status_code == 200, (response.status_code, response.text[:500])
        body = response.json()
        if self.name == "jsonrpc":
            body = result_of(body)
        return body["task"] if isinstance(body, dict) and set(body) == {"task"} else body

    def error(self, response: httpx.Response) -> WireError:
        """An error answer, read (AssertionError with the answer unless it is one): a
        JSON-RPC ``error``, or an HTTP+JSON ``google.rpc.Status`` whose ``code`` is the
        HTTP status and whose first detail's ``reason`` names the error."""
        body = response.json()
        if self.name == "jsonrpc":
            assert isinstance(body, dict) and "error" in body, (response.status_code, body)
            error = body["error"]
            data = error.get("data")
            fields = [data["field"]] if isinstance(data, dict) and "field" in data else _violations(data)
            return WireError(response.status_code, error["code"], error["message"], fields, body)
        assert response.status_code >= 400, (response.status_code, body)
        error = body["error"]
        assert error["code"] == response.status_code, body
        details = error["details"]
        return WireError(
            response.status_code, CODE_OF[details[0]["reason"]], error["message"], _violations(details), body
        )


def _violations(details: Any) -> list[str]:
    """The fields the ``fieldViolations`` of a list of error details name."""
    if not isinstance(details, list):
        return []
    return [v["field"] for detail in details if "fieldViolations" in detail for v in detail["fieldViolations"]]
