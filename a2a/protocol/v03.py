"""A2A v0.3 JSON (and the toolnexus dialect, which sends it under v1.0 method names).

The canonical shape *is* the v0.3 shape, so rendering is close to the identity; the
work here is validating what comes in. :class:`V10Dialect` subclasses this and
overrides the leaf conversions (states, roles, parts) and the result wrappers.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any
from urllib.parse import urlsplit

from a2a.protocol import limits
from a2a.protocol.errors import A2AError, InvalidParamsError
from a2a.protocol.model import (
    CancelParams,
    GetParams,
    ListParams,
    Message,
    Part,
    PushConfigListParams,
    PushConfigParams,
    PushConfigRef,
    SendParams,
    StreamItem,
    Task,
    json_type,
    pick,
    shown,
    want_bool,
    want_int,
    want_object,
    want_string,
    want_string_list,
    with_history,
    with_item_metadata,
)
from stores.base import STATES
from stores.timestamps import parse_timestamp


def want_id(value: Any, path: str, *, required: bool = True) -> str | None:
    """A task, context, message or push config id: at most ``A2A_MAX_ID_LENGTH`` characters,
    without U+0000, which no id the server makes holds and a database column cannot
    (PostgreSQL refuses it): refused as invalid params on every store, a lookup too."""
    value = want_string(value, path, required=required, max_length=limits.max_id_length(), setting="A2A_MAX_ID_LENGTH")
    if value and "\x00" in value:
        raise InvalidParamsError("must not contain the NUL character (U+0000)", field=path)
    return value


def check_text(text: Any, path: str) -> str:
    """The text of a text part: a string of at most ``A2A_MAX_TEXT_LENGTH`` characters."""
    if not isinstance(text, str):
        raise InvalidParamsError("must be a string", field=path)
    limit = limits.max_text_length()
    if len(text) > limit:
        raise InvalidParamsError(
            f"is {len(text)} characters long; at most {limit} are allowed (the A2A_MAX_TEXT_LENGTH setting)",
            field=path,
        )
    return text


class V03Dialect:
    """Parse requests into canonical objects and render canonical objects, v0.3 style."""

    version = "0.3"
    roles: dict[str | int, str] = {"user": "user", "agent": "agent"}
    #: The key of a Message's parts (v0.3's gRPC Message calls them ``content``).
    message_parts = "parts"
    #: Where a send's configuration may hold a push notification config, first one first.
    send_push_config_keys: tuple[str, ...] = ("pushNotificationConfig",)

    # --- leaf conversions (overridden by v1.0) ---------------------------------

    def parse_role(self, value: Any, path: str) -> str:
        role = self.roles.get(value) if isinstance(value, str | int) and not isinstance(value, bool) else None
        if role is None:
            expected = ", ".join(f'"{r}"' for r in self.roles if isinstance(r, str))
            raise InvalidParamsError(f"must be one of {expected}", field=path)
        return role

    def parse_state(self, value: Any, path: str) -> str:
        if value not in STATES:
            raise InvalidParamsError(f"unknown task state {shown(value)}", field=path)
        return value

    def parse_part(self, raw: Any, path: str) -> Part:
        raw = want_object(raw, path)
        kind = raw.get("kind") or next((k for k in ("text", "file", "data") if k in raw), None)
        part: Part
        if kind == "text":
            text = raw.get("text")
            if not isinstance(text, str):
                raise InvalidParamsError("a text part needs a string 'text'", field=f"{path}.text")
            part = {"kind": "text", "text": check_text(text, f"{path}.text")}
        elif kind == "file":
            f = want_object(raw.get("file"), f"{path}.file")
            file: dict[str, Any] = {}
            if "bytes" in f:
                file["bytes"] = check_base64(f["bytes"], f"{path}.file.bytes")
            elif "uri" in f:
                file["uri"] = want_string(f["uri"], f"{path}.file.uri", max_length=8192)
            else:
                raise InvalidParamsError("a file needs 'bytes' or 'uri'", field=f"{path}.file")
            for key in ("mimeType", "name"):
                if f.get(key) is not None:
                    file[key] = want_string(f[key], f"{path}.file.{key}")
            part = {"kind": "file", "file": file}
        elif kind == "data":
            if "data" not in raw:
                raise InvalidParamsError("a data part needs 'data'", field=f"{path}.data")
            part = {"kind": "data", "data": raw["data"]}
        else:
            raise InvalidParamsError('must be a text, file or data part (kind "text", "file" or "data")', field=path)
        if raw.get("metadata") is not None:
            part["metadata"] = want_object(raw["metadata"], f"{path}.metadata")
        return part

    def render_part(self, part: Part) -> dict[str, Any]:
        return part

    def render_state(self, state: str) -> str:
        return state

    def render_role(self, role: str) -> str:
        return role

    # --- messages and tasks ------------------------------------------------------

    def parse_message(self, raw: Any, path: str = "message") -> Message:
        raw = want_object(raw, path)
        if raw.get("kind") not in (None, "message"):
            raise InvalidParamsError('must have kind "message"', field=f"{path}.kind")
        key = self.message_parts
        parts = raw.get(key)
        if not isinstance(parts, list) or not parts:
            raise InvalidParamsError("at least one part is required", field=f"{path}.{key}")
        if len(parts) > limits.max_parts():
            raise InvalidParamsError(
                f"has {len(parts)} parts; at most {limits.max_parts()} are allowed (the A2A_MAX_PARTS setting)",
                field=f"{path}.{key}",
            )
        message: Message = {
            "kind": "message",
            "messageId": want_id(pick(raw, "messageId"), f"{path}.messageId"),
            "role": self.parse_role(raw.get("role"), f"{path}.role"),
            "parts": [self.parse_part(p, f"{path}.{key}[{i}]") for i, p in enumerate(parts)],
        }
        for key in ("contextId", "taskId"):
            value = want_id(pick(raw, key), f"{path}.{key}", required=False)
            if value:
                message[key] = value
        if raw.get("metadata") is not None:
            message["metadata"] = want_object(raw["metadata"], f"{path}.metadata")
        for key in ("extensions", "referenceTaskIds"):
            values = want_string_list(pick(raw, key), f"{path}.{key}")
            if values:
                message[key] = values
        return message

    def render_message(self, message: Message) -> dict[str, Any]:
        return message

    def render_task(self, task: Task, history_length: int | None = None) -> dict[str, Any]:
        task = with_history(task, history_length)
        return {**{k: v for k, v in task.items() if not k.startswith("_")}, "kind": "task"}

    # --- operation parameters ----------------------------------------------------

    def parse_send(self, params: Any) -> SendParams:
        params = want_object(params, "params")
        message = self.parse_message(params.get("message"))
        given = params.get("configuration")
        config = want_object(given, "configuration") if given is not None else {}
        metadata = params.get("metadata")
        return SendParams(
            message=message,
            blocking=self.parse_blocking(config, given=given is not None),
            history_length=want_int(pick(config, "historyLength"), "configuration.historyLength", minimum=0),
            accepted_output_modes=want_string_list(
                pick(config, "acceptedOutputModes"), "configuration.acceptedOutputModes"
            ),
            metadata=want_object(metadata, "metadata") if metadata is not None else None,
            push_config=self.parse_send_push_config(config),
        )

    def parse_blocking(self, config: dict[str, Any], *, given: bool = True) -> bool:
        """Whether SendMessage waits for the task to settle (``given``: whether the
        request had a configuration at all)."""
        # v0.3: "blocking": true means wait; absent means wait (as the v0.3 SDK does).
        blocking = want_bool(config.get("blocking"), "configuration.blocking")
        return True if blocking is None else blocking

    def parse_task_id(self, params: dict[str, Any], key: str = "id") -> str:
        value = want_id(params.get(key), key)
        assert value is not None
        return value

    def parse_get(self, params: Any) -> GetParams:
        params = want_object(params, "params")
        return GetParams(
            id=self.parse_task_id(params),
            history_length=want_int(pick(params, "historyLength"), "historyLength", minimum=0),
        )

    def parse_cancel(self, params: Any) -> CancelParams:
        params = want_object(params, "params")
        metadata = params.get("metadata")
        return CancelParams(
            id=self.parse_task_id(params),
            metadata=want_object(metadata, "metadata") if metadata is not None else None,
        )

    def parse_list(self, params: Any) -> ListParams:
        params = want_object(params if params is not None else {}, "params")
        state = pick(params, "status")
        after = pick(params, "statusTimestampAfter")
        if after is not None:
            try:
                after = parse_timestamp(want_string(after, "statusTimestampAfter") or "")
            except ValueError:
                raise InvalidParamsError("must be an ISO 8601 timestamp", field="statusTimestampAfter") from None
        page_size = want_int(
            pick(params, "pageSize"), "pageSize", minimum=1, maximum=limits.max_page_size(), setting="A2A_MAX_PAGE_SIZE"
        )
        include = want_bool(pick(params, "includeArtifacts"), "includeArtifacts")
        return ListParams(
            context_id=want_id(pick(params, "contextId"), "contextId", required=False) or None,
            state=self.parse_state(state, "status") if state not in (None, "") else None,
            updated_after=after,
            page_size=page_size or limits.default_page_size(),
            page_token=want_string(pick(params, "pageToken"), "pageToken", required=False, max_length=4096) or None,
            history_length=want_int(pick(params, "historyLength"), "historyLength", minimum=0),
            include_artifacts=bool(include),
        )

    # --- results -----------------------------------------------------------------

    def render_stream_item(self, item: StreamItem) -> dict[str, Any]:
        """One stream event: v0.3 events carry ``kind``; the last status has ``final``."""
        if item.kind == "message":
            assert item.message is not None
            return with_item_metadata(self.render_message(item.message), item)
        task = item.task
        assert task is not None
        if item.kind == "task":
            return with_item_metadata(self.render_task(task), item)
        ids = {"taskId": task["id"], "contextId": task.get("contextId", "")}
        if item.kind == "artifact":
            assert item.artifact is not None
            update = {
                "kind": "artifact-update",
                **ids,
                "artifact": item.artifact,
                "append": item.append,
                "lastChunk": item.last_chunk,
            }
            return with_item_metadata(update, item)
        return with_item_metadata({"kind": "status-update", **ids, "status": task["status"], "final": item.final}, item)

    def render_send_result(self, result: Task | Message) -> dict[str, Any]:
        """v0.3: the bare Task (or Message), as toolnexus clients read ``result.id``."""
        if result.get("kind") == "message":
            return self.render_message(result)
        return self.render_task(result)

    def render_list(self, tasks: list[dict[str, Any]], next_page_token: str, page_size: int, total: int) -> Any:
        return {"tasks": tasks, "nextPageToken": next_page_token, "pageSize": page_size, "totalSize": total}

    def render_error(self, error: A2AError) -> dict[str, Any]:
        body: dict[str, Any] = {"code": error.code, "message": error.message}
        field = getattr(error, "field", None)
        if field:
            body["data"] = {"field": field, "description": error.description}  # type: ignore[attr-defined]
        return body

    # --- push notification configs -------------------------------------------------

    def parse_push_config(self, raw: Any, path: str, *, task_id: str = "") -> PushConfigParams:
        """A PushNotificationConfig (v0.3) or the config fields of a TaskPushNotificationConfig
        (v1.0) at ``path`` ("" for the params themselves)."""
        raw = want_object(raw, path or "params")
        url = want_string(raw.get("url"), at(path, "url"), max_length=MAX_URL_LENGTH)
        assert url is not None
        check_webhook_url(url, at(path, "url"))
        return PushConfigParams(
            task_id=task_id,
            url=url,
            id=check_unicode(want_id(raw.get("id"), at(path, "id"), required=False), at(path, "id")) or None,
            token=want_header_value(raw.get("token"), at(path, "token")),
            authentication=self.parse_push_authentication(raw.get("authentication"), at(path, "authentication")),
            dialect=self.version,
        )

    def parse_push_authentication(self, raw: Any, path: str) -> dict[str, Any] | None:
        """v0.3 ``{"schemes": [...], "credentials"?}`` (a v1.0 ``scheme`` is taken too).

        An empty object (as v0.3 clients send for a config without authentication, the
        ProtoJSON of an empty ``AuthenticationInfo`` too) is no authentication."""
        if raw is None:
            return None
        raw = want_object(raw, path)
        if not raw:
            return None
        if raw.get("schemes") is None and raw.get("scheme") is not None:
            schemes = [want_string(raw["scheme"], f"{path}.scheme")]
        else:
            if not isinstance(raw.get("schemes"), list):
                raise InvalidParamsError("is required and must be a list of strings", field=f"{path}.schemes")
            schemes = want_string_list(raw["schemes"], f"{path}.schemes")
        return push_authentication(schemes, raw.get("credentials"), path, schemes_field=f"{path}.schemes")

    def parse_send_push_config(self, config: dict[str, Any]) -> PushConfigParams | None:
        """A send's push notification config, under the first of :attr:`send_push_config_keys`
        the configuration has."""
        for key in self.send_push_config_keys:
            raw = pick(config, key)
            if raw is not None:
                return self.parse_push_config(raw, f"configuration.{key}")
        return None

    def parse_push_create(self, params: Any) -> PushConfigParams:
        """``tasks/pushNotificationConfig/set``: ``{taskId, pushNotificationConfig}``."""
        params = want_object(params, "params")
        task_id = want_id(pick(params, "taskId"), "taskId")
        assert task_id is not None
        raw = pick(params, "pushNotificationConfig")
        return self.parse_push_config(raw, "pushNotificationConfig", task_id=task_id)

    def parse_push_config_id(self, params: dict[str, Any], key: str, *, required: bool) -> str | None:
        return check_unicode(want_id(pick(params, key), key, required=required), key) or None

    def parse_push_get(self, params: Any) -> PushConfigRef:
        """``{id: task id, pushNotificationConfigId?}``; without one, the task's first config."""
        params = want_object(params, "params")
        return PushConfigRef(
            task_id=self.parse_task_id(params),
            id=self.parse_push_config_id(params, "pushNotificationConfigId", required=False),
        )

    def parse_push_list(self, params: Any) -> PushConfigListParams:
        params = want_object(params, "params")
        return PushConfigListParams(task_id=self.parse_task_id(params))

    def parse_push_delete(self, params: Any) -> PushConfigRef:
        params = want_object(params, "params")
        return PushConfigRef(
            task_id=self.parse_task_id(params),
            id=self.parse_push_config_id(params, "pushNotificationConfigId", required=True),
        )

    def render_push_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """A TaskPushNotificationConfig: ``{taskId, pushNotificationConfig: {id, url, ...}}``."""
        inner: dict[str, Any] = {"id": config["id"], "url": config["url"]}
        if config.get("token"):
            inner["token"] = config["token"]
        auth = config.get("authentication")
        if auth:
            inner["authentication"] = {
                "schemes": list(auth.get("schemes") or ()),
                **({"credentials": auth["credentials"]} if auth.get("credentials") else {}),
            }
        return {"taskId": config["taskId"], "pushNotificationConfig": inner}

    def render_push_list(self, configs: list[dict[str, Any]], next_page_token: str) -> Any:
        """v0.3: a bare array of TaskPushNotificationConfig."""
        return [self.render_push_config(c) for c in configs]

    def render_push_deleted(self) -> Any:
        return None


