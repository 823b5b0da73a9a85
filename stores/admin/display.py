"""How the admin shows a task: its parts, messages and artifacts as a person reads them
(:func:`task_sections`), the list's preview column (:func:`task_preview`), the state
badge and the times (:func:`format_when`, :func:`relative_time`)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import IO, Any, Protocol

from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator
from django.utils.timesince import timesince, timeuntil

from stores.base import STATES, Task
from stores.fields import joined_parts, task_binding, task_updated, without_event_log
from stores.retention import Policy, kept
from stores.scope import agent_name
from stores.timeline import Step, in_order
from stores.timestamps import parse_timestamp

#: Builds the URL that downloads an inline (base64) file part: (section, item, part) -> URL.
DownloadURL = Callable[[str, int, int], str]


def pretty_json(value: Any) -> str:
    """``value`` as indented JSON (anything not JSON-ready shown by its ``str``)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def parts_text(parts: Any) -> str:
    """The readable text of a message's or artifact's parts, one line each of
    :func:`~stores.fields.joined_parts`: text as it is, data as JSON, a file as
    ``[file name (type)]``."""
    lines = []
    for _, part in joined_parts(parts):
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            lines.append(part["text"])
        elif "data" in part:
            lines.append(pretty_json(part["data"]))
        elif isinstance(part.get("file"), dict):
            file = part["file"]
            name = file.get("name") or file.get("uri") or "unnamed"
            lines.append(f"[file {name}" + (f" ({file['mimeType']})]" if file.get("mimeType") else "]"))
        else:
            lines.append(pretty_json(part))
    return "\n".join(lines)


class StoredFiles(Protocol):
    """File parts kept in a storage rather than inline (the ``a2a`` app's offloaded parts):
    which parts they are, and their content, for the admin's download links. ``open``
    reads only a file of the task ``task_id`` the part is in (FileNotFoundError else)."""

    def holds(self, part: dict[str, Any]) -> bool: ...

    def open(self, task_id: str, part: dict[str, Any]) -> IO[bytes]: ...


#: The registered :class:`StoredFiles` (at most one: :func:`register_stored_files`).
STORED_FILES: list[StoredFiles] = []


def register_stored_files(files: StoredFiles) -> None:
    """Let the admin download the file parts ``files`` holds (the stores never import the app that keeps them)."""
    STORED_FILES[:] = [files]


def stored_files(part: Any) -> StoredFiles | None:
    """The :class:`StoredFiles` holding ``part``, or None (an inline part, a foreign URL)."""
    return next((files for files in STORED_FILES if isinstance(part, dict) and files.holds(part)), None)


def render_part(part: Any, download: str = "") -> dict[str, Any]:
    """One part as the detail page shows it: ``{"kind": "text", "text"}``, ``{"kind":
    "data", "json"}`` or ``{"kind": "file", "name", "mime", "href", "size"}``. Only
    http(s) URIs become links; inline bytes and stored files link to ``download``."""
    if not isinstance(part, dict):
        return {"kind": "other", "json": pretty_json(part)}
    if isinstance(part.get("text"), str):
        return {"kind": "text", "text": part["text"]}
    if "data" in part:
        return {"kind": "data", "json": pretty_json(part["data"])}
    file = part.get("file")
    if isinstance(file, dict):
        uri: str = file["uri"] if isinstance(file.get("uri"), str) else ""
        inline = isinstance(file.get("bytes"), str)
        if inline or stored_files(part) is not None:  # the admin's own download link
            href = download
        else:
            href = uri if uri.lower().startswith(("http://", "https://")) else ""
        return {
            "kind": "file",
            "name": file.get("name") or (uri.rsplit("/", 1)[-1] if uri else "") or "file",
            "mime": file.get("mimeType") or "",
            "href": href,
            "uri": uri,
            "size": len(file["bytes"]) * 3 // 4 if inline else None,
        }
    return {"kind": "other", "json": pretty_json(part)}


