"""The two bindings the client speaks, without I/O: each A2A operation as a :class:`Call`
(HTTP method, URL, body or query) and each answer, or SSE frame, as the canonical result.

:class:`JsonRpc` posts ``{"jsonrpc", "id", "method", "params"}`` to the interface URL
(method names of v1.0 or v0.3); :class:`Rest` addresses the operation by URL under the
interface URL (v0.3 puts ``/v1`` before each path). The params are rendered, and the
answers parsed, by the interface's dialect (:mod:`a2a.client.wire`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from a2a.client import wire
from a2a.client.card import Interface
from a2a.client.errors import CODE_OF, InvalidResponseError, RemoteAgentError, remote_error
from a2a.protocol import V1_VERSIONS
from a2a.protocol.model import Message, StreamItem, new_id


@dataclass(frozen=True)
class Operation:
    """An operation on the wire: its JSON-RPC method names (v1.0, v0.3), its HTTP+JSON
    verb and path (none: the path its call gives), and whether it changes the agent's
    state (then retried only when the request cannot have reached it: docs/client.md,
    "Retries")."""

    v10: str
    v03: str
    verb: str = "GET"
    path: str = ""
    write: bool = False


OPERATIONS = {
    "send": Operation("SendMessage", "message/send", "POST", "message:send", write=True),
    "stream": Operation("SendStreamingMessage", "message/stream", "POST", "message:stream", write=True),
    "get": Operation("GetTask", "tasks/get"),
    "list": Operation("ListTasks", "tasks/list"),
    "cancel": Operation("CancelTask", "tasks/cancel", "POST", write=True),
    "subscribe": Operation("SubscribeToTask", "tasks/resubscribe"),
    "push_set": Operation("CreateTaskPushNotificationConfig", "tasks/pushNotificationConfig/set", "POST", write=True),
    "push_get": Operation("GetTaskPushNotificationConfig", "tasks/pushNotificationConfig/get"),
    "push_list": Operation("ListTaskPushNotificationConfigs", "tasks/pushNotificationConfig/list"),
    "push_delete": Operation("DeleteTaskPushNotificationConfig", "tasks/pushNotificationConfig/delete", "DELETE"),
    "extended_card": Operation("GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"),
}


@dataclass
class Call:
    """One HTTP request of an operation, and how to read its answer."""

    operation: str
    method: str
    url: str
    parse: Callable[[Any], Any]
    json: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    stream: bool = False

    @property
    def write(self) -> bool:
        operation = OPERATIONS.get(self.operation)  # (the card's GET is no operation)
        return operation is not None and operation.write


class Binding:
    """The operations over one interface; subclasses place them on the wire."""

    def __init__(self, interface: Interface) -> None:
        self.interface = interface
        self.dialect = wire.dialect_of(interface.version, interface.binding)
        self.v10 = interface.version in V1_VERSIONS  # (1.1 is v1.0 with the generation)

    @property
    def headers(self) -> dict[str, str]:
        return {"A2A-Version": self.interface.version}

    def speak_v10_names(self, error: RemoteAgentError) -> bool:
        """Whether to send the operation again under its v1.0 method name after ``error``:
        only JSON-RPC knows method names (see :class:`JsonRpc`)."""
        return False

    def speak_v03_names(self) -> None:
        """Undo :meth:`speak_v10_names`."""

    def call(
        self, op: str, params: dict[str, Any], parse: Callable[[Any], Any], *, path: str = "", query: bool = False
    ) -> Call:
        raise NotImplementedError

    # --- operations ----------------------------------------------------------------------

    def send(self, message: Message, **config: Any) -> Call:
        d = self.dialect
        return self.call("send", wire.render_send(d, message, **config), lambda r: wire.parse_send_result(d, r))

    def stream(self, message: Message, **config: Any) -> Call:
        d = self.dialect
        call = self.call("stream", wire.render_send(d, message, **config), lambda r: wire.parse_event(d, r))
        call.stream = True
        return call

    def get(self, task_id: str, *, history_length: int | None = None, current_generation: int | None = None) -> Call:
        params: dict[str, Any] = {} if history_length is None else {"historyLength": history_length}
        if current_generation is not None:  # a long-poll (1.1): the agent answers once the task is past it
            params["currentGeneration"] = str(current_generation)
        return self._on_task("get", task_id, params, "", query=True)

    def cancel(self, task_id: str, *, metadata: dict[str, Any] | None = None) -> Call:
        return self._on_task("cancel", task_id, {"metadata": metadata} if metadata else {}, ":cancel")

    def subscribe(self, task_id: str) -> Call:
        d = self.dialect
        call = self.call(
            "subscribe", {"id": task_id}, lambda r: wire.parse_event(d, r), path=self._task(task_id, ":subscribe")
        )
        call.stream = True
        return call

    def _on_task(self, op: str, task_id: str, params: dict[str, Any], suffix: str, *, query: bool = False) -> Call:
        d = self.dialect
        return self.call(
            op,
            {"id": task_id, **params},
            lambda r: wire.parse_task_result(d, r),
            path=self._task(task_id, suffix),
            query=query,
        )

    def list(self, **query: Any) -> Call:
        d = self.dialect
        return self.call(
            "list", wire.render_list(d, **query), lambda r: wire.parse_list(d, r), path="tasks", query=True
        )

    def push_set(self, task_id: str, config: dict[str, Any]) -> Call:
        d = self.dialect
        params = wire.render_push_config(d, {**config, "taskId": task_id})
        path = self._task(task_id, "/pushNotificationConfigs")
        return self.call("push_set", params, lambda r: wire.parse_push_config(d, r), path=path)

    def push_get(self, task_id: str, config_id: str) -> Call:
        d = self.dialect
        path = self._task(task_id, f"/pushNotificationConfigs/{quote(config_id, safe='')}")
        return self.call(
            "push_get",
            self._config_ref(task_id, config_id),
            lambda r: wire.parse_push_config(d, r),
            path=path,
            query=True,
        )

    def push_list(self, task_id: str) -> Call:
        d = self.dialect
        params = {"taskId": task_id} if self.v10 else {"id": task_id}
        path = self._task(task_id, "/pushNotificationConfigs")
        return self.call("push_list", params, lambda r: wire.parse_push_list(d, r), path=path, query=True)

    def push_delete(self, task_id: str, config_id: str) -> Call:
        path = self._task(task_id, f"/pushNotificationConfigs/{quote(config_id, safe='')}")
        return self.call("push_delete", self._config_ref(task_id, config_id), lambda r: None, path=path, query=True)

    def extended_card(self) -> Call:
        return self.call("extended_card", {}, _card, path="extendedAgentCard" if self.v10 else "card", query=True)

    def _config_ref(self, task_id: str, config_id: str) -> dict[str, Any]:
        return (
            {"taskId": task_id, "id": config_id} if self.v10 else {"id": task_id, "pushNotificationConfigId": config_id}
        )

    @staticmethod
    def _task(task_id: str, suffix: str) -> str:
        return f"tasks/{quote(task_id, safe='')}{suffix}"

    # --- answers -------------------------------------------------------------------------

    def result(self, call: Call, status: int, body: Any) -> Any:
        """The canonical result of a (non-stream) answer; RemoteAgentError for an error."""
        raise NotImplementedError

    def event(self, call: Call, data: Any) -> StreamItem:
        """One SSE frame's JSON as a stream item; RemoteAgentError for an error frame."""
        raise NotImplementedError