def check_base64(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise InvalidParamsError(f"must be a base64 string, not {json_type(value)}", field=path)
    # Checked a slice at a time, never decoded whole (a file part may be tens of MB):
    # the same answer as decoding it all, since padding may only end the string.
    if len(value) % 4 or "=" in value[:-2]:
        raise InvalidParamsError("is not valid base64", field=path)
    try:
        for at in range(0, len(value), _BASE64_SLICE):
            base64.b64decode(value[at : at + _BASE64_SLICE], validate=True)
    except (binascii.Error, ValueError):
        raise InvalidParamsError("is not valid base64", field=path) from None
    return value


#: Base64 characters checked at a time (a multiple of 4).
_BASE64_SLICE = 1 << 20


MAX_URL_LENGTH = 2048
#: An HTTP authentication scheme name (RFC 9110 token).
_SCHEME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
#: What a header value may hold: visible ASCII, spaces and tabs (no CR, LF or NUL).
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")


def at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def check_webhook_url(url: str, path: str) -> None:
    """An absolute http(s) URL with a host (where it resolves is checked later, by a2a.push)."""
    check_unicode(url, path)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a bad port)
    except ValueError:
        raise InvalidParamsError("is not a valid URL", field=path) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InvalidParamsError("must be an absolute http:// or https:// URL", field=path)


