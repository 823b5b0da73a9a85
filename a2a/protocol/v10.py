"""A2A v1.0 JSON: ProtoJSON names (``TASK_STATE_*``, ``ROLE_*``), parts without ``kind``.

Parsing accepts the lowerCamelCase names and the proto field names (``context_id``),
as ProtoJSON parsers do, and ignores unknown fields (spec 5.5, 5.7).
"""

from __future__ import annotations

from typing import Any

from a2a.protocol import limits, model
from a2a.protocol.errors import A2AError, InvalidParamsError
from a2a.protocol.v03 import V03Dialect, check_base64, check_text, push_authentication, want_id

STATE_NAMES = {
    "submitted": "TASK_STATE_SUBMITTED",
    "working": "TASK_STATE_WORKING",
    "completed": "TASK_STATE_COMPLETED",
    "failed": "TASK_STATE_FAILED",
    "canceled": "TASK_STATE_CANCELED",
    "input-required": "TASK_STATE_INPUT_REQUIRED",
    "rejected": "TASK_STATE_REJECTED",
    "auth-required": "TASK_STATE_AUTH_REQUIRED",
    "unknown": "TASK_STATE_UNSPECIFIED",
}
STATE_FROM_NAME = {v: k for k, v in STATE_NAMES.items()}
STATE_FROM_NUMBER = dict(
    enumerate(
        [
            "unknown",
            "submitted",
            "working",
            "completed",
            "failed",
            "canceled",
            "input-required",
            "rejected",
            "auth-required",
        ]
    )
)

_PART_CONTENT = ("text", "raw", "url", "data")
_OPTIONAL_MESSAGE_KEYS = ("contextId", "taskId", "metadata", "extensions", "referenceTaskIds")
_OPTIONAL_ARTIFACT_KEYS = ("name", "description", "metadata", "extensions")