def _card(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise InvalidResponseError("The agent's extended card is not a JSON object")
    return raw


class JsonRpc(Binding):
    """JSON-RPC 2.0 over HTTP POST to the interface URL.

    A v0.3 interface whose agent knows only the v1.0 method names (the toolnexus
    dialect: v0.3 payloads under ``SendMessage``, ``GetTask``...) answers a v0.3 name with
    Method not found: the client then speaks the v1.0 names with the same v0.3 payloads
    to it from there on (:meth:`speak_v10_names`)."""

    def __init__(self, interface: Interface) -> None:
        super().__init__(interface)
        self.v10_names = self.v10

    def speak_v10_names(self, error: RemoteAgentError) -> bool:
        if self.v10_names or error.code != -32601:
            return False
        self.v10_names = True
        return True

    def speak_v03_names(self) -> None:
        """Back to the v0.3 names: the agent refused the v1.0 ones too."""
        self.v10_names = self.v10

    def call(
        self, op: str, params: dict[str, Any], parse: Callable[[Any], Any], *, path: str = "", query: bool = False
    ) -> Call:
        method = OPERATIONS[op].v10 if self.v10_names else OPERATIONS[op].v03
        body = {"jsonrpc": "2.0", "id": new_id(), "method": method, "params": params}
        return Call(op, "POST", self.interface.url, parse, json=body)

    def result(self, call: Call, status: int, body: Any) -> Any:
        return call.parse(self._unwrap(call, body, status))

    def event(self, call: Call, data: Any) -> StreamItem:
        return call.parse(self._unwrap(call, data, 200))

    def _unwrap(self, call: Call, body: Any, status: int) -> Any:
        where = call.json["method"] if isinstance(call.json, dict) else call.operation
        if not isinstance(body, dict) or ("result" not in body and "error" not in body):
            raise InvalidResponseError(f"{where}: HTTP {status}, not a JSON-RPC response: {str(body)[:200]}")
        if body.get("error") is not None:
            error = body["error"] if isinstance(body["error"], dict) else {"message": body["error"]}  # not JSON-RPC's
            code = error.get("code")
            message = str(error.get("message") or "")
            raise remote_error(
                code if isinstance(code, int) else -32603,
                message,
                data=error.get("data"),
                http_status=status,
                where=where,
            )
        return body["result"]


class Rest(Binding):
    """HTTP+JSON: the operation in the URL and HTTP method, the params as body or query."""

    def call(
        self, op: str, params: dict[str, Any], parse: Callable[[Any], Any], *, path: str = "", query: bool = False
    ) -> Call:
        method = OPERATIONS[op].verb
        prefix = "" if self.v10 else "v1/"
        url = f"{self.interface.url.rstrip('/')}/{prefix}{OPERATIONS[op].path or path}"
        if method == "GET" or method == "DELETE":
            # The task (and config) are in the path; what is left goes in the query.
            rest = {k: v for k, v in params.items() if k not in ("id", "taskId", "pushNotificationConfigId")}
            return Call(op, method, url, parse, params=_query(rest) if query else {})
        body = {k: v for k, v in params.items() if k != "id"} if op == "cancel" else params
        if op == "push_set":
            body = {k: v for k, v in body.items() if k != "taskId"}
        return Call(op, method, url, parse, json=body)

    def result(self, call: Call, status: int, body: Any) -> Any:
        if status >= 400:
            raise self.error(call, status, body)
        return call.parse(body)

    def event(self, call: Call, data: Any) -> StreamItem:
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            raise self.error(call, 200, data)
        return call.parse(data)

    def error(self, call: Call, status: int, body: Any) -> RemoteAgentError:
        """A ``google.rpc.Status`` error body as the A2A error it names (its ErrorInfo
        ``reason``, or v0.3's ``type``)."""
        error = body.get("error") if isinstance(body, dict) else None
        where = f"{call.method} {call.url}"
        if not isinstance(error, dict):
            if isinstance(body, dict) and "code" in body and "message" in body:  # a JSON-RPC-style error object
                return remote_error(int(body["code"]), str(body["message"]), http_status=status, where=where)
            raise InvalidResponseError(f"{where}: HTTP {status}: {str(body)[:200]}")
        reasons = [d.get("reason") for d in error.get("details") or () if isinstance(d, dict)]
        code = next((CODE_OF[r] for r in [*reasons, body.get("type")] if r in CODE_OF), -32603)
        return remote_error(
            code, str(error.get("message") or body.get("message") or ""), data=error, http_status=status, where=where
        )


def _query(params: dict[str, Any]) -> dict[str, Any]:
    return {k: ("true" if v else "false") if isinstance(v, bool) else v for k, v in params.items()}


def binding_for(interface: Interface) -> Binding:
    """The binding of ``interface`` (JSON-RPC or HTTP+JSON)."""
    return (Rest if interface.binding == "HTTP+JSON" else JsonRpc)(interface)
