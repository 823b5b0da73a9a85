"""A2A v0.3 HTTP+JSON: the ProtoJSON of v0.3's gRPC messages (its ``a2a.proto``).

Not v0.3's JSON-RPC shape: enums are ``TASK_STATE_*`` / ``ROLE_*`` names as in v1.0,
but a Message's parts are its ``content``, a file part is ``{"file": {"fileWithUri" |
"fileWithBytes", "mimeType", "name"}}``, a data part ``{"data": {"data": {...}}}``, the
canceled state is spelled ``TASK_STATE_CANCELLED``, status updates carry ``final``,
SendMessage waits on ``configuration.blocking``, and a push config is
``{"name": "tasks/{id}/pushNotificationConfigs/{configId}", "pushNotificationConfig"}``.
Everything else (tasks, statuses, artifacts, the ``task`` / ``message`` wrappers of
SendMessageResponse and StreamResponse) is v1.0's ProtoJSON, so this dialect is v1.0's
with those leaves overridden. Parsing takes the lowerCamelCase JSON names and the proto
field names alike (the SDK's v0.3 REST client sends ``request``, ``message_id``,
``push_notification``...), as ProtoJSON parsers do.

``version`` is "0.3": the card, the extended card and push deliveries are v0.3's.

``fileWithBytes`` is a proto ``bytes`` field, so its JSON is the base64 of the file's
bytes, as a2a.proto says. (The official Python SDK's v0.3 conversions base64-encode
the base64 text once more, both ways; a file part's bytes from that client arrive as
its base64 text. Followed here is the proto, which other implementations follow.)
"""

from __future__ import annotations

from typing import Any

from a2a.protocol.errors import InvalidParamsError
from a2a.protocol.model import Part, PushConfigParams, SendParams, StreamItem, pick, want_bool, want_object, want_string
from a2a.protocol.v03 import V03Dialect, at, check_base64, check_text, want_id
from a2a.protocol.v10 import V10Dialect

#: v0.3's proto spells the canceled state with two Ls (v1.0 fixed it).
CANCELLED = "TASK_STATE_CANCELLED"
_PART_CONTENT = ("text", "file", "data")