def check_unicode(value: str | None, path: str) -> str | None:
    """``value``, unless it holds a lone surrogate (which no store or JSON encoder takes)."""
    if value:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidParamsError("is not valid Unicode (it holds a lone surrogate)", field=path) from None
    return value


def want_header_value(value: Any, path: str) -> str | None:
    """An optional string that can travel in an HTTP header."""
    value = want_string(value, path, required=False, max_length=4096)
    if value and not _HEADER_VALUE.fullmatch(value):
        raise InvalidParamsError("may hold only printable ASCII characters", field=path)
    return value or None


def push_authentication(schemes: list[Any], credentials: Any, path: str, *, schemes_field: str) -> dict[str, Any]:
    """Canonical push authentication: ``{"schemes": [...], "credentials"?}``, each checked."""
    for i, scheme in enumerate(schemes):
        if not isinstance(scheme, str) or not _SCHEME.fullmatch(scheme):
            field = schemes_field if schemes_field.endswith(".scheme") else f"{schemes_field}[{i}]"
            raise InvalidParamsError("is not an HTTP authentication scheme name (e.g. Bearer)", field=field)
    auth: dict[str, Any] = {"schemes": list(schemes)}
    credentials = want_header_value(credentials, f"{path}.credentials")
    if credentials:
        auth["credentials"] = credentials
    return auth