def _entry(item: Any, *title_keys: str, download: Callable[[int], str] | None = None) -> dict[str, Any]:
    item_dict = item if isinstance(item, dict) else {}
    title = " · ".join(str(item_dict[k]) for k in title_keys if item_dict.get(k))
    parts: list[Any] = item_dict["parts"] if isinstance(item_dict.get("parts"), list) else []
    return {
        "title": title,
        "role": item_dict.get("role") if item_dict.get("role") in ("user", "agent") else "",
        "name": item_dict.get("name") or "",
        "description": item_dict.get("description") or "",
        "text": parts_text(parts),
        "parts": [render_part(p, download(j) if download else "") for j, p in joined_parts(parts)],
        "json": pretty_json(item),
    }


def _in_order(
    ordered: list[Step], replies: dict[int, dict[str, Any]], links: Callable[[str, int], Callable[[int], str] | None]
) -> tuple[list[dict[str, Any]], set[Any]]:
    """The conversation read from a timeline (:func:`~stores.timeline.in_order`): its
    messages each once, the artifacts in place; and the ids of the messages shown."""
    conversation: list[dict[str, Any]] = []
    shown: set[Any] = set()
    for kind, i, item in ordered:
        said = item if kind == "message" else item.get("message")
        if kind == "artifact":
            conversation += [replies[i]] if i in replies else []
        elif isinstance(said, dict) and not (said.get("messageId") and said["messageId"] in shown):
            shown.add(said.get("messageId"))
            conversation.append(_entry(said, "role", "messageId", download=links("timeline", i)))
    return conversation, shown


def task_sections(task: Task, download: DownloadURL | None = None) -> dict[str, Any]:
    """What the detail pages show of ``task``: its status message, artifacts and history
    as entries (a title, the role, who speaks, the parts rendered one by one, the item's
    JSON), the conversation (its timeline in order, artifacts in place, or for a task kept
    without one the history, then the artifacts; then the status message when not yet
    shown, as the agent's replies), and its
    metadata and whole self as pretty JSON. ``download`` makes the links of inline file
    parts."""
    status: dict[str, Any] = task["status"] if isinstance(task.get("status"), dict) else {}
    artifacts, history = task.get("artifacts"), task.get("history")
    message = status.get("message")

    def links(section: str, i: int) -> Callable[[int], str] | None:
        return (lambda j: download(section, i, j)) if download else None

    said = [_entry(m, "role", "messageId", download=links("history", i)) for i, m in enumerate(history or []) if m]
    replies = {
        i: {
            **_entry(a, "name", "description", "artifactId", download=links("artifacts", i)),
            "role": "agent",
            "artifact": True,
        }
        for i, a in enumerate(artifacts or [])
        if a
    }
    status_entries = [_entry(message, "role", "messageId", download=links("status", 0))] if message else []
    ordered = in_order(task)
    if ordered is None:  # kept without a timeline: the history, the artifacts, then the status
        conversation = [*said, *replies.values()]
        shown = {m.get("messageId") for m in history or [] if isinstance(m, dict)}
    else:
        conversation, shown = _in_order(ordered, replies, links)
    repeated = isinstance(message, dict) and message.get("messageId") in shown
    conversation += [] if repeated else status_entries
    agent = agent_name(task)
    for entry in conversation:
        entry["speaker"] = agent if entry["role"] == "agent" else entry["role"]
    return {
        "agent": agent,
        "binding": task_binding(task),
        "message": status_entries,
        "artifacts": list(replies.values()),
        "history": said,
        "conversation": conversation,
        "metadata": pretty_json(task["metadata"]) if task.get("metadata") else "",
        "task_json": pretty_json(without_event_log(task)),
    }


def render_entries(entries: list[dict[str, str]], empty: str = "None") -> SafeString:
    """Entries of :func:`task_sections` as HTML (the read-only fields of the ORM's detail)."""
    return mark_safe(render_to_string("admin/stores/task_entries.html", {"entries": entries, "empty": empty}))


def format_when(when: dt.datetime | None) -> str:
    """A time in the current time zone, to the millisecond (tasks change within a second)."""
    return timezone.localtime(when).isoformat(sep=" ", timespec="milliseconds") if when else "-"