class V03RestDialect(V10Dialect):
    """Parse and render v0.3 HTTP+JSON bodies."""

    version = "0.3"
    message_parts = "content"
    #: v0.3's proto Message has no referenceTaskIds (strict ProtoJSON parsers, as the
    #: a2a-sdk 0.3 client's, refuse an unknown field).
    message_keys = ("contextId", "taskId", "metadata", "extensions")
    #: ``configuration.pushNotification`` (v0.3 JSON-RPC's ``pushNotificationConfig`` too).
    send_push_config_keys = ("pushNotification", "pushNotificationConfig")
    file_fields = {"bytes": "fileWithBytes", "uri": "fileWithUri", "mimeType": "mimeType", "name": "name"}

    # --- leaf conversions ------------------------------------------------------------

    def parse_state(self, value: Any, path: str) -> str:
        return "canceled" if value == CANCELLED else super().parse_state(value, path)

    def render_state(self, state: str) -> str:
        return CANCELLED if state == "canceled" else super().render_state(state)

    def parse_part(self, raw: Any, path: str) -> Part:
        """A v0.3 proto Part: exactly one of ``text``, ``file`` (a FilePart) or ``data``
        (a DataPart, whose ``data`` is the object)."""
        raw = want_object(raw, path)
        present = [k for k in _PART_CONTENT if k in raw]
        if len(present) != 1:
            raise InvalidParamsError("a part needs exactly one of text, file or data", field=path)
        kind = present[0]
        part: Part
        if kind == "text":
            part = {"kind": "text", "text": check_text(raw["text"], f"{path}.text")}
        elif kind == "file":
            part = {"kind": "file", "file": self._parse_file(raw["file"], f"{path}.file")}
        else:
            data = want_object(raw["data"], f"{path}.data")
            value = data.get("data", {})  # an empty Struct may be left out
            part = {"kind": "data", "data": want_object(value, f"{path}.data.data")}
        if raw.get("metadata") is not None:
            part["metadata"] = want_object(raw["metadata"], f"{path}.metadata")
        return part

    def _parse_file(self, raw: Any, path: str) -> dict[str, Any]:
        raw = want_object(raw, path)
        uri, data = pick(raw, "fileWithUri"), pick(raw, "fileWithBytes")
        if (uri is None) == (data is None):
            raise InvalidParamsError("a file needs exactly one of fileWithUri or fileWithBytes", field=path)
        file: dict[str, Any] = (
            {"uri": want_string(uri, f"{path}.fileWithUri", max_length=8192)}
            if uri is not None
            else {"bytes": check_base64(data, f"{path}.fileWithBytes")}
        )
        for key in ("mimeType", "name"):
            value = want_string(pick(raw, key), f"{path}.{key}", required=False)
            if value:
                file[key] = value
        return file

    def render_file(self, file: dict[str, Any]) -> dict[str, Any]:
        return {"file": super().render_file(file)}

    def render_data(self, data: Any) -> dict[str, Any]:
        # A Struct holds an object only: any other value goes under "value", as the
        # SDK's v0.3 conversions put it.
        return {"data": {"data": data if isinstance(data, dict) else {"value": data}}}

    # --- operation parameters --------------------------------------------------------

    def parse_send(self, params: Any) -> SendParams:
        """SendMessageRequest: the message under its JSON name ``message`` or its proto
        name ``request``."""
        params = want_object(params, "params")
        if "message" not in params and "request" in params:
            params = {**params, "message": params["request"]}
        return super().parse_send(params)

    def parse_blocking(self, config: dict[str, Any], *, given: bool = True) -> bool:
        # A proto3 bool: absent is false, so a configuration without "blocking" does not
        # wait; a request with no configuration waits (both as the SDK's v0.3 server).
        if not given:
            return True
        return bool(want_bool(config.get("blocking"), "configuration.blocking"))

    # --- push notification configs -------------------------------------------------

    #: v0.3's AuthenticationInfo: ``{schemes: [...], credentials?}``.
    parse_push_authentication = V03Dialect.parse_push_authentication

    def parse_push_create(self, params: Any) -> PushConfigParams:
        """The body of ``POST /v1/tasks/{id}/pushNotificationConfigs`` (``taskId`` added
        from the path): the spec's ``{config: TaskPushNotificationConfig}``, what the
        SDK sends (a CreateTaskPushNotificationConfigRequest: ``{parent, configId,
        config}``), or the TaskPushNotificationConfig itself (a2a.proto's ``body:
        "config"``); a bare PushNotificationConfig is taken too."""
        params = want_object(params, "params")
        task_id = want_id(pick(params, "taskId"), "taskId")
        assert task_id is not None
        path = "config" if "config" in params else ""
        config = want_object(params["config"], path) if path else params
        inner = pick(config, "pushNotificationConfig")
        if inner is None and "url" in config:
            parsed = self.parse_push_config(config, path, task_id=task_id)
        else:
            parsed = self.parse_push_config(inner, at(path, "pushNotificationConfig"), task_id=task_id)
        if parsed.id is None:
            parsed.id = self.parse_push_config_id(params, "configId", required=False)
        return parsed

    def render_push_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """A TaskPushNotificationConfig: ``{name, pushNotificationConfig: {id, url, ...}}``."""
        out = V03Dialect.render_push_config(self, config)
        task_id = out.pop("taskId")
        return {"name": f"tasks/{task_id}/pushNotificationConfigs/{config['id']}", **out}

    # --- results -------------------------------------------------------------------

    def render_stream_item(self, item: StreamItem) -> dict[str, Any]:
        """A StreamResponse; a status update says whether it is the last (``final``)."""
        out = super().render_stream_item(item)
        if "statusUpdate" in out:
            out["statusUpdate"]["final"] = item.final
        return out