#: The v0.3 method names whose params are shaped differently in v1.0, so that a payload
#: tells which version it is (:func:`v10_shaped`).
V10_SHAPEABLE = frozenset({"message/send", "message/stream", "tasks/pushNotificationConfig/set"})
#: The roles of a v1.0 Message (ProtoJSON enum names and numbers), which v0.3 has not.
V10_ROLES = frozenset({"ROLE_USER", "ROLE_AGENT", 1, 2})


def v10_shaped(method: str, params: Any) -> bool:
    """Whether the params of a v0.3 method are v1.0-shaped (the rule of
    ``docs/protocol.md``, "v0.3 method names, v1.0 payloads"):

    - ``message/send``, ``message/stream``: the message carries none of v0.3's marks
      (a ``kind`` on the message or on a part, a ``user``/``agent`` role) and one of
      v1.0's (a ``ROLE_USER``/``ROLE_AGENT`` role, or parts, none with ``kind``);
    - ``tasks/pushNotificationConfig/set``: a ``url`` at the top of the params (a v1.0
      TaskPushNotificationConfig) and no ``pushNotificationConfig``;
    - any other method: never (its params are the same in both versions).
    """
    if method not in V10_SHAPEABLE or not isinstance(params, dict):
        return False
    if method == "tasks/pushNotificationConfig/set":
        return "url" in params and pick(params, "pushNotificationConfig") is None
    message = params.get("message")
    if not isinstance(message, dict) or "kind" in message:
        return False
    role = message.get("role")
    if role in ("user", "agent"):
        return False
    parts = message.get("parts")
    parts = parts if isinstance(parts, list) else []
    if any(isinstance(p, dict) and "kind" in p for p in parts):
        return False
    return bool(parts) or (isinstance(role, str | int) and not isinstance(role, bool) and role in V10_ROLES)


#: What only a v0.3 part has: its discriminator, and a file part's ``file`` (v1.0's are ``raw``/``url``).
V03_PART_KEYS = ("kind", "file")


def v10_parts_v03_role(method: str, params: Any) -> bool:
    """Whether a v0.3 ``message/send`` or ``message/stream`` carries v1.0's objects under
    v0.3's names (the rule of ``docs/protocol.md``, "v0.3 names, v1.0 objects", which
    pydantic's fasta2a client sends): a message with a ``user``/``agent`` role, no
    ``kind``, and parts, none with a ``kind`` or a ``file``. v0.3's schema requires
    ``kind`` on both, so no request that follows it is one of these; :func:`v10_shaped`
    requires a role that is not v0.3's, so no request is both."""
    if method not in ("message/send", "message/stream") or not isinstance(params, dict):
        return False
    message = params.get("message")
    if not isinstance(message, dict) or "kind" in message or message.get("role") not in ("user", "agent"):
        return False
    parts = message.get("parts")
    return (
        isinstance(parts, list)
        and bool(parts)
        and all(isinstance(p, dict) and not any(k in p for k in V03_PART_KEYS) for p in parts)
    )