def task_when(task: Task) -> dt.datetime | None:
    """When the task last changed (its status timestamp), None when it has none readable."""
    try:
        return parse_timestamp(task_updated(task))
    except ValueError:
        return None


def updated_text(task: Task) -> str:
    """The task's status timestamp as :func:`format_when` shows it, else as it is."""
    when = task_when(task)
    return format_when(when) if when else task_updated(task) or "-"


#: Ids longer than this many characters are shown cut to :data:`SHORT_ID` (a UUID to its first 8).
LONG_ID = 12
SHORT_ID = 8


def short_id(value: str) -> str:
    """``value`` whole when short, else its first :data:`SHORT_ID` characters and "…"
    (a UUID's first 8 hex digits, as git shortens a hash)."""
    return value if len(value) <= LONG_ID else value[:SHORT_ID] + "…"


def id_html(value: str) -> SafeString:
    """An id in the list: :func:`short_id`, on one line, the whole id as its tooltip."""
    return format_html('<span class="task-id" title="{}">{}</span>', value, short_id(value))


def context_html(context_id: str, href: str) -> SafeString:
    """A task's context in the list: :func:`id_html`, a link to that context's tasks."""
    if not context_id:
        return mark_safe("-")
    return format_html('<a href="{}">{}</a>', href, id_html(context_id))


def state_badge(state: str) -> SafeString:
    """The state as a coloured badge (colours in admin/stores/task_styles.html)."""
    return format_html(
        '<span class="task-state task-state-{}">{}</span>', state if state in STATES else "unknown", state
    )


def relative_time(when: dt.datetime | None) -> SafeString:
    """``3 hours ago``, with the exact time as a tooltip and machine-readable attribute."""
    if when is None:
        return mark_safe("-")
    seconds = (timezone.now() - when).total_seconds()
    if seconds < 60:
        text = "just now" if seconds < 5 else f"{int(seconds)} seconds ago"
    else:
        text = f"{timesince(when, depth=1)} ago"
    return format_html('<time datetime="{}" title="{}">{}</time>', when.isoformat(), format_when(when), text)


def expires_html(task: Task, policy: Policy) -> SafeString:
    """When the task expires under ``policy`` (``in 29 days``; ``due`` once past: the next
    sweep deletes it unless its context keeps it), ``kept`` or ``never``."""
    if kept(task):
        return mark_safe('<span title="Kept by staff: it never expires">kept</span>')
    when = policy.expires(task)
    if when is None:
        return mark_safe('<span title="A2A_RETENTION keeps tasks in this state forever">never</span>')
    seconds = (when - timezone.now()).total_seconds()
    text = f"in {timeuntil(when, depth=1)}" if seconds >= 60 else "due"
    title = f"{format_when(when)}, or later while its context has a task that has not expired"
    return format_html('<time datetime="{}" title="{}">{}</time>', when.isoformat(), title, text)


def _message_text(message: Any) -> str:
    return parts_text(message.get("parts")) if isinstance(message, dict) else ""


def task_preview(task: Task, size: int = 80) -> dict[str, Any]:
    """What the list shows of a task: its first user message and last agent text
    (both cut to ``size`` characters, the whole as a tooltip) and how many artifacts it has."""
    history = [m for m in task.get("history") or [] if isinstance(m, dict)]
    status = task.get("status") if isinstance(task.get("status"), dict) else {}
    messages = [*history, status.get("message")] if isinstance(status, dict) else history
    asks = [_message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    answers = [_message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "agent"]
    ask = next((t for t in asks if t.strip()), "")
    answer = next((t for t in reversed(answers) if t.strip()), "")
    artifacts = task.get("artifacts")

    def cut(text: str) -> str:
        return Truncator(" ".join(text.split())).chars(size)

    return {
        "ask": cut(ask),
        "ask_full": ask[:2000],
        "answer": cut(answer),
        "answer_full": answer[:2000],
        "artifacts": len(artifacts) if isinstance(artifacts, list) else 0,
    }


def preview_html(task: Task) -> SafeString:
    """The list's preview column of ``task`` (:func:`task_preview` in its template)."""
    return mark_safe(render_to_string("admin/stores/task_preview.html", task_preview(task)))