class V10Dialect(V03Dialect):
    version = "1.0"
    #: A Message's optional fields, rendered when set.
    message_keys: tuple[str, ...] = _OPTIONAL_MESSAGE_KEYS
    roles = {"ROLE_USER": "user", "ROLE_AGENT": "agent", 1: "user", 2: "agent"}
    #: ``configuration.taskPushNotificationConfig`` (also ``pushNotificationConfig``); its taskId is ignored.
    send_push_config_keys = ("taskPushNotificationConfig", "pushNotificationConfig")
    #: The rendered name of each field of a canonical (v0.3 JSON) file.
    file_fields = {"bytes": "raw", "uri": "url", "mimeType": "mediaType", "name": "filename"}

    def parse_state(self, value: Any, path: str) -> str:
        state = STATE_FROM_NAME.get(value) if isinstance(value, str) else None
        if state is None and isinstance(value, int) and not isinstance(value, bool):
            state = STATE_FROM_NUMBER.get(value)
        if state is None or state == "unknown":
            raise InvalidParamsError(
                f"unknown task state {model.shown(value)}; expected a TASK_STATE_* name", field=path
            )
        return state

    def parse_part(self, raw: Any, path: str) -> model.Part:
        raw = model.want_object(raw, path)
        present = [k for k in _PART_CONTENT if k in raw]
        if len(present) != 1:
            raise InvalidParamsError("a part needs exactly one of text, raw, url or data", field=path)
        kind = present[0]
        media_type = model.want_string(model.pick(raw, "mediaType"), f"{path}.mediaType", required=False)
        filename = model.want_string(raw.get("filename"), f"{path}.filename", required=False)
        part: model.Part
        if kind == "text":
            part = {"kind": "text", "text": check_text(raw["text"], f"{path}.text")}
        elif kind == "data":
            part = {"kind": "data", "data": raw["data"]}
        else:
            file: dict[str, Any] = (
                {"bytes": check_base64(raw["raw"], f"{path}.raw")}
                if kind == "raw"
                else {"uri": model.want_string(raw["url"], f"{path}.url", max_length=8192)}
            )
            if media_type:
                file["mimeType"] = media_type
            if filename:
                file["name"] = filename
            part = {"kind": "file", "file": file}
        if raw.get("metadata") is not None:
            part["metadata"] = model.want_object(raw["metadata"], f"{path}.metadata")
        return part

    def render_part(self, part: model.Part) -> dict[str, Any]:
        kind = part.get("kind")
        out: dict[str, Any]
        if kind == "file":
            out = self.render_file(part.get("file", {}))
        elif kind == "data":
            out = self.render_data(part.get("data"))
        else:
            out = {"text": part.get("text", "")}
        if part.get("metadata"):
            out["metadata"] = part["metadata"]
        return out

    def render_file(self, file: dict[str, Any]) -> dict[str, Any]:
        """A file part's fields (its content, then its media type and name when set),
        named as :attr:`file_fields` says."""
        content = "bytes" if "bytes" in file else "uri"
        out = {self.file_fields[content]: file.get(content, "")}
        out.update({self.file_fields[key]: file[key] for key in ("mimeType", "name") if file.get(key)})
        return out

    def render_data(self, data: Any) -> dict[str, Any]:
        return {"data": data}

    def render_state(self, state: str) -> str:
        return STATE_NAMES.get(state, "TASK_STATE_UNSPECIFIED")

    def render_role(self, role: str) -> str:
        return "ROLE_AGENT" if role == "agent" else "ROLE_USER"

    def render_message(self, message: model.Message) -> dict[str, Any]:
        out: dict[str, Any] = {
            "messageId": message.get("messageId", ""),
            "role": self.render_role(message.get("role", "")),
            self.message_parts: [self.render_part(p) for p in message.get("parts", ())],
        }
        for key in self.message_keys:
            if message.get(key):
                out[key] = message[key]
        return out

    def render_status(self, status: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.render_state(status.get("state", "unknown"))}
        if status.get("message"):
            out["message"] = self.render_message(status["message"])
        if status.get("timestamp"):
            out["timestamp"] = status["timestamp"]
        return out

    def render_stream_item(self, item: model.StreamItem) -> dict[str, Any]:
        """One StreamResponse: exactly one of task, message, statusUpdate, artifactUpdate."""
        if item.kind == "message":
            assert item.message is not None
            return {"message": model.with_item_metadata(self.render_message(item.message), item)}
        task = item.task
        assert task is not None
        if item.kind == "task":
            return {"task": model.with_item_metadata(self.render_task(task), item)}
        ids = {"taskId": task["id"], "contextId": task.get("contextId", "")}
        if item.kind == "artifact":
            assert item.artifact is not None
            update = {
                **ids,
                "artifact": self._render_artifact(item.artifact),
                "append": item.append,
                "lastChunk": item.last_chunk,
            }
            return {"artifactUpdate": model.with_item_metadata(update, item)}
        status = {**ids, "status": self.render_status(task.get("status") or {})}
        return {"statusUpdate": model.with_item_metadata(status, item)}

    def render_task(self, task: model.Task, history_length: int | None = None) -> dict[str, Any]:
        task = model.with_history(task, history_length)
        out: dict[str, Any] = {
            "id": task["id"],
            "contextId": task.get("contextId", ""),
            "status": self.render_status(task.get("status") or {}),
        }
        if task.get("artifacts"):
            out["artifacts"] = [self._render_artifact(a) for a in task["artifacts"]]
        if task.get("history"):
            out["history"] = [self.render_message(m) for m in task["history"]]
        if task.get("metadata"):
            out["metadata"] = task["metadata"]
        return out

    def _render_artifact(self, artifact: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "artifactId": artifact.get("artifactId", ""),
            "parts": [self.render_part(p) for p in artifact.get("parts", ())],
        }
        for key in _OPTIONAL_ARTIFACT_KEYS:
            if artifact.get(key):
                out[key] = artifact[key]
        return out

    def parse_send(self, params: Any) -> model.SendParams:
        """v0.3's, with A2A 1.1's ``configuration.ifGenerationMatch`` (same package, additive)."""
        parsed = super().parse_send(params)
        config = params.get("configuration")
        if isinstance(config, dict):
            parsed.if_generation_match = model.want_int(
                model.pick(config, "ifGenerationMatch"),
                "configuration.ifGenerationMatch",
                minimum=0,
                maximum=model.INT64_MAX,
            )
        return parsed

    def parse_get(self, params: Any) -> model.GetParams:
        """v0.3's, with A2A 1.1's ``currentGeneration`` (a GetTask long-poll)."""
        parsed = super().parse_get(params)
        parsed.current_generation = model.want_int(
            model.pick(params, "currentGeneration"), "currentGeneration", minimum=0, maximum=model.INT64_MAX
        )
        return parsed

    def parse_blocking(self, config: dict[str, Any], *, given: bool = True) -> bool:
        # v1.0: "returnImmediately": false (the default) means wait.
        return not model.want_bool(model.pick(config, "returnImmediately"), "configuration.returnImmediately")

    def render_send_result(self, result: model.Task | model.Message) -> dict[str, Any]:
        if result.get("kind") == "message":
            return {"message": self.render_message(result)}
        return {"task": self.render_task(result)}

    def render_error(self, error: A2AError) -> dict[str, Any]:
        info: dict[str, Any] = {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": error.reason,
            "domain": "a2a-protocol.org",
        }
        if error.metadata:
            info["metadata"] = {k: str(v) for k, v in error.metadata.items()}
        data: list[dict[str, Any]] = [info]
        field = getattr(error, "field", None)
        if field:
            data.append(
                {
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [{"field": field, "description": error.description}],  # type: ignore[attr-defined]
                }
            )
        return {"code": error.code, "message": error.message, "data": data}

    # --- push notification configs -------------------------------------------------

    def parse_push_authentication(self, raw: Any, path: str) -> dict[str, Any] | None:
        """AuthenticationInfo ``{scheme, credentials?}`` (a v0.3 ``schemes`` list is taken too)."""
        if raw is None:
            return None
        raw = model.want_object(raw, path)
        if raw.get("scheme") is None and isinstance(raw.get("schemes"), list):
            return push_authentication(raw["schemes"], raw.get("credentials"), path, schemes_field=f"{path}.schemes")
        scheme = model.want_string(raw.get("scheme"), f"{path}.scheme", max_length=255)
        return push_authentication([scheme], raw.get("credentials"), path, schemes_field=f"{path}.scheme")

    def _push_task_id(self, params: dict[str, Any]) -> str:
        task_id = want_id(model.pick(params, "taskId"), "taskId")
        assert task_id is not None
        return task_id

    def parse_push_create(self, params: Any) -> model.PushConfigParams:
        """A TaskPushNotificationConfig: ``{taskId, id?, url, token?, authentication?}``."""
        params = model.want_object(params, "params")
        return self.parse_push_config(params, "", task_id=self._push_task_id(params))

    def parse_push_get(self, params: Any) -> model.PushConfigRef:
        """``{taskId, id}``: ``id`` is the config's."""
        params = model.want_object(params, "params")
        return model.PushConfigRef(
            task_id=self._push_task_id(params), id=self.parse_push_config_id(params, "id", required=True)
        )

    def parse_push_list(self, params: Any) -> model.PushConfigListParams:
        params = model.want_object(params, "params")
        page_size = model.want_int(model.pick(params, "pageSize"), "pageSize", minimum=0)
        return model.PushConfigListParams(
            task_id=self._push_task_id(params),
            page_size=min(page_size, limits.max_page_size()) if page_size else None,
            page_token=model.want_string(model.pick(params, "pageToken"), "pageToken", required=False, max_length=4096)
            or None,
        )

    def parse_push_delete(self, params: Any) -> model.PushConfigRef:
        return self.parse_push_get(params)

    def render_push_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """A TaskPushNotificationConfig: ``{id, taskId, url, token?, authentication?}``."""
        out: dict[str, Any] = {"id": config["id"], "taskId": config["taskId"], "url": config["url"]}
        if config.get("token"):
            out["token"] = config["token"]
        auth = config.get("authentication")
        if auth:
            schemes = auth.get("schemes") or [""]
            out["authentication"] = {
                "scheme": schemes[0],
                **({"credentials": auth["credentials"]} if auth.get("credentials") else {}),
            }
        return out

    def render_push_list(self, configs: list[dict[str, Any]], next_page_token: str) -> Any:
        return {"configs": [self.render_push_config(c) for c in configs], "nextPageToken": next_page_token}


class V10ObjectsV03Names(V10Dialect):
    """v1.0's objects under v0.3's names, as pydantic's fasta2a client (2.x) speaks:
    parts without ``kind``, a send's result wrapped (``{"task"}`` / ``{"message"}``),
    stream events as StreamResponses, but the roles (``user``, ``agent``), the task
    states (``completed``, ``input-required``), ``configuration.blocking`` and the
    plain JSON-RPC errors of v0.3. Chosen by :func:`a2a.protocol.dialect_for` for the
    requests :func:`a2a.protocol.v03.v10_parts_v03_role` recognizes, never by a version."""

    roles = V03Dialect.roles
    parse_state = V03Dialect.parse_state
    render_state = V03Dialect.render_state
    render_role = V03Dialect.render_role
    parse_blocking = V03Dialect.parse_blocking
    render_error = V03Dialect.render_error
